"""A long history's checks in two processes (ftharness.scenarios.forked_checks) say what one process says.

The fork is forced here on short histories (FORK_FROM 0): every plan's results,
damaged or not, must equal those of one process; a child that dies, sends
garbage or is refused leaves its checks to the parent, with the same results;
and the child is gone when run_checks returns, also when the parent fails."""

import os
import pickle
import random

import pytest

from ftharness.history.model import History
from ftharness.scenarios import forked_checks
from ftharness.scenarios.properties import CHECKS, run_checks
from ftharness.scenarios.synthetic import generate
from test_checks_scale import plans
from test_scale_paths import damage, judged

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork, 2 CPUs")


@pytest.fixture
def forking(monkeypatch):
    monkeypatch.setattr(forked_checks, "FORK_FROM", 0)
    forks = []
    real = forked_checks.start
    monkeypatch.setattr(forked_checks, "start", lambda run: forks.append(1) or real(run))
    return forks


def _cases(n, seed):
    rng = random.Random(seed)
    for i, plan in enumerate(plans(n, seed=seed)):
        syn = generate(plan)
        if i % 2:
            damage(syn.events, rng)
        yield syn.events, syn.context


def test_checks_in_two_processes_say_what_one_says(forking, monkeypatch):
    cases = list(_cases(30, seed=23))
    two = [judged(events, context) for events, context in cases]
    assert len(forking) == len(cases)   # each judged with a child
    monkeypatch.setenv("FTHARNESS_CHECK_SPLIT", "0")
    one = [judged(events, context) for events, context in cases]
    assert len(forking) == len(cases)   # (no more forks)
    assert two == one


def _results(events, context):
    return {name: (r.status, r.explanation, r.findings, r.violations, r.standing)
            for name, r in run_checks(History(list(events)), context).items()}


@pytest.mark.parametrize("how", ["dies", "garbage", "not_a_result", "refused"])
def test_a_child_that_sends_nothing_leaves_its_checks_to_the_parent(forking, monkeypatch, how):
    events, context = next(_cases(1, seed=3))
    monkeypatch.setenv("FTHARNESS_CHECK_SPLIT", "0")
    want = _results(events, context)
    monkeypatch.delenv("FTHARNESS_CHECK_SPLIT")
    parent, real = os.getpid(), CHECKS["shard_reassignment"]

    def check(h, ctx):
        if os.getpid() != parent:   # in the child
            if how == "dies":
                os._exit(3)
        return real(h, ctx)   # "garbage" and "not_a_result": the child judges, then sends what is patched below

    monkeypatch.setitem(CHECKS, "shard_reassignment", check)
    if how == "garbage":
        monkeypatch.setattr(forked_checks.pickle, "dumps", lambda *a, **k: b"not a pickle")
    if how == "not_a_result":   # (pickle.dumps is patched: the payload is made with the real one)
        payload = pickle.dumps({"results": {"shard_reassignment": "PASS"}})
        monkeypatch.setattr(forked_checks.pickle, "dumps", lambda obj, **k: payload)
    if how == "refused":
        monkeypatch.setattr(forked_checks.os, "fork", lambda: (_ for _ in ()).throw(OSError("no")))
    read, real_loads = [], pickle.loads

    def loads(data, **k):
        read.append(data)
        return real_loads(data, **k)

    monkeypatch.setattr(forked_checks.pickle, "loads", loads)
    assert _results(events, context) == want
    # the child of "garbage" and "not_a_result" did send (so the parent refused what it read)
    assert bool(read) == (how in ("garbage", "not_a_result")), read


def test_the_child_is_gone_when_the_parent_fails(forking, monkeypatch):
    events, context = next(_cases(1, seed=4))
    children = []
    real_start = forked_checks.Pending.__init__

    def remember(self, pid, fd):
        children.append(pid)
        real_start(self, pid, fd)

    monkeypatch.setattr(forked_checks.Pending, "__init__", remember)
    monkeypatch.setitem(CHECKS, "exactly_once_restore", lambda h, ctx: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run_checks(History(list(events)), context)
    assert children
    for pid in children:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)   # reaped: no such child any more


def test_short_histories_and_threaded_processes_stay_in_one():
    import threading

    assert not forked_checks.can_fork(forked_checks.FORK_FROM - 1)
    assert forked_checks.can_fork(forked_checks.FORK_FROM)
    assert forked_checks.split_names(["shard_reassignment"], 10 ** 9) == []   # nothing to run beside it
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:   # another thread: a fork would copy one of them
        assert not forked_checks.can_fork(10 ** 9)
    finally:
        stop.set()
        t.join()
