"""The test models, their scripted turns and the transport that renders those turns as a
provider would send them (the wire shapes come from `_replies.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolnexus._aio import as_async
from toolnexus.errors import ConfigError, ProviderError
from toolnexus.testing._replies import ReplyCall, ReplySpec, render_events, render_json

if TYPE_CHECKING:
    from toolnexus.client import Client


_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One tool call of a scripted turn; `args` as a dict is JSON-encoded, a str sent as is."""

    name: str
    args: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    """One answer of a model: text, tool calls, or an HTTP error; after `delay` seconds."""

    text: str = ""
    calls: tuple[ScriptedCall, ...] = ()
    status: int = 200  # not 2xx: the request fails with this status and `text` as message
    delay: float = 0.0
    usage: tuple[int, int] = (10, 5)  # (prompt, completion) tokens
    chunk_size: int = 4  # characters per streamed text delta
    refusal: str = ""  # the model declines to answer, saying this
    reasoning: tuple[dict[str, Any], ...] = ()  # Responses reasoning items, sent first verbatim


def text(
    content: str,
    *,
    delay: float = 0.0,
    usage: tuple[int, int] = (10, 5),
    reasoning: Sequence[Mapping[str, Any]] = (),
) -> ScriptedTurn:
    """A turn answering `content` (after `reasoning` items, on the Responses wire)."""
    return ScriptedTurn(
        text=content, delay=delay, usage=usage, reasoning=tuple(dict(r) for r in reasoning)
    )


def refusal(reason: str, *, delay: float = 0.0) -> ScriptedTurn:
    """A turn declining to answer, in each wire's refusal shape; the run ends `refused`."""
    return ScriptedTurn(refusal=reason, delay=delay)


def tool_call(
    name: str, args: Mapping[str, Any] | str | None = None, *, id: str | None = None
) -> ScriptedCall:
    """A tool call for `tools(...)`."""
    return ScriptedCall(name, {} if args is None else args, id)


def tools(
    *calls: ScriptedCall,
    text: str = "",
    delay: float = 0.0,
    reasoning: Sequence[Mapping[str, Any]] = (),
) -> ScriptedTurn:
    """A turn asking for these tool calls (with optional text, and reasoning items, first)."""
    return ScriptedTurn(
        text=text, calls=calls, delay=delay, reasoning=tuple(dict(r) for r in reasoning)
    )


def error(
    status: int = 500, message: str = "scripted failure", *, delay: float = 0.0
) -> ScriptedTurn:
    """A turn whose request fails with HTTP `status` (429 and 5xx are retried by the client)."""
    if 200 <= status < 300:
        raise ConfigError(f"error() needs a non-2xx status, not {status}")
    return ScriptedTurn(text=message, status=status, delay=delay)


@dataclass(frozen=True, slots=True)
class SeenRequest:
    """One request a test model received: the wire `style` and the JSON `body`."""

    style: str
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The transcript sent (the Responses wire's `input` items)."""
        key = "input" if self.style == "openai-responses" else "messages"
        return list(self.body.get(key) or ())

    @property
    def tool_names(self) -> list[str]:
        """The names of the declared tools, in order."""
        declared = self.body.get("tools") or ()
        return [t["function"]["name"] if "function" in t else t["name"] for t in declared]

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def prompt(self) -> str:
        """The text of the last user message (its text parts joined)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                return "".join(
                    p.get("text", "")
                    for p in content or ()
                    if isinstance(p, dict) and p.get("type") in ("text", "input_text")
                )
        return ""


class _Model(ABC):
    """What both test models share: the requests seen, the transport, the client."""

    _runs_user_code = False

    def __init__(self) -> None:
        self.requests: list[SeenRequest] = []

    @abstractmethod
    async def _turn(self, request: SeenRequest) -> ScriptedTurn:
        """The turn that answers `request`."""

    def transport(self, style: str) -> _Transport:
        """A client transport answering from this model in `style`."""
        return _Transport(self, style)

    def client(self, style: str = "openai", *, model: str = "test-model", **options: Any) -> Client:
        """A `Client` of the `style` wire whose requests this model answers."""
        from toolnexus.client import Client

        options.setdefault("retry_base_ms", 1)
        return Client.over_transport(self.transport(style), style=style, model=model, **options)  # type: ignore[arg-type]

    @property
    def last_request(self) -> SeenRequest:
        if not self.requests:
            raise AssertionError("the model received no request")
        return self.requests[-1]

    def assert_requests(self, count: int) -> None:
        """Fail unless exactly `count` requests were received."""
        if len(self.requests) != count:
            raise AssertionError(f"expected {count} model requests, got {len(self.requests)}")


class ScriptedModel(_Model):
    """Answers each request with the next scripted turn; a request past the script fails."""

    def __init__(self, *turns: ScriptedTurn | str) -> None:
        super().__init__()
        self._turns: deque[ScriptedTurn] = deque()
        self.push(*turns)

    def push(self, *turns: ScriptedTurn | str) -> ScriptedModel:
        """Queue more turns (a str is `text(str)`)."""
        self._turns.extend(text(t) if isinstance(t, str) else t for t in turns)
        return self

    @property
    def pending(self) -> int:
        """Turns not yet used."""
        return len(self._turns)

    async def _turn(self, request: SeenRequest) -> ScriptedTurn:
        if not self._turns:
            return ScriptedTurn(text="the scripted model has no turn left", status=500)
        return self._turns.popleft()


class FunctionModel(_Model):
    """Computes each turn with `generate(request)` (sync or async), given a `SeenRequest`;
    it may return a `ScriptedTurn` or a str."""

    _runs_user_code = True

    def __init__(
        self, generate: Callable[[SeenRequest], ScriptedTurn | str | Awaitable[ScriptedTurn | str]]
    ) -> None:
        super().__init__()
        self._generate = as_async(generate)

    async def _turn(self, request: SeenRequest) -> ScriptedTurn:
        reply = await self._generate(request)
        return text(reply) if isinstance(reply, str) else reply


@contextlib.contextmanager
def override(client: Client, model: _Model) -> Iterator[_Model]:
    """Point `client` at `model` inside the block (its wire style kept), then restore it."""
    endpoint = client._endpoint
    saved = endpoint.transport
    endpoint.transport = model.transport(client.style)
    try:
        yield model
    finally:
        endpoint.transport = saved


class _Transport:
    """The client transport of a test model: renders turns as provider JSON or SSE."""

    transport_errors: tuple[type[BaseException], ...] = ()
    can_stream = True

    def __init__(self, model: _Model, style: str) -> None:
        self._model = model
        self._style = style
        self.unwinds_promptly = not model._runs_user_code

    async def _answer(self, body: dict[str, Any]) -> ScriptedTurn:
        request = SeenRequest(self._style, json.loads(json.dumps(body)))  # a snapshot
        self._model.requests.append(request)
        turn = await self._model._turn(request)
        if turn.delay:
            await asyncio.sleep(turn.delay)
        if not 200 <= turn.status < 300:
            payload = {"type": "error", "error": {"type": "api_error", "message": turn.text}}
            raise ProviderError(turn.status, json.dumps(payload))
        return turn

    async def post(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, bytes]:
        turn = await self._answer(body)
        data = render_json(self._style, _spec(turn, self._style, str(body.get("model", ""))))
        return 200, data, json.dumps(data).encode()

    async def open_stream(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> _Stream:
        turn = await self._answer(body)
        spec = _spec(turn, self._style, str(body.get("model", "")))
        return _Stream([event + "\n\n" for event in render_events(self._style, spec)])

    async def aclose(self) -> None:
        return None


class _Stream:
    status = 200
    is_json = False

    def __init__(self, events: list[str]) -> None:
        self._events = events

    async def chunks(self) -> AsyncIterator[bytes]:
        for event in self._events:  # one event per chunk: the client sees it arrive piecewise
            yield event.encode()
            await asyncio.sleep(0)

    async def finish(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def _spec(turn: ScriptedTurn, style: str, model: str) -> ReplySpec:
    seq = next(_ids)
    return ReplySpec(
        text=turn.text,
        calls=[
            ReplyCall(c.id or f"call_{seq}_{i}", c.name, c.args) for i, c in enumerate(turn.calls)
        ],
        refusal=turn.refusal,
        reasoning=turn.reasoning,
        usage=turn.usage,
        chunk_size=turn.chunk_size,
        model=model,
        seq=seq,
    )
