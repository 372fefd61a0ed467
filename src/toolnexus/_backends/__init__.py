"""What the shared stores (conversations, A2A tasks) have in common: errors, URLs, payloads.

The PostgreSQL and Redis connection code lives in `_postgres` and `_redis` beside this module;
each imports its driver only when a store of that kind is opened, so users of neither pay for
them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from toolnexus._log import logger, warn
from toolnexus.errors import StoreError

__all__ = [
    "SCHEMA_VERSION",
    "RenewalWatch",
    "backend_of",
    "decode_json_row",
    "guarded",
    "looks_like_a_path",
    "redact_dsn",
]

T = TypeVar("T")

_SCHEMES: dict[str, Literal["postgres", "redis"]] = {
    "postgres://": "postgres",
    "postgresql://": "postgres",
    "redis://": "redis",
    "rediss://": "redis",
    "unix://": "redis",
}

# The layout version every shared store writes beside its data. A store that finds a newer
# version refuses to run (an older library must not write over a layout it does not know).
# 2: A2A tasks record their owner (PostgreSQL column `toolnexus_tasks.owner`).
SCHEMA_VERSION = 2


# A libpq keyword/value connection string: `host=db port=5432 password='a b'`, nothing else.
_KEYWORD_DSN = re.compile(r"\s*(?:[A-Za-z_]+\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s']*)\s*)+")
_KEYWORD = re.compile(r"(?:^|\s)([A-Za-z_]+)\s*=")
# libpq's connection keywords (PostgreSQL 17 docs, "Parameter Key Words").
_LIBPQ_KEYWORDS = frozenset(
    [
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "require_auth",
        "channel_binding",
        "connect_timeout",
        "client_encoding",
        "options",
        "application_name",
        "fallback_application_name",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "replication",
        "gssencmode",
        "sslmode",
        "requiressl",
        "sslcompression",
        "sslcert",
        "sslkey",
        "sslpassword",
        "sslcertmode",
        "sslrootcert",
        "sslcrl",
        "sslcrldir",
        "sslsni",
        "sslnegotiation",
        "requirepeer",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "krbsrvname",
        "gsslib",
        "gssdelegation",
        "service",
        "target_session_attrs",
        "load_balance_hosts",
    ]
)
# One `key=value` word in a value that is not all of them (a mangled connection string).
_KEYWORD_WORD = re.compile(r"(?:^|\s)[A-Za-z_]+=")


def backend_of(url: str) -> Literal["postgres", "redis"] | None:
    """Which shared server a store value names (by its URL scheme; a libpq keyword/value
    string such as `host=db password=…` is PostgreSQL), or `None` for anything else."""
    lowered = url.lower()
    for scheme, backend in _SCHEMES.items():
        if lowered.startswith(scheme):
            return backend
    if _KEYWORD_DSN.fullmatch(url) and all(
        key.lower() in _LIBPQ_KEYWORDS for key in _KEYWORD.findall(url)
    ):
        return "postgres"
    return None


def looks_like_a_path(value: str) -> bool:
    """Whether a store value that names no server can be a file path: not empty, no URL
    scheme, no control character, no `key=value` words (a connection string gone wrong must
    not become a file named after it, password and all)."""
    return (
        bool(value.strip())
        and "://" not in value
        and value.isprintable()
        and _KEYWORD_WORD.search(value) is None
    )


async def guarded(store: str, action: str, what: str, work: Awaitable[T]) -> T:
    """`await work`, its failures as a `StoreError` naming `store` (URL without password), the
    `action` and `what` it concerned (e.g. `"saving"`, `"task 'abc'"`)."""
    try:
        return await work
    except StoreError:
        raise
    except Exception as exc:
        detail = str(exc).strip() or type(exc).__name__
        raise StoreError(f"{store}: {action} {what} failed: {detail}") from exc


class RenewalWatch:
    """Logs a store's failing background work (lease renewals, listening for changes): one
    WARNING when it starts failing, saying what that means, one INFO when it works again,
    nothing in between."""

    def __init__(self, store: str, lease_ms: float) -> None:
        self.store = store
        self.lease_ms = lease_ms
        self.failing = False

    def failed(self, what: str, exc: BaseException, consequence: str | None = None) -> None:
        """Report that `what` (e.g. "renewing the claim on conversation 'k'") failed."""
        if self.failing:
            return
        self.failing = True
        detail = " ".join((str(exc).strip() or type(exc).__name__).split())
        if consequence is None:
            consequence = (
                f"the claim lapses after {self.lease_ms:g} ms unless the store answers again"
            )
        warn(f"{self.store}: {what} failed ({detail}); {consequence}")

    def renewed(self) -> None:
        if self.failing:
            self.failing = False
            logger.info("[toolnexus] %s: working again", self.store)


_PASSWORD_PARAM = re.compile(r"(?i)\b(password|passwd|pwd)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def redact_dsn(url: str) -> str:
    """A store's URL or DSN with any password replaced by `***`: in the userinfo, the query, or a
    key=value DSN (`_secrets.redact_url` hides a whole userinfo, for reprs)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _PASSWORD_PARAM.sub(r"\1=***", url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:***@{host}" if colon else f"{user}@{host}"
    query = _PASSWORD_PARAM.sub(r"\1=***", parts.query)
    if not parts.scheme:
        return _PASSWORD_PARAM.sub(r"\1=***", url)
    if netloc == parts.netloc and query == parts.query:
        return url  # nothing hidden: as given (urlunsplit would add `//` to `file:`)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def decode_json_row(raw: str | bytes, *, store: str, what: str, kind: type) -> Any:
    """Decode one stored JSON value, or raise `StoreError` naming `store` and `what`.

    `kind` is the container the value must be (`list` for a transcript, `dict` for a task):
    a row of any other shape is corrupt, never passed on as data.
    """
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"{store}: {what} is corrupt (not JSON: {exc})") from None
    if not isinstance(value, kind):
        raise StoreError(
            f"{store}: {what} is corrupt (a JSON {type(value).__name__}, "
            f"not a {'list of messages' if kind is list else 'JSON object'})"
        )
    if isinstance(value, list) and not all(isinstance(m, dict) for m in value):
        raise StoreError(f"{store}: {what} is corrupt (a message that is not a JSON object)")
    return value
