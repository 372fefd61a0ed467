"""Remote A2A agents from config to endpoint: `agent()`, a config's `agents` block, the Agent
Card fetched, and the JSON-RPC interface (A2A 1.0 or 0.3) chosen from it.

`_outbound.py` builds the tools and runs each call on top of this; nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from toolnexus._log import warn
from toolnexus._secrets import redact_url, redacted_values
from toolnexus.a2a import _wire as wire
from toolnexus.a2a._auth import AgentAuth, parse_auth
from toolnexus.a2a._wire import Dialect
from toolnexus.errors import A2AError, ConfigError

__all__ = [
    "CARD_PATH",
    "DEFAULT_POLL_EVERY_MS",
    "DEFAULT_TIMEOUT_MS",
    "Agent",
    "AgentEndpoint",
    "agent",
    "card_url_of",
    "check_auth",
    "fetch_card",
    "json_answer",
    "parse_agents_config",
    "resolve_endpoint",
]

DEFAULT_TIMEOUT_MS = 300_000
DEFAULT_POLL_EVERY_MS = 1_000
CARD_PATH = "/.well-known/agent-card.json"


@dataclass(slots=True)
class Agent:
    """A remote A2A agent; not `toolnexus.agents.Agent`: that is a sub-agent.

    Its card URL, request headers (`${ENV}` expanded per request), its time budget and polling
    interval in milliseconds, whether to stream when offered, the credentials its card's
    security schemes ask for (`auth`, as in the config), and whether its tools are deferred
    (found by tool search, not declared up front)."""

    card: str
    headers: dict[str, str] | None = None
    timeout: float = DEFAULT_TIMEOUT_MS
    poll_every: float = DEFAULT_POLL_EVERY_MS
    streaming: bool = True
    auth: Mapping[str, Any] | None = field(default=None, repr=False)
    defer_loading: bool = False

    def __repr__(self) -> str:
        # Header values can be credentials: those of credential-like names never show.
        return (
            f"Agent(card={redact_url(self.card)!r}, headers={redacted_values(self.headers)!r}, "
            f"timeout={self.timeout!r}, poll_every={self.poll_every!r}, "
            f"streaming={self.streaming!r})"
        )


def _positive_ms(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{what} must be a positive number of milliseconds, not {value!r}")
    return value  # type: ignore[no-any-return]


def agent(
    card: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    poll_every: float | None = None,
    streaming: bool = True,
    auth: Mapping[str, Any] | None = None,
    defer_loading: bool = False,
) -> Agent:
    """A remote A2A agent by its card URL; not `toolnexus.agents.agent`: that is a sub-agent.

    `timeout`/`poll_every` are in milliseconds; `streaming=False` polls even when the agent
    offers a stream.

    `auth` holds the credentials the card's `securitySchemes` ask for, placed where the card
    says: `{"type": "bearer", "token"}`, `{"type": "apiKey", "key", "name"?, "in"?}` or
    `{"type": "client_credentials", "clientId", "clientSecret", "scopes"?, "tokenUrl"?}`
    (secrets may be `${VAR}`; `"scheme"` picks one of the card's schemes by name).
    `defer_loading=True`: its tools are deferred (docs/tools-search.md)."""
    if not isinstance(card, str) or not card:
        raise ConfigError(f"agent() needs the Agent Card URL as a string, not {card!r}")
    if not isinstance(streaming, bool):
        raise ConfigError(f"streaming must be True or False, not {streaming!r}")
    if not isinstance(defer_loading, bool):
        raise ConfigError(f"deferLoading must be true or false, not {defer_loading!r}")
    check_auth(auth, headers, card)
    return Agent(
        card=card,
        headers=dict(headers) if headers is not None else None,
        timeout=DEFAULT_TIMEOUT_MS if timeout is None else _positive_ms(timeout, "timeout"),
        poll_every=(
            DEFAULT_POLL_EVERY_MS if poll_every is None else _positive_ms(poll_every, "poll_every")
        ),
        streaming=streaming,
        auth=dict(auth) if auth is not None else None,
        defer_loading=defer_loading,
    )


def check_auth(auth: Any, headers: Mapping[str, str] | None, card: str) -> AgentAuth | None:
    parsed = parse_auth(auth, f'A2A agent "{card}"')
    if parsed is not None and parsed.type != "apiKey":
        for name in headers or {}:
            if name.lower() == "authorization":
                raise ConfigError(
                    f'A2A agent "{card}": auth and an Authorization header both set; keep one'
                )
    return parsed


def parse_agents_config(block: Any) -> list[Agent]:
    """Agents from a config's `agents` block: `{"<id>": {"card", "headers"?, "timeout"?,
    "pollEvery"?, "streaming"?, "enabled"?, "disabled"?, "deferLoading"?}}`. Entries without a
    string `card` are ignored."""
    if block is None:
        return []
    if not isinstance(block, Mapping):
        warn(f'the config\'s "agents" block must be an object, not {type(block).__name__}; ignored')
        return []
    agents: list[Agent] = []
    for key, entry in block.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("card"), str):
            continue
        if entry.get("disabled") is True or entry.get("enabled") is False:
            continue
        headers = entry.get("headers")
        try:
            agents.append(
                agent(
                    entry["card"],
                    headers=headers if isinstance(headers, Mapping) else None,
                    timeout=entry.get("timeout"),
                    poll_every=entry.get("pollEvery"),
                    streaming=entry.get("streaming", True),
                    auth=entry.get("auth"),
                    defer_loading=entry.get("deferLoading", False),
                )
            )
        except ValueError as exc:
            warn(f'A2A agent "{key}" skipped: {exc}')
    return agents


# -- the card -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgentEndpoint:
    """Where and how to talk to an agent: JSON-RPC URL, dialect, tenant, streaming."""

    url: str
    dialect: Dialect
    tenant: str = ""
    streaming: bool = False


_UNPARSABLE = (-1, -1)


def _version(value: Any) -> tuple[int, int] | None:
    """`(major, minor)` of a protocol version; `None` when absent, `(-1, -1)` when unreadable."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        return _UNPARSABLE
    head = value.strip().split(".")
    try:
        major = int(head[0])
        minor = int(head[1]) if len(head) > 1 and head[1] else 0
    except ValueError:
        return _UNPARSABLE
    return (major, minor) if major >= 0 and minor >= 0 else _UNPARSABLE


def _pick_interface(interfaces: list[Any]) -> Mapping[str, Any] | None:
    """The interface a2a-sdk's client factory would choose among the JSON-RPC ones."""
    exact = above = compat = bare = None
    for entry in interfaces:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("url"), str):
            continue
        binding = entry.get("protocolBinding")
        if not isinstance(binding, str) or binding.upper() != "JSONRPC":
            continue
        version = _version(entry.get("protocolVersion"))
        if version is None:
            bare = bare or entry
        elif version == (1, 0):
            exact = exact or entry
        elif version[0] == 1:
            above = above or entry
        elif (0, 3) <= version < (1, 0):
            compat = compat or entry
    return exact or above or compat or bare


def card_url_of(card: str) -> str:
    """The URL to fetch: a bare origin (empty path or `/`) gets the well-known card path."""
    parts = urlsplit(card)
    if parts.path in ("", "/"):
        return card.rstrip("/") + CARD_PATH if not parts.query else card
    return card


def resolve_endpoint(card: Mapping[str, Any], card_url: str, *, streaming: bool) -> AgentEndpoint:
    """The endpoint a card offers, by the SDK's choice of interface (1.0 first, then 0.3)."""
    offered = streaming and isinstance(card.get("capabilities"), Mapping)
    offered = offered and card["capabilities"].get("streaming") is True
    interfaces = card.get("supportedInterfaces")
    if isinstance(interfaces, list) and interfaces:
        chosen = _pick_interface(interfaces)
        if chosen is not None:
            version = _version(chosen.get("protocolVersion"))
            dialect: Dialect = "1.0" if version is None or version[0] == 1 else "0.3"
            tenant = chosen.get("tenant")
            return AgentEndpoint(
                urljoin(card_url, chosen["url"]),
                dialect,
                tenant if isinstance(tenant, str) and dialect == "1.0" else "",
                offered,
            )
    else:
        url = card.get("url")
        preferred = card.get("preferredTransport")
        if isinstance(url, str) and url:
            if isinstance(preferred, str) and preferred.upper() != "JSONRPC":
                url = None
                for extra in card.get("additionalInterfaces") or []:
                    if (
                        isinstance(extra, Mapping)
                        and str(extra.get("transport", "")).upper() == "JSONRPC"
                        and isinstance(extra.get("url"), str)
                    ):
                        url = extra["url"]
                        break
            if url:
                version = _version(card.get("protocolVersion") or "0.3.0")
                dialect = "1.0" if version is not None and version[0] == 1 else "0.3"
                return AgentEndpoint(urljoin(card_url, url), dialect, "", offered)
        elif not url:
            origin = urlsplit(card_url)
            return AgentEndpoint(f"{origin.scheme}://{origin.netloc}/", "0.3", "", offered)
    raise A2AError(f"A2A agent card at {card_url} offers no JSON-RPC interface for A2A 1.0 or 0.3")


async def fetch_card(url: str, headers: dict[str, str], timeout_s: float) -> Any:
    """The Agent Card at `url`, as JSON (`A2AError` for a failed or non-JSON answer)."""
    from toolnexus._http import fetch_source

    response = await fetch_source(url, "the Agent Card", headers=headers, timeout=timeout_s)
    return json_answer(response.status_code, response.text, url)


def json_answer(status: int, text: str, where: str) -> Any:
    """The JSON of a 2xx answer (repaired for output); `A2AError` for anything else."""
    if not 200 <= status < 300:
        raise A2AError(f"HTTP {status}: {text}")
    try:
        return wire.repair(wire.loads(text))
    except wire.WireError:
        raise A2AError(f"{where} did not answer JSON: {text[:200]}") from None
