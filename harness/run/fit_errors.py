"""What a failed fit() raised, kept so a reader (and a verdict) can tell one failure from another.

Ray reports a Train controller that died in its constructor as `ActorDiedError` whatever the
constructor raised: a refused run directory (`CheckpointManagerInitializationError`) and a bug in
Ray's own code (`TypeError`) read the same by type. The constructor's exception is the last line
of the creation task's traceback, which Ray puts in the error's text; `constructor_error` reads it
from there (pure, on the recorded text, so `ftharness check` reads the same from the history).

The text is kept head and tail (`error_text`): the traceback's last line, which names the
exception and its message, is the part a cut at the front would lose.
"""

from __future__ import annotations

import re
from typing import Optional

#: characters of a fit()'s error kept in the history (head and tail)
ERROR_TEXT_CHARS = 4000
#: how Ray's ActorDiedError begins when the actor's constructor raised (2.51-2.60: ray/exceptions.py)
CREATION_FAILED = "The actor died because of an error raised in its creation task"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXCEPTION_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*))(?::\s|:$|$)")


def error_text(error: BaseException, limit: int = ERROR_TEXT_CHARS) -> str:
    """`str(error)`, at most `limit` characters: its head and its tail (where the cause is named)."""
    text = str(error)
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]}\n...\n{text[-half:]}"


def constructor_error(text: Optional[str]) -> Optional[str]:
    """The type of the exception an actor's constructor raised, read from Ray's `ActorDiedError`
    text ('TypeError', 'CheckpointManagerInitializationError'); None for any other error.

    It is the last line at the margin that follows an indented traceback line and reads like
    `pkg.mod.Name: message` (a message's own lines are not preceded by a traceback line)."""
    if not isinstance(text, str):
        return None
    text = _ANSI.sub("", text)
    if not text.startswith(CREATION_FAILED):
        return None
    found = None
    lines = text.splitlines()
    for before, line in zip(lines, lines[1:]):
        if not before.startswith(" ") or line.startswith((" ", "\t")):
            continue
        m = _EXCEPTION_LINE.match(line)
        if m and m.group(2)[0].isupper():
            found = m.group(2)
    return found
