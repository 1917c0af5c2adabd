"""How a scenario error reads: one line, at most MAX_MESSAGE characters, and for
`validate` every problem of the file besides the first (`scenario_error`). Every module
of the scenario language words its refusals through here, so no message spans lines."""

from __future__ import annotations

from typing import List, Optional

from ftharness.errors import ScenarioError


def scenario_error(first: str, problems: Optional[List[str]] = None, total: Optional[int] = None) -> ScenarioError:
    """A ScenarioError whose message is the first problem (one line); `problems` holds all
    of them (up to MAX_ERRORS) for `validate`, `total` how many there were."""
    err = ScenarioError(first)
    err.problems = problems or [first]
    err.total = total if total is not None else len(err.problems)
    return err


MAX_MESSAGE = 400


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """A message for the terminal: one line, at most `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
