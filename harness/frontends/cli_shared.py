"""What every `ftharness` command shares: the exit codes, the one error line (exit 2), an internal
error's line and kept traceback (exit 4), a run's printed summary and its report files, and text
from a results folder made safe for the terminal.

Split out of cli.py (the parser and dispatch) so each command family's module (cli_run.py,
cli_results.py, cli_scenarios.py, cli_doctor.py) imports these without importing the others.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from typing import List, Optional

from ftharness.harness.run.arguments import check_new_out, refuse
from ftharness.safety import printable, redact
from ftharness.scenarios.language.messages import one_line


#: scenarios/verdict.py's exit codes (tests/test_fuzz_plugin_loading.py holds them equal). Neither it
#: nor the guard is imported at start: both import ftharness.faults and ftharness.scenarios.properties,
#: which load the plugins, and `--version`, `doctor` and a refused argument use no kind or property.
EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_RUN, EXIT_INCONCLUSIVE, EXIT_INTERNAL = 0, 1, 2, 3, 4

EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports it


def check_route(*args, **kwargs):
    """harness/run/guard.py's check_route, imported when a command gets that far (it loads the plugins)."""
    from ftharness.harness.run.guard import check_route as guard

    return guard(*args, **kwargs)


def exit_code(verdict: str) -> int:
    """scenarios/verdict.py's exit_code, imported when used (it loads the plugins)."""
    from ftharness.scenarios.verdict import exit_code as code

    return code(verdict)


def overall(verdicts):
    """scenarios/verdict.py's overall, imported when used (it loads the plugins)."""
    from ftharness.scenarios.verdict import overall as worst

    return worst(verdicts)


#: one line (at most MAX_MESSAGE (400) characters, prefix included), credentials redacted, exit 2
_fail = refuse


def check_out(out: str, flag: str = "--out") -> None:
    """A results folder this run creates, refused before anything starts (ScenarioError)."""
    check_new_out(out, "summary.json", "already holds a run", flag)


def internal_error(exc: BaseException, folder: Optional[str] = None) -> int:
    """One line on the terminal; the traceback in `folder`/error.txt (or a temp file)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        if folder:
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "error.txt")
        else:
            fd, path = tempfile.mkstemp(prefix="ftharness-error-", suffix=".txt")
            os.close(fd)
        with open(path, "w") as f:
            f.write(text)
    except OSError:
        path = "(could not be written)"
    print(one_line(f"ftharness: internal error: {one_line(printable(redact(f'{type(exc).__name__}: {exc}')), 200)}; "
                   f"traceback in {path}"), file=sys.stderr)
    return EXIT_INTERNAL


def print_summary(summary, out: str) -> None:
    from ftharness.scenarios.job_error import job_reason, verdict_line

    figures = (f"{summary['outcome']} after {summary['attempts']} attempt(s), "
               f"{summary['steps']} steps, {summary['wall_time_s']:.1f}s")
    print(one_line(verdict_line(summary["verdict"], summary["scenario"], summary, figures), 600))
    if job_reason(summary):   # the verdict line named the job's own error: the figures follow it
        print(f"  {figures}")
    print_reasons(summary)
    print(f"results: {os.path.abspath(out)}")


def print_reasons(summary) -> None:
    """The verdict's reasons (less the job's own error, which the verdict line says), and the
    failures of properties the scenario did not ask for (a warning: they never change the exit
    code, and are never hidden)."""
    from ftharness.scenarios.job_error import other_reasons

    mismatches, inconclusive = other_reasons(summary)
    for m in mismatches:
        print(f"  - {one_line(m)}")
    for m in inconclusive:
        print(f"  ? {one_line(m)}")
    for u in summary.get("unasked_failures") or []:
        print(f"  WARNING {u['property']}: failed, but the scenario did not ask for it: {one_line(u['explanation'])}")


REPORT_PAGE, REPORT_DATA, JUNIT_FILE = "report.html", "report-data", "junit.xml"


def write_reports(out: str, folders: Optional[List[str]] = None) -> None:
    """report.html (frames in report-data/) and junit.xml in the results folder
    (over `folders`, its suite rounds, when given), so every run leaves a page
    for a person and a file for CI. The verdict is already decided: a report
    that cannot be written is one warning line."""
    try:
        from ftharness.reports.html import write_report
        from ftharness.reports.junit import write_junit

        page = write_report(folders or [out], out, page_name=REPORT_PAGE, data_dir=REPORT_DATA)
        write_junit(folders or [out], os.path.join(out, JUNIT_FILE))
    except Exception as e:  # noqa: BLE001 - never changes the verdict or the exit code
        print(f"ftharness: warning: report not written ({one_line(f'{type(e).__name__}: {e}', 200)})",
              file=sys.stderr)
        return
    print(f"report: {os.path.abspath(page)}")


def _logs(args, out: str) -> None:
    """Ray's logs kept in OUT/logs at teardown; --verbose shows them live too."""
    from ftharness.harness.cluster.handles import keep_logs

    if getattr(args, "verbose", False):
        os.environ["FTHARNESS_VERBOSE"] = "1"
    keep_logs(os.path.abspath(out))


def _safe(text, limit: int = 300) -> str:
    """Text from a results folder, for the terminal: one line, control characters escaped."""
    return one_line(printable(redact(str(text))), limit)
