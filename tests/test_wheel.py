"""ftharness installed into another project from a built wheel (docs/ci.md): the wheel is built
from a copy of this checkout's files (what a clean clone holds: tracked and not-ignored files),
installed into a clean virtualenv outside it, and every command that reads package data runs
there: `list known` (the corpus and its measurements), `bisect --help`, the Chaos Toolkit
example's validation (`ftharness validate` of the experiment, and `chaos validate` when Chaos
Toolkit is installed), `schema`, `init` in a temporary repository, `validate`, `check`, `doctor`
and `list` on a user's own chaos/ folder. Every file tracked under the package folders is
checked to be in the wheel, and the wheel's name against the pattern docs/ci.md gives.

To stay quick and offline the virtualenv reuses the Ray, torch and pandas already installed
beside this interpreter (a .pth file adding that site-packages folder, as
`--system-site-packages` would for a system Python); ftharness itself comes from the wheel
alone (`pip install --no-deps --no-index`), never from this checkout. The build uses this
interpreter's setuptools (`--no-build-isolation`: no index needed), in the copy, so the checkout
gets no build/ folder. About 30 s: the pure lane runs it."""

import fnmatch
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
import zipfile

import pytest

from conftest import REPO

#: the folders pyproject.toml installs under `ftharness` (tool.setuptools.package-dir)
PACKAGE_FOLDERS = {"ftharness": "ftharness", "history": "ftharness/history", "faults": "ftharness/faults",
                   "scenarios": "ftharness/scenarios", "harness": "ftharness/harness", "reports": "ftharness/reports"}
#: files under them that are not package data: the modules (installed as modules)
NOT_DATA = ("*.py",)


def run(*args, cwd, timeout=300, env=None):
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def checkout_files():
    """What a clean clone of this checkout holds (tracked files, and new files not ignored)."""
    r = run("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", cwd=REPO)
    if r.returncode != 0:
        pytest.skip("not a git checkout: the wheel test builds what a clone holds")
    return [p for p in r.stdout.split("\0") if p and os.path.isfile(os.path.join(REPO, p))]


def package_data(files):
    """(path in the checkout, path in the wheel) of every data file under the package folders."""
    out = []
    for p in files:
        top, _, rest = p.partition("/")
        if top in PACKAGE_FOLDERS and rest and not any(fnmatch.fnmatch(os.path.basename(p), g) for g in NOT_DATA):
            out.append((p, f"{PACKAGE_FOLDERS[top]}/{rest}"))
    # the repro scripts of the corpus are data too (a folder of scripts, no package)
    out += [(p, f"ftharness/{p}") for p in files if p.startswith("scenarios/known/repro/") and p.endswith(".py")]
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, venv python, ftharness script, env, timings) for the module's tests."""
    tmp = tmp_path_factory.mktemp("wheel")
    timings = {}
    files = checkout_files()
    src = tmp / "src"
    for p in files:
        os.makedirs(src / os.path.dirname(p), exist_ok=True)
        shutil.copy2(os.path.join(REPO, p), src / p)
    dist = tmp / "dist"
    t = time.time()
    r = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(src),
            cwd=str(tmp))
    assert r.returncode == 0, r.stderr[-2000:]
    timings["build"] = time.time() - t
    wheel = glob.glob(str(dist / "ftharness-*.whl"))
    assert len(wheel) == 1, os.listdir(dist)

    t = time.time()
    venv = tmp / "venv"
    r = run(sys.executable, "-m", "venv", "--without-pip", str(venv), cwd=str(tmp))
    assert r.returncode == 0, r.stderr
    py = str(venv / "bin" / "python")
    site = run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=str(tmp)).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]          # where this interpreter's ray and torch are
    with open(os.path.join(site, "zz-reuse.pth"), "w") as f:
        f.write(f"import site; site.addsitedir({deps!r})\n")
    r = run(sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-index", wheel[0],
            cwd=str(tmp))
    if r.returncode != 0 and "--python" in r.stderr:   # a pip before 22.3: the venv's own pip
        run(py, "-m", "ensurepip", "-q", cwd=str(tmp))
        r = run(py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel[0], cwd=str(tmp))
    assert r.returncode == 0, r.stderr[-2000:]
    timings["install"] = time.time() - t
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    yield {"wheel": wheel[0], "py": py, "site": site, "ftharness": str(venv / "bin" / "ftharness"), "env": env,
           "tmp": tmp, "files": files, "timings": timings}


def test_every_data_file_under_the_package_folders_is_in_the_wheel(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    data = package_data(installed["files"])
    missing = [checkout for checkout, in_wheel in data if in_wheel not in names]
    assert not missing, f"in the checkout but not in the wheel (pyproject.toml package-data): {missing}"
    for must in ("ftharness/scenarios/known_bugs.yaml", "ftharness/scenarios/known/measured.json",
                 "ftharness/scenarios/chaostoolkit/preempt-and-kill.yaml", "ftharness/scenarios/scenario.schema.json",
                 "ftharness/reports/templates/report.html.j2"):
        assert must in names, must
    print("package data in the wheel:\n  " + "\n  ".join(sorted(w for _, w in data)))


def test_the_wheel_is_named_as_the_docs_say(installed):
    """docs/ci.md names the wheel by a pattern; the build's name matches it (the compiled reader,
    history/_linescan.c, makes a platform wheel where a compiler is at hand, a pure one otherwise)."""
    name = os.path.basename(installed["wheel"])
    ci = open(os.path.join(REPO, "docs", "ci.md")).read()
    shown = re.findall(r"pip install (?:\S*/)?(ftharness-\S+\.whl)", ci)
    assert shown, "docs/ci.md shows no wheel to install"
    for pattern in shown:
        assert fnmatch.fnmatch(name, pattern), (name, pattern)


def test_commands_that_read_package_data_run_from_the_wheel(installed, tmp_path):
    ft, env, py = installed["ftharness"], installed["env"], installed["py"]
    where = run(py, "-c", "import ftharness; print(ftharness.__file__)", cwd=str(tmp_path), env=env)
    assert where.stdout.strip().startswith(installed["site"]), where.stdout + where.stderr  # the wheel's, not the checkout's
    pkg = os.path.dirname(where.stdout.strip())

    r = run(ft, "list", "known", cwd=str(tmp_path), env=env)
    assert r.returncode == 0 and "known on Ray" in r.stdout, r.stdout + r.stderr[-2000:]
    print(r.stdout.splitlines()[0])
    r = run(ft, "bisect", "--help", cwd=str(tmp_path), env=env)
    assert r.returncode == 0 and "scenario" in r.stdout, r.stdout + r.stderr[-2000:]
    known = sorted(glob.glob(os.path.join(pkg, "scenarios", "known", "*.yaml")))
    assert known, "no corpus scenario in the wheel"
    r = run(ft, "validate", *known, cwd=str(tmp_path), env=env)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]

    experiment = os.path.join(pkg, "scenarios", "chaostoolkit", "preempt-and-kill.yaml")
    r = run(ft, "validate", experiment, cwd=str(tmp_path), env=env)
    assert r.returncode == 0 and "experiment" in r.stdout, r.stdout + r.stderr[-2000:]
    chaos = shutil.which("chaos", path=os.path.dirname(sys.executable))
    if chaos:   # Chaos Toolkit's own validation, through the wheel's control and actions
        r = run(py, chaos, "validate", experiment, cwd=str(tmp_path), env=env, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]

    r = run(ft, "schema", cwd=str(tmp_path), env=env)
    assert r.returncode == 0 and '"$schema"' in r.stdout, r.stderr[-2000:]

    repo = tmp_path / "new-repo"
    (repo / "chaos").mkdir(parents=True)
    (repo / "chaos" / "job.py").write_text("def train_func(config):\n    pass\n")
    r = run(ft, "init", "--train", "job:train_func", cwd=str(repo), env=env)
    assert r.returncode == 0 and "wrote chaos/kill-worker.yaml" in r.stdout, r.stdout + r.stderr[-2000:]
    r = run(ft, "validate", "chaos", cwd=str(repo), env=env)
    assert r.returncode == 0 and "ok chaos/kill-worker.yaml" in r.stdout, r.stdout + r.stderr[-2000:]


def test_a_users_chaos_folder_is_checked_by_the_wheel(installed, tmp_path):
    ft, env = installed["ftharness"], installed["env"]
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
    r = run(ft, "validate", "chaos", cwd=str(project), env=env)
    assert r.returncode == 0 and "ok chaos/kill-worker.yaml" in r.stdout, r.stdout + r.stderr[-2000:]
    r = run(ft, "check", os.path.join(REPO, "tests", "data", "kill-worker"), cwd=str(project), env=env)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr[-2000:]
    r = run(ft, "check", os.path.join(REPO, "tests", "data", "broken-job", "run"), cwd=str(project), env=env)
    assert r.returncode == 3 and "the job cannot train" in r.stdout, r.stdout + r.stderr[-2000:]
    r = run(ft, "doctor", "chaos", cwd=str(project), env=env)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stdout + r.stderr[-2000:]
    r = run(ft, "list", cwd=str(project), env=env)    # the built-in catalog ships in the wheel
    assert r.returncode == 0 and "kill-worker" in r.stdout, r.stdout + r.stderr[-2000:]
    print(f"wheel: built in {installed['timings']['build']:.1f} s, installed in {installed['timings']['install']:.1f} s")
