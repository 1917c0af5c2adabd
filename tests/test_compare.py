"""`compare` that counts honestly, and `suite --repeat`: distinct runs only,
INCONCLUSIVE and damaged runs left out and listed, scenarios never pooled
unless --pool, an existing --out refused without --force, --fail-if gates in
compare.html and compare.csv. Synthetic results folders, no Ray cluster."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ftharness.harness.frontends.cli import main
from test_reports_cli import fake_run, kill, make_results, unland


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    ok = [make_results(root / f"kill{i}", "kill", [kill(r)]) for i, r in enumerate((2.0, 3.0, 4.0))]
    other = make_results(root / "mixed" / "kill", "kill", [kill(2.0)])
    make_results(root / "mixed" / "twice", "twice", [kill(1.0), kill(3.0)])
    unlanded = make_results(root / "unlanded", "kill", [kill(9.0)], edit=unland)
    damaged = root / "damaged"
    shutil.copytree(ok[0], damaged)
    lines = (damaged / "history.jsonl").read_text().splitlines()
    (damaged / "history.jsonl").write_text("\n".join(lines[:-1]) + "\n")      # history_end lost
    summary = json.loads((damaged / "summary.json").read_text())
    summary.pop("properties")                                                   # re-judged: incomplete history
    summary.pop("history")
    (damaged / "summary.json").write_text(json.dumps(summary))
    return {"ok": ok, "mixed": str(root / "mixed"), "unlanded": unlanded, "damaged": str(damaged), "root": root}


def compare(*args, capsys):
    code = main(["compare", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------- what was seen (3)
def test_the_same_folder_named_three_times_counts_once(runs, tmp_path, capsys):
    one = runs["ok"][0]
    code, out, err = compare(f"a={one},{one}", f"b={one}", "--out", str(tmp_path / "c"), capsys=capsys)
    assert code == 0, err
    df = pd.read_csv(tmp_path / "c" / "compare.csv").set_index("configuration")
    assert df.loc["a", "runs"] == 1 and df.loc["a", "recoveries"] == 1
    assert "named more than once" in err
    assert pd.isna(df.loc["b", "recovery_diff_ci_low_s"])          # one sample: no interval


def test_inconclusive_and_damaged_runs_are_left_out_and_listed(runs, tmp_path, capsys):
    code, out, err = compare(f"a={','.join(runs['ok'])}", f"b={runs['ok'][0]},{runs['unlanded']},{runs['damaged']}",
                             "--out", str(tmp_path / "c"), capsys=capsys)
    assert code == 0, err
    df = pd.read_csv(tmp_path / "c" / "compare.csv").set_index("configuration")
    assert df.loc["a", "runs"] == 3 and df.loc["b", "runs"] == 1
    assert f"left out {runs['unlanded']} (b): verdict INCONCLUSIVE" in err
    assert f"left out {runs['damaged']} (b): damaged history" in err
    page = (tmp_path / "c" / "compare.html").read_text()
    assert runs["unlanded"] in page and runs["damaged"] in page and "verdict INCONCLUSIVE" in page


def test_different_scenarios_are_not_pooled_unless_asked(runs, tmp_path, capsys):
    code, out, err = compare(f"a={runs['mixed']}", "--out", str(tmp_path / "c"), capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "2 scenarios (kill, twice)" in err and "--pool" in err and not (tmp_path / "c").exists()
    code, out, err = compare(f"a={runs['mixed']}", "--pool", "--out", str(tmp_path / "c"), capsys=capsys)
    assert code == 0, err
    assert pd.read_csv(tmp_path / "c" / "compare.csv")["runs"].tolist() == [2]


def test_an_existing_out_is_refused_without_force(runs, tmp_path, capsys):
    out = tmp_path / "c"
    out.mkdir()
    (out / "compare.csv").write_text("mine\n")
    code, _, err = compare(f"a={runs['ok'][0]}", "--out", str(out), capsys=capsys)
    assert code == 2 and "--force" in err and (out / "compare.csv").read_text() == "mine\n"
    code, _, err = compare(f"a={runs['ok'][0]}", "--out", str(out), "--force", capsys=capsys)
    assert code == 0 and (out / "compare.csv").read_text() != "mine\n"


def test_fail_if_gates_are_in_compare_html_and_compare_csv(runs, tmp_path, capsys):
    slow = [make_results(tmp_path / f"slow{i}", "kill", [kill(r)]) for i, r in enumerate((8.0, 9.0, 10.0))]
    code, out, err = compare(f"fast={','.join(runs['ok'])}", f"slow={','.join(slow)}",
                             "--fail-if", "recovery_s.median > +10%", "--out", str(tmp_path / "c"), capsys=capsys)
    assert code == 1
    line = next(ln for ln in out.splitlines() if ln.startswith("FAIL --fail-if"))
    df = pd.read_csv(tmp_path / "c" / "compare.csv").set_index("configuration")
    assert bool(df.loc["slow", "fail_if_tripped"]) and not bool(df.loc["fast", "fail_if_tripped"])
    assert line in df.loc["slow", "fail_if"]
    page = (tmp_path / "c" / "compare.html").read_text()
    assert 'id="gates"' in page and "recovery_s.median &gt; +10%" in page and "mismatch" in page


# ------------------------------------------------------------ suite --repeat N
def test_suite_repeat_runs_the_suite_n_times_into_rounds_that_compare_reads(monkeypatch, tmp_path, capsys):
    fake_run(monkeypatch, "suite", "run_suite")
    out = tmp_path / "suite"
    assert main(["suite", "--repeat", "3", "--out", str(out), "--quiet"]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir() and p.name.startswith("repeat-")) == \
        ["repeat-1", "repeat-2", "repeat-3"]
    assert (out / "report.html").is_file() and (out / "junit.xml").is_file()
    capsys.readouterr()
    folders = ",".join(str(out / f"repeat-{i}" / "kill") for i in (1, 2, 3))
    assert main(["compare", f"kill={folders}", "--out", str(tmp_path / "c")]) == 0
    assert pd.read_csv(tmp_path / "c" / "compare.csv")["runs"].tolist() == [3]
    assert main(["suite", "--repeat", "0", "--out", str(tmp_path / "x"), "--quiet"]) == 2


def test_a_copied_run_counts_once_by_its_history_digest(runs, tmp_path, capsys):
    copy = tmp_path / "copy-of-kill0"
    shutil.copytree(runs["ok"][0], copy)
    code, out, err = compare(f"a={runs['ok'][0]},{copy},{runs['ok'][1]}", "--out", str(tmp_path / "c"), capsys=capsys)
    assert code == 0, err
    df = pd.read_csv(tmp_path / "c" / "compare.csv").set_index("configuration")
    assert df.loc["a", "runs"] == 2 and df.loc["a", "recoveries"] == 2
    assert f"left out {copy} (a): the same run as {runs['ok'][0]} (history digest" in err


def test_a_label_given_twice_is_refused_in_one_line(runs, tmp_path, capsys):
    code, out, err = compare(f"a={runs['ok'][0]}", f"a={runs['ok'][1]}", "--out", str(tmp_path / "c"), capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "'a' is given twice" in err
    assert not (tmp_path / "c").exists()


def test_compare_html_has_a_verdict_banner_its_runs_and_metadata(runs, tmp_path, capsys):
    a, b = runs["ok"][0], runs["ok"][1]
    code, out, err = compare(f"a={a}", f"b={b}", "--fail-if", "recovery_s.median > +10%",
                             "--out", str(tmp_path / "c"), capsys=capsys)
    page = (tmp_path / "c" / "compare.html").read_text()
    assert code == 1 and '<div class="banner fail"><strong>FAIL</strong> (0 of 1 gates held; 2 run(s)' in page
    assert 'id="runs"' in page and a in page and b in page and "history digest" in page
    assert "generated " in page and "by ftharness " in page
    code, out, err = compare(f"a={a}", "--out", str(tmp_path / "d"), capsys=capsys)
    page = (tmp_path / "d" / "compare.html").read_text()
    assert code == 0 and '<div class="banner unknown"><strong>NOT JUDGED</strong>' in page
