"""The model seam: one call to a model, whatever its wire dialect and wherever it runs.

`Endpoint.complete(request, scope, emit)` returns the model's `Turn`;
`Endpoint.stream(request, scope, emit)` yields the answer's text and reasoning deltas, then the
`Turn`.
Beneath the seam, in one place: the wire dialect (body layout, response and stream parsing),
the transport that sends one attempt, the retries, the headers and the shaping of each body
(`request_params`, `body_transform`). The loop, `translate` and the in-process model depend on
this module, never on `Client`.

Two things vary independently:
- the dialect (`DIALECTS`, by `style`): see `toolnexus.client._wire.Dialect` for what a new
  one implements;
- the transport (`toolnexus.client._transport.Transport`): HTTP to a provider, a model in this
  process, or any object sending one assembled body.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from toolnexus import _otel
from toolnexus._aio import call_maybe_async
from toolnexus._env import check_header_value
from toolnexus._secrets import remember, remember_url
from toolnexus.client._errors import MissingApiKey, ProviderError
from toolnexus.client._events import MetricEvent
from toolnexus.client._metrics import llm_event
from toolnexus.client._retry import RetryPolicy
from toolnexus.client._scope import RunScope
from toolnexus.client._sse import SSEDecoder
from toolnexus.client._transport import StreamBody, Transport
from toolnexus.client._wire import (
    CREDENTIAL_HEADERS,
    Dialect,
    ReasoningDelta,
    Turn,
    merge_headers,
    provider_data,
)
from toolnexus.errors import ConfigTypeError

__all__ = ["DIALECTS", "CallOptions", "Credentials", "Endpoint", "ModelRequest"]


def _openai() -> Dialect:
    from toolnexus.client._openai import OPENAI

    return OPENAI


def _anthropic() -> Dialect:
    from toolnexus.client._anthropic import ANTHROPIC

    return ANTHROPIC


def _responses() -> Dialect:
    from toolnexus.client._responses import RESPONSES

    return RESPONSES


class _Dialects(Mapping[str, Dialect]):
    """The dialects by style; a dialect's module loads when a client first selects it."""

    __slots__ = ("_loaded", "_loaders")

    def __init__(self, loaders: Mapping[str, Callable[[], Dialect]]) -> None:
        self._loaders = dict(loaders)
        self._loaded: dict[str, Dialect] = {}

    def __getitem__(self, style: str) -> Dialect:
        dialect = self._loaded.get(style)
        if dialect is None:
            dialect = self._loaded[style] = self._loaders[style]()
        return dialect

    def __contains__(self, style: object) -> bool:
        return style in self._loaders

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)


DIALECTS: Mapping[str, Dialect] = _Dialects(
    {"openai": _openai, "anthropic": _anthropic, "openai-responses": _responses}
)
"""Every wire dialect, by the `style` name a client selects it with."""

Emit = Callable[[MetricEvent], None]


@dataclass(slots=True)
class ModelRequest:
    """One model call: `body` is the dialect's request body for `model`, before shaping.

    `parts` lists the summaries of the non-text parts the body carries (for the `llm` event).
    """

    model: str
    body: dict[str, Any]
    parts: list[dict[str, Any]] | None = None
    parent: Any = None  # the run's span (`toolnexus._otel`): the model call's span is its child


@dataclass(frozen=True, slots=True)
class CallOptions:
    """How every call of one client is retried and shaped."""

    retries: int = 2
    retry_base_ms: float = 500
    retryable_statuses: Iterable[int] | None = None
    on_error: Callable[[dict[str, Any]], Any] | None = None
    request_params: Mapping[str, Any] | None = None
    body_transform: Callable[[dict[str, Any]], Any] | None = None


class Credentials:
    """The headers of each request: the API key by the library's rule, then the caller's.

    The key is `api_key` when given; else read from the environment at request time:
    `OPENROUTER_API_KEY` first for an OpenRouter URL, then the style's own variable
    (`OPENAI_API_KEY` / `ANTHROPIC_API_KEY`), then `OPENROUTER_API_KEY` when neither is set.
    A caller that authenticates through `headers` (e.g. Azure's `api-key`) gets no key from
    the environment, so none is ever sent to a host it was not meant for.
    """

    __slots__ = ("_api_key", "_dialect", "_extra", "_openrouter", "_static")

    def __init__(
        self,
        dialect: Dialect,
        base_url: str | None,
        api_key: str | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        self._dialect = dialect
        self._api_key = api_key
        # Refused before any request, and hidden wherever they could show up later.
        if api_key is not None:
            check_header_value("api_key", api_key)
            remember(api_key)
        for name, value in (headers or {}).items():
            check_header_value(str(name), str(value))
        remember_url(base_url)
        self._extra = dict(headers) if headers else None
        host = (urlsplit(base_url).hostname or "") if base_url is not None else ""
        self._openrouter = host == "openrouter.ai" or host.endswith(".openrouter.ai")
        # Headers that need no environment lookup are merged once; `None` ⇒ per request.
        self._static: dict[str, str] | None = None
        if base_url is None:  # a model in this process: nothing to authenticate
            self._static = dict(self._extra or {})
        elif api_key is not None:
            self._static = merge_headers(dialect.auth_headers(api_key), self._extra)
        elif self._extra and any(k.lower() in CREDENTIAL_HEADERS for k in self._extra):
            self._static = merge_headers(dialect.base_headers, self._extra)

    def _api_key_now(self) -> str:
        if self._api_key is not None:
            return self._api_key
        env = os.environ
        for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
            remember(env.get(name))
        openai_key = env.get("OPENAI_API_KEY") or None
        anthropic_key = env.get("ANTHROPIC_API_KEY") or None
        router_key = env.get("OPENROUTER_API_KEY") or None
        own = anthropic_key if self._dialect.style == "anthropic" else openai_key
        if router_key is not None and self._openrouter:
            return router_key
        if own is not None:
            return own
        if router_key is not None and openai_key is None and anthropic_key is None:
            return router_key
        raise MissingApiKey()

    def headers(self) -> dict[str, str]:
        """This request's headers; `MissingApiKey` when no key can be found."""
        if self._static is not None:
            return self._static
        return merge_headers(self._dialect.auth_headers(self._api_key_now()), self._extra)


async def _next_chunk(chunks: AsyncIterator[bytes]) -> bytes | None:
    try:
        return await anext(chunks)
    except StopAsyncIteration:
        return None


class Endpoint:
    """A model behind one dialect and one transport, with the client's retries and shaping.

    `base_url` is `None` for a model in this process. Every call emits one `llm` metric event
    (its retries included) through the `emit` it is given.
    """

    def __init__(
        self,
        dialect: Dialect,
        transport: Transport,
        options: CallOptions,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.dialect = dialect
        self.transport = transport
        self.base_url = base_url
        self.url = dialect.endpoint(base_url) if base_url is not None else ""
        self.credentials = Credentials(dialect, base_url, api_key, headers)
        self.options = options
        self.retry = RetryPolicy(
            retries=options.retries,
            base_ms=options.retry_base_ms,
            extra_statuses=options.retryable_statuses,
            on_error=options.on_error,
            transport_errors=transport.transport_errors,
            inline=transport.unwinds_promptly,
        )
        self._params = dict(options.request_params) if options.request_params else {}
        self._body_transform = options.body_transform
        # Whether a body needs `shape` at all: decided once, not per request.
        self.shapes = bool(self._params) or self._body_transform is not None

    @property
    def can_stream(self) -> bool:
        return self.transport.can_stream

    def with_transport(self, transport: Transport, options: CallOptions | None = None) -> Endpoint:
        """The same endpoint over another transport (e.g. one that wraps this one's), and with
        other call options when given."""
        other = Endpoint(self.dialect, transport, options if options is not None else self.options)
        other.base_url, other.url, other.credentials = self.base_url, self.url, self.credentials
        return other

    def check_credentials(self) -> None:
        """Raise now what the first request would raise for a missing API key (no network)."""
        self.credentials.headers()

    async def aclose(self) -> None:
        """Close the connections the transport owns (a caller-given HTTP client stays open)."""
        await self.transport.aclose()

    async def shape(self, body: dict[str, Any]) -> dict[str, Any]:
        """`request_params` merged into the body, then `body_transform` (when `shapes`)."""
        if self._params:
            body.update(self._params)
        if self._body_transform is not None:
            key = self.dialect.transcript_key
            if isinstance(body.get(key), list):
                # The transform rewrites this request, never the run's own transcript.
                body[key] = list(body[key])
            changed = await call_maybe_async(self._body_transform, body)
            if changed is not None:
                if not isinstance(changed, dict):
                    raise ConfigTypeError(
                        f"body_transform must return a dict or None, not {type(changed).__name__}"
                    )
                body = changed
        return body

    async def complete(self, request: ModelRequest, scope: RunScope, emit: Emit) -> Turn:
        """One whole answer, with its retries."""
        body = await self.shape(request.body) if self.shapes else request.body
        started = time.perf_counter()
        url, headers = self.url, self.credentials.headers()
        call = _otel.chat(self.dialect.provider, request, url)
        headers = call.start(headers, body)

        async def attempt() -> Turn:
            status, data, raw = await self.transport.post(url, headers, body)
            with provider_data(status, raw):
                return self.dialect.parse(status, data, raw)

        try:
            turn = await self.retry.call(attempt, scope)
        except BaseException as exc:
            call.end(None, exc)
            emit(llm_event(request.model, started, None, ok=False, parts=request.parts))
            raise
        call.end(turn)
        emit(llm_event(request.model, started, turn.usage, ok=True, parts=request.parts))
        return turn

    async def stream(
        self, request: ModelRequest, scope: RunScope, emit: Emit
    ) -> AsyncGenerator[str | ReasoningDelta | Turn, None]:
        """Yield the text and reasoning deltas of one streamed answer, then its `Turn`."""
        body = await self.shape(request.body) if self.shapes else request.body
        started = time.perf_counter()
        url, headers = self.url, self.credentials.headers()
        read = scope.inline if self.transport.unwinds_promptly else scope.race
        call = _otel.chat(self.dialect.provider, request, url)
        headers = call.start(headers, body)
        try:
            # Retries happen before the body is read: a half-streamed answer is never replayed.
            response = await self.retry.call(
                lambda: self.transport.open_stream(url, headers, body), scope
            )
            try:
                if response.is_json:
                    turn = await self._whole_body(response, read)
                    for thought in turn.reasoning_deltas():
                        yield thought
                    if turn.text:
                        yield turn.text
                else:
                    assembler = self.dialect.stream(response.status)
                    decoder = SSEDecoder()
                    chunks = response.chunks()
                    while not assembler.done:
                        chunk = await read(_next_chunk(chunks))
                        with provider_data(response.status):
                            events = decoder.feed(chunk) if chunk is not None else decoder.flush()
                        for event, data in events:
                            with provider_data(response.status, data):
                                delta = assembler.feed(event, data)
                            for thought in assembler.take_reasoning():
                                yield thought
                            if delta is not None:
                                yield delta
                                scope.check()  # cancel/deadline between stream events
                            if assembler.done:
                                break
                        if chunk is None:
                            break
                    if not assembler.done and assembler.finish_reason is None:
                        # The body ended without a terminator or a finish reason: a cut
                        # stream must not pass for a complete (shorter) answer.
                        raise ProviderError(
                            response.status,
                            "",
                            provider_message="stream ended before the response was complete",
                        )
                    with provider_data(response.status):
                        turn = assembler.turn()
                    await response.finish()
            finally:
                await response.aclose()  # a no-op after `finish`; an abort closes it here
        except BaseException as exc:
            call.end(None, exc)
            emit(llm_event(request.model, started, None, ok=False, parts=request.parts))
            raise
        call.end(turn)
        emit(llm_event(request.model, started, turn.usage, ok=True, parts=request.parts))
        yield turn

    async def _whole_body(
        self, response: StreamBody, read: Callable[[Awaitable[bytes | None]], Awaitable[Any]]
    ) -> Turn:
        """A provider that answered a streaming request with one JSON document."""
        parts: list[bytes] = []
        chunks = response.chunks()
        while (chunk := await read(_next_chunk(chunks))) is not None:
            parts.append(chunk)
        raw = b"".join(parts)
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            text = raw.decode("utf-8", "replace")
            raise ProviderError(
                response.status, text, provider_message=f"response is not JSON ({exc!r})"
            ) from None
        with provider_data(response.status, raw):
            return self.dialect.parse(response.status, data, raw)
