"""Secret values: the one place that knows them, and the one function that hides them.

Every value the process expands from `${VAR}`, every API key and credential header it is given,
and the userinfo of every URL it is handed is remembered here; `redact` replaces each of them
with `[redacted]` wherever text leaves the library: exceptions, metrics, tool outputs, reprs,
the CLI, and log records of every logger (redacted as they are made, by a record factory, so
no handler or filter setup can miss one). Values shorter than `MIN_SECRET` characters are not
remembered: hiding every `8080` or `true` would garble ordinary text, and they guard nothing.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "MIN_SECRET",
    "REDACTED",
    "RedactingStream",
    "redact",
    "redact_url",
    "redacted_values",
    "remember",
    "remember_url",
]

MIN_SECRET = 6
REDACTED = "[redacted]"

_lock = threading.Lock()
_values: set[str] = set()
_pattern: re.Pattern[str] | None = None


def remember(value: str | None) -> None:
    """Treat `value` (and its stripped form, and each of its lines) as a secret from now on."""
    if not isinstance(value, str):
        return
    candidates = {value, value.strip(), *value.splitlines()}
    fresh = {c for c in candidates if len(c.strip()) >= MIN_SECRET and c not in _values}
    if not fresh:
        return
    global _pattern
    with _lock:
        _values.update(fresh)
        # Longest first, so a secret that contains another is hidden whole.
        ordered = sorted(_values, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(v) for v in ordered))


def remember_url(url: str | None) -> None:
    """Remember the password (and the whole userinfo) of `url`, if it has any."""
    if not isinstance(url, str) or "@" not in url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        remember(userinfo)
        if parts.password:
            remember(parts.password)
            remember(unquote(parts.password))


def redact(text: str) -> str:
    """`text` with every remembered secret replaced by `[redacted]`."""
    pattern = _pattern
    if pattern is None or not isinstance(text, str):
        return text
    return pattern.sub(REDACTED, text)


# Header and variable names whose values are credentials, whatever the value looks like.
_SECRET_NAME = re.compile(
    r"(?i)auth|token|key|secret|passw|pwd|cookie|session|credential|signature|bearer"
)


def redacted_values(values: Any) -> Any:
    """`values` (headers, environment variables) for a repr: the value of every credential-like
    name (`Authorization`, `X-Api-Key`, `GITHUB_TOKEN`, …) is `[redacted]`, the others go
    through `redact`. Anything but a mapping is returned as it is."""
    if not isinstance(values, dict):
        return values
    return {
        name: REDACTED if _SECRET_NAME.search(str(name)) else redact(value)
        for name, value in values.items()
    }


def redact_url(url: str) -> str:
    """`url` with its userinfo shown as `***` (for reprs and messages)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if "@" not in parts.netloc:
        return redact(url)
    host = parts.netloc.rpartition("@")[2]
    return redact(parts._replace(netloc=f"***@{host}").geturl())


class RedactingStream:
    """A text stream that writes through `redact` (the CLI's stdout and stderr)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


# -- logging: every record of every logger, before any handler formats it ----------------------

_previous_factory = logging.getLogRecordFactory()


def _redacting_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record = _previous_factory(*args, **kwargs)
    pattern = _pattern
    if pattern is None:
        return record
    try:
        message = record.getMessage()
    except Exception:  # a broken format: the logging module reports it itself
        return record
    if pattern.search(message):
        record.msg, record.args = pattern.sub(REDACTED, message), None
    if record.exc_info and record.exc_info[1] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        if pattern.search(text):
            record.exc_text = pattern.sub(REDACTED, text)
    return record


def _install() -> None:
    if logging.getLogRecordFactory() is not _redacting_factory:
        logging.setLogRecordFactory(_redacting_factory)


_install()
