"""The verdict of a Chaos Toolkit journal and the run behind it: plain data, no Chaos
Toolkit import, so `ftharness verdict` works where the `[ctk]` extra is not installed."""

from __future__ import annotations

from typing import Any, Dict


def journal_verdict(journal: Dict[str, Any]) -> Dict[str, Any]:
    """PASS, FAIL or INCONCLUSIVE of an experiment and the run behind it, with reasons."""
    reasons = []
    if journal.get("status") != "completed":
        reasons.append(f"experiment status {journal.get('status')}")
    if journal.get("deviated"):
        reasons.append("the steady-state hypothesis deviated")
    after = (journal.get("steady_states") or {}).get("after") or {}   # null in a journal: none recorded
    if after and not after.get("steady_state_met", True):
        reasons.append("the steady state was not met after the method")
    fth = journal.get("ftharness") or {}
    unknown = []
    if fth.get("not_started") or (not fth and journal.get("status") not in (None, "completed")):
        # the run never started (a job that does not import, no cluster): nothing was tested, nothing failed
        cause = fth.get("not_started") or f"experiment status {journal.get('status')}, no ftharness run recorded"
        return {"verdict": "INCONCLUSIVE", "passed": False, "not_started": True,
                "reasons": [f"the run never started: {cause}"]}
    if not fth:
        unknown.append("no ftharness run in this journal")
    else:
        # a journal's ftharness section carries `run_verdict`; a summary.json, `verdict`
        run_verdict = fth.get("run_verdict") or (fth["verdict"] if isinstance(fth.get("verdict"), str) else None)
        reasons.extend(fth.get("mismatches") or [])
        unknown.extend(fth.get("inconclusive") or [])
        if run_verdict not in ("PASS", "FAIL", "INCONCLUSIVE"):
            unknown.append("the run has no verdict")
        elif run_verdict == "FAIL" and not fth.get("mismatches"):
            reasons.append("the run missed its expectation")
    verdict = "FAIL" if reasons else "INCONCLUSIVE" if unknown else "PASS"
    return {"verdict": verdict, "passed": verdict == "PASS", "reasons": reasons + unknown}
