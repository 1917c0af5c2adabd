"""Small pure guards every layer uses when it writes or prints something a user
or a results folder supplied: secrets redacted, names kept to one path
component, control characters escaped. At the bottom of the house (no imports
of ftharness), so the history, the harness and the reports share one rule.
"""

from __future__ import annotations

import re
from typing import Any

#: `scheme://user:password@host` or `scheme://token@host`: the credentials part of a URL. It may hold
#: `/` (AWS secret keys often do) and `@` (passwords): it ends at the last `@` a host follows
#: (found token by token, so a long value costs linear time)
_TOKEN = re.compile(r"[^\s'\"<>]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_HOST_END = re.compile(r"[A-Za-z0-9.\-\[\]_]+(?:[:/?#,;)\]}]|$)")


def _redact_token(token: str) -> str:
    m = _SCHEME.search(token)
    start = m.end() if m else 0
    at = len(token)
    while True:
        at = token.rfind("@", start, at)
        if at < 0:
            return token
        if _HOST_END.match(token, at + 1):
            break
    if not m:   # `user:password@host` without a scheme (an address, a DSN): credentials when a ':' precedes
        colon = token.find(":", 0, at)
        if colon < 0:
            return token
        start = max(token.rfind(c, 0, colon) for c in "='\"([{,") + 1
    if token[start:at] == REDACTED:
        return token
    return f"{token[:start]}{REDACTED}{token[at:]}"


#: names of parameters (in a URL's query, or `name=value` on its own) that carry credentials
SECRET_NAMES = ("access_key", "access_key_id", "secret_key", "secret", "secret_access_key", "aws_secret_access_key",
                "session_token", "aws_session_token", "security_token", "x-amz-security-token", "x-amz-credential",
                "x-amz-signature", "token", "access_token", "refresh_token", "id_token", "auth_token", "auth",
                "authorization", "bearer", "api_key", "apikey", "api-key", "key", "client_secret", "client-secret",
                "password", "passwd", "pwd", "pass", "sig", "signature", "credential", "credentials",
                "private_key", "account_key", "accountkey", "sharedaccesssignature", "sas", "sas_token")
_SECRET_PARAMS = re.compile(r"(?i)((?:^|(?<=[?&;\s,{(\[\"'#]))(?:" + "|".join(re.escape(n) for n in SECRET_NAMES)
                            + r")=)[^&\s'\";#]+")
REDACTED = "***"


def redact(value: Any) -> Any:
    """`value` with credentials in URLs replaced by ***; strings inside lists and dicts too
    (a summary, a scenario dump). Anything else is returned as it is."""
    if isinstance(value, str):
        if "@" not in value and "=" not in value:
            return value
        if "@" in value:
            value = _TOKEN.sub(lambda m: _redact_token(m.group()), value)
        return _SECRET_PARAMS.sub(lambda m: f"{m.group(1)}{REDACTED}", value)
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value


#: what a folder or file name made from a scenario or a results folder may be
_COMPONENT = re.compile(r"[A-Za-z0-9_.-]+")
MAX_COMPONENT = 100


def path_component_problem(name: Any) -> str | None:
    """Why `name` cannot be one path component of a results folder, or None."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > MAX_COMPONENT:
        return f"{len(name)} characters, at most {MAX_COMPONENT}"
    if name in (".", "..") or not _COMPONENT.fullmatch(name):
        return "allowed: letters, digits, '_', '-' and '.' (one folder name, not '.' or '..')"
    return None


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str, keep_newlines: bool = True) -> str:
    """Text for a terminal: control characters (escape sequences, carriage returns,
    bells) shown as \\xNN, so a job's log or a crafted history cannot drive the terminal."""
    text = str(text)
    out = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return out if keep_newlines else out.replace("\n", "\\n")


# ------------------------------------------------------------------ output paths
import os  # noqa: E402
import stat  # noqa: E402

MAX_PATH = 1024          # longer is a mistake, not a results folder
_SYSTEM = ("/proc", "/sys", "/dev")


def _common_problem(path: Any) -> str | None:
    if not isinstance(path, str) or not path.strip():
        return "is empty"
    if len(path) > MAX_PATH:
        return f"{len(path)} characters, longer than a path ftharness writes ({MAX_PATH})"
    if any(c in path for c in "\x00\n\r") or _CONTROL.search(path):
        return "holds a control character (newline, NUL, escape)"
    if any(len(os.fsencode(part)) > 255 for part in path.split(os.sep)):
        return "has a component longer than 255 bytes"
    real = os.path.realpath(path)
    if any(real == s or real.startswith(s + os.sep) for s in _SYSTEM):
        return f"is under /{real.split(os.sep)[1]}, not a place for results"
    return None


def _creatable(path: str) -> str | None:
    """None when the missing folders up to `path` can be made by this user."""
    parent = os.path.abspath(path)
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f"cannot be created: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be created: {parent} is not writable"
    return None


def output_dir_problem(path: Any) -> str | None:
    """Why `path` cannot be a results (or report) folder this command creates, or None.
    Checked before anything starts, so a bad --out never costs a cluster."""
    why = _common_problem(path)
    if why:
        return why
    if os.path.lexists(path) and not os.path.isdir(path):
        return "is a file, not a folder"
    if os.path.isdir(path):
        return None if os.access(path, os.W_OK | os.X_OK) else "is not writable"
    return _creatable(path)


def output_file_problem(path: Any) -> str | None:
    """Why `path` cannot be a file this command writes (JUnit, a trace, a schema), or None:
    devices (/dev/null, /dev/full), folders and unwritable places are refused."""
    why = _common_problem(path)
    if why:
        return why
    if os.path.islink(path):   # a planted link (to ~/.bashrc): the plain open of a report would follow it
        return "is a symlink; ftharness writes only files it creates (remove it, or give another path)"
    if os.path.lexists(path):
        st = os.stat(path) if os.path.exists(path) else os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            return "is a folder, not a file"
        if not stat.S_ISREG(st.st_mode):
            return "is not a regular file (a device, a FIFO or a socket)"
        return None if os.access(path, os.W_OK) else "is not writable"
    return _creatable(os.path.dirname(os.path.abspath(path)) or ".")


# ------------------------------------------------------------------ secrets in copies and pages
#: a key (of a mapping anywhere in a scenario, train_loop_config included) or an environment
#: variable whose value is a secret: *token, *password/*passwd, *secret, *credential(s), *_key, key
SECRET_KEY = (r"[A-Za-z0-9_.-]*(?:token|TOKEN|Token|passw(?:or)?d|PASSW(?:OR)?D|Passw(?:or)?d|secret|SECRET|Secret"
              r"|credentials?|CREDENTIALS?|Credentials?)|(?:[A-Za-z0-9_.-]*[_-])?(?:api_?key|API_?KEY|key|KEY|Key)")
_SECRET_KEY = re.compile(SECRET_KEY)
#: `NAME: value`, `"NAME": "value"`, `NAME=value` (an environment assignment) in text: the value
_SECRET_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_.\-])([\"']?)(" + SECRET_KEY + r")\1(\s*[:=][ \t]*)"
                                r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s,}\]'\"&;<]+)")


def secret_key(name: Any) -> bool:
    """Whether a mapping key or an environment variable named `name` holds a secret."""
    return isinstance(name, str) and _SECRET_KEY.fullmatch(name) is not None


def _assignment(m: "re.Match") -> str:
    value = m.group(4)
    if value.strip("\"'") in (REDACTED, "", "null", "None", "~"):
        return m.group(0)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}{quote}{REDACTED}{quote}"


def redact_secrets(value: Any) -> Any:
    """`redact` and more, for copies and pages (a scenario's YAML, explore's findings and page):
    the value of every key named like a secret (`secret_key`) anywhere in a mapping, and in text
    `NAME: value`, `"NAME": "value"` and `NAME=value` (an environment assignment such as
    HF_TOKEN=...) for such names; URL credentials and secret parameters as `redact` does."""
    if isinstance(value, str):
        value = redact(value)
        if ":" in value or "=" in value:
            value = _SECRET_ASSIGNMENT.sub(_assignment, value)
        return value
    if isinstance(value, dict):
        return {k: (REDACTED if secret_key(k) and isinstance(v, (str, int, float)) and not isinstance(v, bool)
                    and v != "" else redact_secrets(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_secrets(v) for v in value)
    return value
