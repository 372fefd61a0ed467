"""What of a provider's error body may be shown: account identifiers scrubbed, the bodies of
401/403 answers dropped, the message form capped.

A gateway reflects what it was sent (the credential, the `Authorization` header) in a 401/403
body, so those bodies are dropped whole. Every other body keeps its bytes except the VALUES of
the account-identifier keys, which are replaced by `REDACTED` wherever the body holds
`"<key>": <value>` (JSON or not: a body is often JSON wrapped in a gateway's text). The value
is measured with the standard JSON decoder, so a string, number, literal, object or array is
replaced whole and the rest of the body keeps its shape.
"""

from __future__ import annotations

import json
import re

__all__ = [
    "IDENTIFIER_KEYS",
    "MAX_ERROR_BODY",
    "REDACTED",
    "capped_error_body",
    "redact_identifiers",
    "safe_error_body",
]

MAX_ERROR_BODY = 200
"""How many characters of a provider's body an error MESSAGE shows (the typed `body` keeps all)."""

REDACTED = "«redacted»"
"""What an account identifier's value is replaced with."""

IDENTIFIER_KEYS = ("user_id", "org_id", "organization", "account_id")
"""The keys whose values name the account (the published package's set)."""

_KEY = re.compile(r'"(?:' + "|".join(map(re.escape, IDENTIFIER_KEYS)) + r')"\s*:\s*')
_DECODER = json.JSONDecoder()
# Where a value the JSON decoder cannot measure ends (a body cut mid-value): the next
# delimiter, so nothing of the identifier survives.
_UNDECODABLE = re.compile(r"[^,}\]\n]*")
_DROPPED = frozenset({401, 403})


def redact_identifiers(text: str) -> str:
    """`text` with the value of every account-identifier key replaced by `REDACTED`."""
    out: list[str] = []
    done = 0
    for match in _KEY.finditer(text):
        start = match.end()
        if start < done:  # inside a value already replaced
            continue
        try:
            _, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            found = _UNDECODABLE.match(text, start)
            end = found.end() if found else start
        out.append(text[done:start])
        out.append(json.dumps(REDACTED, ensure_ascii=False))
        done = end
    out.append(text[done:])
    return "".join(out)


def safe_error_body(status: int, text: str) -> str:
    """The body as it may be read: `""` for a 401/403, else `text` (stripped) with the account
    identifiers' values redacted. Never capped."""
    if status in _DROPPED:
        return ""
    return redact_identifiers(text.strip())


def capped_error_body(status: int, text: str) -> str:
    """`safe_error_body` cut to `MAX_ERROR_BODY` characters, `…` marking a cut: the form an
    error message shows. A cap is not a redaction: the body is redacted first."""
    safe = safe_error_body(status, text)
    return safe if len(safe) <= MAX_ERROR_BODY else safe[:MAX_ERROR_BODY] + "…"
