"""Where an agent's model comes from, and the per-turn client derived from it.

A runtime takes exactly one model source (a `Client`, `create_client` options, an in-process
`generate`, or a published-style synchronous transport) and runs every handle turn on a client
derived from it (`Client.derive`) that shares its connections, retry policy and metric registry
but carries the agent's own model, soul, turn limit, escalator, hooks and store. The
runtime-wide turn gate sits between that client and the shared transport, around each request
attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolnexus.client import Client, create_client, create_in_process_client
from toolnexus.client._blocking import ThreadedTransport
from toolnexus.client._metrics import Metrics
from toolnexus.client._options import ClientChanges
from toolnexus.client._transport import StreamBody, Transport
from toolnexus.client.memory import ConversationStore, KeyedLock
from toolnexus.errors import ConfigError, ConfigTypeError, StreamingUnsupported

__all__ = [
    "MODEL_OPTIONS",
    "ModelSource",
    "TurnGate",
    "TurnLedger",
    "client_over_transport",
    "derive_client",
    "resolve_model_source",
]

MODEL_OPTIONS = ("client", "llm", "in_process", "transport")
_TRANSPORT_TIMEOUT_S = 600.0  # what a client's read timeout defaults to
_NEEDS_MODEL = (
    "toolnexus.agents: AgentRuntime needs a model: pass client=, llm=, in_process= or transport="
)


@dataclass(slots=True)
class ModelSource:
    client: Client
    owned: bool  # built by the runtime, closed with its root


def resolve_model_source(
    *,
    client: Client | None = None,
    llm: Mapping[str, Any] | None = None,
    in_process: Callable[[dict[str, Any]], Any] | None = None,
    transport: Any = None,
) -> ModelSource:
    """The one model source given, as a client (and whether the runtime owns it).

    `llm=` and `transport=` go together, as published: `llm` says the endpoint, style and
    model, `transport` does the I/O (`create_client(**llm, http_transport=transport)`).
    """
    if llm is not None and transport is not None and client is None and in_process is None:
        if not isinstance(llm, Mapping):
            raise ConfigTypeError(
                f"llm= must be a dict of create_client options, not {type(llm).__name__}"
            )
        if "http_transport" in llm:
            raise ConfigError(
                "toolnexus.agents: give the transport as transport= or in llm=, not both"
            )
        return ModelSource(create_client(**dict(llm), http_transport=transport), owned=True)
    given = [
        name
        for name, value in (
            ("client", client),
            ("llm", llm),
            ("in_process", in_process),
            ("transport", transport),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise ConfigError(
            f"toolnexus.agents: {' and '.join(f'{n}=' for n in given)} are mutually exclusive"
        )
    if not given:
        raise ConfigError(_NEEDS_MODEL)
    if client is not None:
        if not isinstance(client, Client):
            raise ConfigTypeError(
                f"client= must be a toolnexus Client, not {type(client).__name__}"
            )
        return ModelSource(client, owned=False)
    if llm is not None:
        if not isinstance(llm, Mapping):
            raise ConfigTypeError(
                f"llm= must be a dict of create_client options, not {type(llm).__name__}"
            )
        return ModelSource(create_client(**dict(llm)), owned=True)
    if in_process is not None:
        if not callable(in_process):
            raise ConfigTypeError("in_process= must be a callable generate(request)")
        return ModelSource(create_in_process_client(model="inherit", generate=in_process), True)
    return ModelSource(client_over_transport(transport), owned=True)


# -- the published synchronous transport -------------------------------------------------------


def client_over_transport(transport: Any) -> Client:
    """An OpenAI-style client whose requests go to a published synchronous transport (each
    call in a worker thread; a cancelled turn stops waiting at once)."""
    return Client.over_transport(
        ThreadedTransport(transport, _TRANSPORT_TIMEOUT_S), model="inherit"
    )


# -- the turn gate and derived clients -----------------------------------------------------------


class TurnGate:
    """At most `limit` LLM request attempts in flight across a runtime (released in `finally`)."""

    def __init__(self, limit: int) -> None:
        self._semaphore = asyncio.Semaphore(limit)
        self.in_flight = 0
        self.max_observed = 0

    def wrap(self, transport: Transport) -> Transport:
        return _GatedTransport(transport, self)

    @contextlib.asynccontextmanager
    async def attempt(self) -> AsyncIterator[None]:
        """Hold one of the `limit` places for the length of one request attempt."""
        async with self._semaphore:
            self.in_flight += 1
            self.max_observed = max(self.max_observed, self.in_flight)
            try:
                yield
            finally:
                self.in_flight -= 1


class _GatedTransport:
    __slots__ = ("_gate", "_inner", "can_stream", "transport_errors", "unwinds_promptly")

    def __init__(self, inner: Transport, gate: TurnGate) -> None:
        self._inner = inner
        self._gate = gate
        self.transport_errors = inner.transport_errors
        self.can_stream = inner.can_stream
        self.unwinds_promptly = inner.unwinds_promptly

    async def post(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, bytes]:
        async with self._gate.attempt():
            return await self._inner.post(url, headers, body)

    async def open_stream(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> StreamBody:
        raise StreamingUnsupported("toolnexus.agents: agent turns never stream")

    async def aclose(self) -> None:
        return None  # the shared transport belongs to the base client


class TurnLedger:
    """The spend of one turn's derived client, tallied from its metric events as they are
    emitted (the events themselves go to the shared registry), so a turn that is aborted or
    fails (no `RunResult` to read) is still charged to the budgets for the calls it made."""

    __slots__ = ("_registry", "llm_calls", "tokens", "tool_calls")

    def __init__(self, registry: Metrics) -> None:
        self._registry = registry
        self.llm_calls = 0
        self.tokens = 0
        self.tool_calls = 0

    def record(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        if kind == "llm" and event.get("status") == "ok":
            self.llm_calls += 1
            self.tokens += int(event.get("prompt_tokens") or 0)
            self.tokens += int(event.get("completion_tokens") or 0)
        elif kind == "tool" and not event.get("pending"):
            self.tool_calls += 1

    def observer(
        self, on_metric: Callable[[dict[str, Any]], Any] | None
    ) -> Callable[[dict[str, Any]], Any]:
        """The `on_metric` of the turn's client: tally the event, then hand it to `on_metric`
        (whose reply, an awaitable included, the client deals with as usual)."""

        def observe(event: dict[str, Any]) -> Any:
            self.record(event)
            return None if on_metric is None else on_metric(event)

        return observe

    def render(self) -> str:
        return self._registry.render()


def derive_client(
    base: Client,
    *,
    transport: Transport,
    model: str,
    system_prompt: str,
    max_turns: int,
    wait_for: Callable[..., Any] | None,
    hooks: Any,
    on_metric: Callable[[dict[str, Any]], Any] | None,
    store: ConversationStore,
    locks: KeyedLock,
    ledger: TurnLedger,
    output_type: Any = None,
) -> Client:
    """`base` derived for one handle turn: shared pool, policy and metric registry; the
    agent's own model (unless `"inherit"`), soul, turn limit, escalator, hooks, store and
    typed output (none unless the agent asks: the host's `output_type` is the host's answer)."""
    changes: ClientChanges = {
        "system_prompt": system_prompt or None,
        "output_type": output_type,
        "max_turns": max_turns,
        "wait_for": wait_for,
        "hooks": hooks,
        "on_metric": ledger.observer(on_metric),
        "store": store,
    }
    if model != "inherit":
        changes["model"] = model
    return base.derive(transport=transport, locks=locks, **changes)
