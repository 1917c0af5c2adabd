"""ftharness installed into another project from a built wheel: the wheel is built from this
checkout, installed into a clean virtualenv outside it, and `validate`, `check` and `doctor`
run there on a user's own chaos/ folder (a scenario and a job of two modules).

To stay quick and offline the virtualenv reuses the Ray, torch and pandas already installed
beside this interpreter (a .pth file adding that site-packages folder, as
`--system-site-packages` would for a system Python); ftharness itself comes from the wheel
alone (`pip install --no-deps --no-index`), never from this checkout."""

import glob
import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.full]


def run(*args, cwd, timeout=600, env=None):
    r = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return r


def test_the_wheel_installs_into_another_project_and_its_commands_run(tmp_path):
    dist = tmp_path / "dist"
    r = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), REPO,   # isolated build: pip's index
            cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = glob.glob(str(dist / "ftharness-*.whl"))
    assert len(wheel) == 1, os.listdir(dist)

    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", str(venv), cwd=str(tmp_path)).returncode == 0
    py = str(venv / "bin" / "python")
    site = run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=str(tmp_path)).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]          # where this interpreter's ray and torch are
    with open(os.path.join(site, "zz-reuse.pth"), "w") as f:
        f.write(f"import site; site.addsitedir({deps!r})\n")
    r = run(py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel[0], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]

    project = tmp_path / "user-repo"
    (project / "chaos").mkdir(parents=True)
    (project / "chaos" / "job.py").write_text(textwrap.dedent("""\
        from model_utils import make_model

        def train_func(config):
            import ray.train
            model = make_model()
            for step in range(config.get("steps", 4)):
                ray.train.report({"step": step + 1, "n": sum(p.numel() for p in model.parameters())})
        """))
    (project / "chaos" / "model_utils.py").write_text("import torch\n\ndef make_model():\n"
                                                     "    return torch.nn.Linear(4, 1)\n")
    (project / "chaos" / "kill-worker.yaml").write_text(textwrap.dedent("""\
        name: my-job-kill-worker
        workload: {entrypoint: "job:train_func", num_workers: 2, train_loop_config: {steps: 6}}
        failure_config: {max_failures: 1}
        faults:
          - {kind: kill_worker, target: {rank: 1}, at: {step: 3}}
        """))
    ftharness = str(venv / "bin" / "ftharness")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = run(py, "-c", "import ftharness; print(ftharness.__file__)", cwd=str(project), env=env)
    assert where.stdout.strip().startswith(site), where.stdout + where.stderr     # the wheel's, not the checkout's

    r = run(ftharness, "validate", "chaos", cwd=str(project), env=env)
    assert r.returncode == 0 and "ok chaos/kill-worker.yaml" in r.stdout, r.stdout + r.stderr[-2000:]
    r = run(ftharness, "check", os.path.join(REPO, "tests", "data", "kill-worker"), cwd=str(project), env=env)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr[-2000:]
    r = run(ftharness, "doctor", "chaos", cwd=str(project), env=env)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stdout + r.stderr[-2000:]
    assert "job.py" in r.stdout or "no finding" in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
    r = run(ftharness, "list", cwd=str(project), env=env)    # the built-in catalog ships in the wheel
    assert r.returncode == 0 and "kill-worker" in r.stdout, r.stdout + r.stderr[-2000:]
