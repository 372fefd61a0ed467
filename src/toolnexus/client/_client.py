"""`Client`: options, the endpoint and API-key rules, and the public methods."""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from toolnexus._aio import call_maybe_async
from toolnexus._log import warn
from toolnexus.client._anthropic import ANTHROPIC, AnthropicWire
from toolnexus.client._errors import MissingApiKey
from toolnexus.client._hooks import Hooks, resolve_hooks
from toolnexus.client._inprocess import STREAM_UNSUPPORTED, InProcessTransport
from toolnexus.client._loop import RunLoop
from toolnexus.client._metrics import Metrics, llm_event
from toolnexus.client._openai import OPENAI, OpenAIWire
from toolnexus.client._parts import PartPolicy, Prompt
from toolnexus.client._results import RunResult, TranslateResult
from toolnexus.client._retry import RetryPolicy
from toolnexus.client._scope import RunScope
from toolnexus.client._transport import HttpTransport, Transport
from toolnexus.client._wire import CREDENTIAL_HEADERS, Turn, merge_headers
from toolnexus.client.memory import ConversationStore, InMemoryConversationStore, KeyedLock
from toolnexus.errors import ConfigError
from toolnexus.types import error_message

if TYPE_CHECKING:
    import httpx2

    from toolnexus.toolkit import Toolkit

__all__ = ["Client", "Conversation", "create_client", "create_in_process_client"]

Style = Literal["openai", "anthropic"]
Event = dict[str, Any]

# Body keys the library owns; `request_params` may not set them (body_transform may).
FORBIDDEN_PARAMS = ("messages", "tools", "stream")


def _require_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return value


def _require_callable(name: str, value: Any) -> Any:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable, not {type(value).__name__}")
    return value


def _filtered_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError(f"request_params must be a dict, not {type(params).__name__}")
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key in FORBIDDEN_PARAMS:
            warn(f'request_params key "{key}" is not allowed — ignored (use body_transform)')
        else:
            out[key] = value
    return out


class Client:
    """Runs the tool-calling loop against an OpenAI- or Anthropic-style endpoint.

    Create one per provider configuration and reuse it: it keeps one pooled HTTP client, the
    conversation store and the metric registry for its lifetime. Close it with `await aclose()`
    (or `async with`) to release the connections it owns. `create_client(...)` is the same call.
    """

    def __init__(
        self,
        *,
        base_url: str,
        style: Style,
        model: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        system_prompt: str | None = None,
        max_turns: int = 10,
        hooks: Hooks | Mapping[str, Any] | Any = None,
        retries: int = 2,
        retry_base_ms: float = 500,
        timeout_ms: float | None = None,
        store: ConversationStore | None = None,
        on_metric: Callable[[dict[str, Any]], Any] | None = None,
        wait_for: Callable[..., Any] | None = None,
        request_params: Mapping[str, Any] | None = None,
        body_transform: Callable[[dict[str, Any]], Any] | None = None,
        on_error: Callable[[dict[str, Any]], Any] | None = None,
        retryable_statuses: Iterable[int] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        read_timeout_ms: float = 600000,
        tool_concurrency: int = 16,
        on_unsupported_part: Literal["error", "text"] | None = None,
        max_part_bytes: int | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.strip():
            raise ConfigError("base_url is required, e.g. https://api.openai.com/v1")
        if urlsplit(base_url).scheme not in ("http", "https"):
            raise ConfigError(f"base_url must be an http:// or https:// URL, not {base_url!r}")
        if style not in ("openai", "anthropic"):
            raise ConfigError(f'style must be "openai" or "anthropic", not {style!r}')
        if not isinstance(model, str) or not model:
            raise ConfigError("model is required: the provider's model id, sent verbatim")
        if api_key is not None and not isinstance(api_key, str):
            raise TypeError(f"api_key must be a string, not {type(api_key).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a string, not {type(system_prompt).__name__}")
        if headers is not None and not isinstance(headers, Mapping):
            raise TypeError(f"headers must be a dict, not {type(headers).__name__}")
        if timeout_ms is not None and (isinstance(timeout_ms, bool) or timeout_ms <= 0):
            raise ConfigError(f"timeout_ms must be > 0 or None, not {timeout_ms!r}")
        if retry_base_ms is None or retry_base_ms < 0:
            raise ConfigError(f"retry_base_ms must be >= 0, not {retry_base_ms!r}")
        if read_timeout_ms is None or read_timeout_ms <= 0:
            raise ConfigError(f"read_timeout_ms must be > 0, not {read_timeout_ms!r}")
        if store is not None and not (
            callable(getattr(store, "get", None)) and callable(getattr(store, "save", None))
        ):
            raise TypeError("store must have async get(id) and save(id, messages) methods")
        self._wire: OpenAIWire | AnthropicWire = OPENAI if style == "openai" else ANTHROPIC
        self._transport: Transport = HttpTransport(http_client, read_timeout_ms / 1000)
        self.style: Style = style
        self.base_url: str | None = base_url
        self.model = model
        self.system_prompt = system_prompt
        self.max_turns = _require_int("max_turns", max_turns, 1)
        self._tool_concurrency = _require_int("tool_concurrency", tool_concurrency, 1)
        self.timeout_ms = timeout_ms
        self.hooks = resolve_hooks(hooks)
        self.wait_for = _require_callable("wait_for", wait_for)
        self._body_transform = _require_callable("body_transform", body_transform)
        self._on_metric = _require_callable("on_metric", on_metric)
        self._policy = RetryPolicy(
            retries=_require_int("retries", retries, 0),
            base_ms=retry_base_ms,
            extra_statuses=retryable_statuses,
            on_error=_require_callable("on_error", on_error),
            transport_errors=self._transport.transport_errors,
            inline=self._transport.unwinds_promptly,
        )
        self._parts = PartPolicy(on_unsupported_part, max_part_bytes)
        self._params = _filtered_params(request_params)
        self._api_key = api_key
        self._extra_headers = dict(headers) if headers else None
        self._url = self._wire.endpoint(base_url)
        host = urlsplit(base_url).hostname or ""
        # OPENROUTER_API_KEY is preferred for OpenRouter URLs (the API-key rule).
        self._openrouter = host == "openrouter.ai" or host.endswith(".openrouter.ai")
        # Headers that need no environment lookup are merged once; `None` ⇒ per request.
        self._static_headers: dict[str, str] | None = None
        if api_key is not None:
            self._static_headers = merge_headers(
                self._wire.auth_headers(api_key), self._extra_headers
            )
        elif self._extra_headers and any(
            k.lower() in CREDENTIAL_HEADERS for k in self._extra_headers
        ):
            # The caller authenticates through `headers` (e.g. Azure's `api-key`): no key from
            # the environment is looked up, so none is ever sent to a host it was not meant for.
            self._static_headers = merge_headers(self._wire.base_headers, self._extra_headers)
        self._store: ConversationStore = store if store is not None else InMemoryConversationStore()
        self._locks = KeyedLock()
        self._metrics = Metrics()
        self._metric_tasks: set[asyncio.Future[Any]] = set()

    def _use_in_process(self, transport: Transport) -> None:
        """Answer from a model in this process instead of an HTTP endpoint: no URL, no key."""
        self._transport = transport
        self._policy.transport_errors = transport.transport_errors
        self._policy.inline = transport.unwinds_promptly
        self.base_url = None
        self._url = ""
        self._static_headers = dict(self._extra_headers or {})

    # -- request assembly -------------------------------------------------------------------

    def _api_key_now(self) -> str:
        """The API key by the contract's rule, read from the environment at request time."""
        if self._api_key is not None:
            return self._api_key
        env = os.environ
        openai_key = env.get("OPENAI_API_KEY") or None
        anthropic_key = env.get("ANTHROPIC_API_KEY") or None
        router_key = env.get("OPENROUTER_API_KEY") or None
        own = openai_key if self.style == "openai" else anthropic_key
        if router_key is not None and self._openrouter:
            return router_key
        if own is not None:
            return own
        if router_key is not None and openai_key is None and anthropic_key is None:
            return router_key
        raise MissingApiKey()

    def check_api_key(self) -> None:
        """Raise now what the first request would raise when no API key can be found.

        Reads the environment by the same rule as a request (no network). Call it to fail
        fast, before starting tool servers; a client given `api_key`, one authenticated
        through `headers` and an in-process client never raise. The error is a `ValueError`:
        `No API key: set api_key or OPENROUTER_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY`.
        """
        self._request_headers()

    def _request_headers(self) -> dict[str, str]:
        if self._static_headers is not None:
            return self._static_headers
        return merge_headers(self._wire.auth_headers(self._api_key_now()), self._extra_headers)

    async def _shape_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """`request_params` merged into a base body, then `body_transform`."""
        if self._params:
            body.update(self._params)
        if self._body_transform is not None:
            if isinstance(body.get("messages"), list):
                # The transform rewrites this request, never the run's own transcript.
                body["messages"] = list(body["messages"])
            changed = await call_maybe_async(self._body_transform, body)
            if changed is not None:
                if not isinstance(changed, dict):
                    raise TypeError(
                        f"body_transform must return a dict or None, not {type(changed).__name__}"
                    )
                body = changed
        return body

    async def _complete(
        self,
        model: str,
        body: dict[str, Any],
        scope: RunScope,
        parts: list[dict[str, Any]] | None = None,
    ) -> Turn:
        """One non-streamed LLM call with its retries; emits the call's `llm` event."""
        started = time.perf_counter()
        url, headers = self._url, self._request_headers()

        async def attempt() -> Turn:
            status, data, raw = await self._transport.post(url, headers, body)
            return self._wire.parse(status, data, raw)

        try:
            turn = await self._policy.call(attempt, scope)
        except BaseException:
            self._emit(llm_event(model, started, None, ok=False, parts=parts))
            raise
        self._emit(llm_event(model, started, turn.usage, ok=True, parts=parts))
        return turn

    def _emit(self, event: Event) -> None:
        """Record a metric event and hand it to `on_metric` (whose failure never breaks a run)."""
        self._metrics.record(event)
        if self._on_metric is None:
            return
        try:
            reply = self._on_metric(event)
        except Exception as exc:
            warn(f"on_metric raised: {error_message(exc)}")
            return
        if inspect.isawaitable(reply):
            task = asyncio.ensure_future(reply)
            self._metric_tasks.add(task)
            task.add_done_callback(self._metric_done)

    def _metric_done(self, task: asyncio.Future[Any]) -> None:
        self._metric_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            warn(f"on_metric raised: {error_message(task.exception())}")  # type: ignore[arg-type]

    # -- public API -------------------------------------------------------------------------

    async def run(
        self,
        prompt: Prompt,
        toolkit: Toolkit | None = None,
        history: Sequence[dict[str, Any]] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """Run the loop once: call the model, run its tools, repeat until it answers."""
        return await RunLoop(self, prompt, toolkit, history, cancel, streaming=False).result()

    async def ask(
        self,
        prompt: Prompt,
        toolkit: Toolkit | None = None,
        *,
        id: str | None = None,
        on_text: Callable[[str], Any] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """`run` with memory: with `id`, continue and save that conversation (atomic per id).

        With `on_text`, the answer streams and `on_text(delta)` (sync or async) sees every delta.
        """
        if on_text is None:
            return await RunLoop(self, prompt, toolkit, None, cancel, conversation_id=id).result()
        _require_callable("on_text", on_text)
        events = self.stream(prompt, toolkit, id=id, cancel=cancel)
        result: RunResult | None = None
        try:
            async for event in events:
                if event["type"] == "text":
                    try:
                        await call_maybe_async(on_text, event["delta"])
                    except BaseException as exc:
                        await events.athrow(exc)  # the run ends with it (its `run` event says so)
                        raise
                elif event["type"] == "done":
                    result = event["result"]
        finally:
            await events.aclose()
        assert result is not None
        return result

    def stream(
        self,
        prompt: Prompt,
        toolkit: Toolkit | None = None,
        *,
        id: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The loop as an async iterator of events; the last one is `{"type": "done", ...}`.

        With `id`, the conversation is loaded before the first request and saved at `done`.
        """
        if not self._transport.can_stream:
            raise RuntimeError(STREAM_UNSUPPORTED)
        return RunLoop(
            self, prompt, toolkit, None, cancel, streaming=True, conversation_id=id
        ).events()

    def conversation(
        self, toolkit: Toolkit | None = None, cancel: asyncio.Event | None = None
    ) -> Conversation:
        """A stateful conversation: `await send(prompt)` keeps the transcript between turns."""
        return Conversation(self, toolkit, cancel)

    async def translate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
    ) -> TranslateResult:
        """One provider call in OpenAI shapes: no loop, no tool execution, nothing stored."""
        from toolnexus.client._translate import translate

        return await translate(
            self,
            messages,
            tools=tools,
            toolkit=toolkit,
            tool_choice=tool_choice,
            system=system,
            max_tokens=max_tokens,
            cancel=cancel,
        )

    def metrics(self) -> str:
        """Every metric event so far as Prometheus text."""
        return self._metrics.render()

    @property
    def conversation_store(self) -> ConversationStore:
        """The store `ask(id=...)` uses: the one passed as `store`, else the default."""
        return self._store

    async def aclose(self) -> None:
        """Close the HTTP connections this client owns (an injected `http_client` stays open)."""
        await self._transport.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        where = self.base_url if self.base_url is not None else "in-process"
        return f"<Client {self.style} {self.model!r} at {where}>"


class Conversation:
    """A transcript kept between `send` calls (one at a time)."""

    def __init__(
        self, client: Client, toolkit: Toolkit | None, cancel: asyncio.Event | None
    ) -> None:
        self._client = client
        self._toolkit = toolkit
        self._cancel = cancel
        self._messages: list[dict[str, Any]] = []
        self._lock = asyncio.Lock()

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The transcript so far."""
        return self._messages

    async def send(self, prompt: Prompt) -> RunResult:
        """Run `prompt` with the retained history and keep the new transcript."""
        async with self._lock:
            result = await self._client.run(
                prompt, self._toolkit, history=self._messages or None, cancel=self._cancel
            )
            self._messages = result.messages
            return result

    def reset(self) -> None:
        """Forget the transcript."""
        self._messages = []


create_client = Client
"""`create_client(base_url=..., style=..., model=..., **options)`: the same as `Client(...)`."""

_NOT_IN_PROCESS = ("base_url", "api_key", "style", "http_client")
_IN_PROCESS_URL = "http://in-process.invalid"  # validated, never contacted


def create_in_process_client(
    *, model: str, generate: Callable[[dict[str, Any]], Any], **options: Any
) -> Client:
    """A `Client` over a model in this process: `generate(request)` returns one assistant turn.

    Takes every `create_client` option except `base_url`, `api_key`, `style` and
    `http_client`. `retries` defaults to 0 (a local failure is final); streaming is refused.
    """
    for name in _NOT_IN_PROCESS:
        if name in options:
            raise TypeError(f"create_in_process_client() does not take {name!r}")
    if not callable(generate):
        raise TypeError("create_in_process_client() needs a callable generate(request)")
    unknown = sorted(set(options) - set(inspect.signature(Client).parameters))
    if unknown:
        raise TypeError(f"create_in_process_client() got an unexpected option {unknown[0]!r}")
    options.setdefault("retries", 0)
    client = Client(base_url=_IN_PROCESS_URL, style="openai", model=model, **options)
    client._use_in_process(InProcessTransport(generate))
    return client
