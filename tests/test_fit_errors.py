"""What a failed fit() raised (harness/run/fit_errors.py): the constructor's exception read from
Ray's ActorDiedError text, and the text kept head and tail. Pure."""

from ftharness.harness.run.fit_errors import CREATION_FAILED, constructor_error, error_text

#: the shape of Ray 2.54's error when the Train controller's constructor raised (ANSI codes and all;
#: recorded by scenarios/known/resume-missing-checkpoint.yaml, shortened)
RAY_2_54 = (
    f"{CREATION_FAILED}, \x1b[36mray::TrainController.__init__()\x1b[39m (pid=21298, ip=192.0.2.2)\n"
    '  File "/env/ray/train/v2/_internal/execution/checkpoint/checkpoint_manager.py", line 409, in '
    "_assert_checkpoints_exist\n"
    "    raise CheckpointManagerInitializationError(\n"
    "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "TypeError: CheckpointManagerInitializationError() takes no keyword arguments")
RAY_2_60 = (
    f"{CREATION_FAILED}, ray::TrainController.__init__() (pid=5, ip=192.0.2.2)\n"
    '  File "/env/ray/train/v2/_internal/execution/checkpoint/checkpoint_manager.py", line 523, in '
    "_assert_checkpoints_exist\n"
    "    raise CheckpointManagerInitializationError(\n"
    "ray.train.v2._internal.exceptions.CheckpointManagerInitializationError: The run snapshot contains a "
    "reference to a checkpoint that does not exist anymore (Checkpoint(path=/s/checkpoint_1)).\n"
    "Note: a line of the message that looks like an exception")


def test_the_constructor_s_exception_is_the_traceback_s_last_line():
    assert constructor_error(RAY_2_54) == "TypeError"
    assert constructor_error(RAY_2_60) == "CheckpointManagerInitializationError"


def test_only_an_actor_that_died_in_its_constructor_has_one():
    assert constructor_error("The actor died unexpectedly before finishing this task.\n\tpid: 4\n") is None
    assert constructor_error("Traceback:\n  File x\nValueError: bad") is None   # not Ray's creation-task text
    assert constructor_error(None) is None
    assert constructor_error(f"{CREATION_FAILED}, no traceback at all") is None


def test_a_long_error_keeps_its_head_and_its_tail():
    long = RAY_2_60.replace("  File", "  File" + " x" * 5000, 1)
    kept = error_text(Exception(long), limit=600)
    assert len(kept) <= 600
    assert kept.startswith(CREATION_FAILED) and kept.endswith("looks like an exception")
    assert constructor_error(kept) == "CheckpointManagerInitializationError"
    assert error_text(Exception("short")) == "short"
