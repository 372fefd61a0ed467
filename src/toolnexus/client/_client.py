"""`Client`: options, the endpoint and API-key rules, and the public methods.

Over 600 lines because the public methods carry typed overloads (typed output for `run`, `ask`,
`stream` and their blocking twins), which type checkers need spelled out."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Unpack, overload
from urllib.parse import urlsplit

from toolnexus._aio import call_maybe_async
from toolnexus._body_limit import DEFAULT_MAX_RESPONSE_BYTES
from toolnexus._log import warn
from toolnexus._secrets import redact_url
from toolnexus.client._endpoint import DIALECTS, Endpoint
from toolnexus.client._events import MetricEvent, StreamEvent
from toolnexus.client._hooks import Hooks
from toolnexus.client._loop import RunLoop
from toolnexus.client._metrics import Metrics
from toolnexus.client._model_settings import ModelSettings, merge_settings
from toolnexus.client._options import (
    CALL_FIELDS,
    ClientChanges,
    ClientOptions,
    RunOptions,
    check_run_options,
    option_attribute,
    require_callable,
    require_int,
)
from toolnexus.client._output import OutputMode, resolve_output
from toolnexus.client._parts import PartPolicy, Prompt
from toolnexus.client._results import RunResult, TranslateResult, UsageLimits
from toolnexus.client._settings import RunSettings
from toolnexus.client._sync import SyncRunner
from toolnexus.client._tool_search import ToolSearch, check_tool_search
from toolnexus.client._transport import HttpxTransport, Transport
from toolnexus.client.memory import (
    ConversationStore,
    InMemoryConversationStore,
    KeyedLock,
    open_conversation_store,
)
from toolnexus.errors import ConfigError, ConfigTypeError, StreamingUnsupported
from toolnexus.types import Tool, error_message

if TYPE_CHECKING:
    import httpx2

    from toolnexus.toolkit import Toolkit

__all__ = ["Client", "Conversation", "create_client", "create_in_process_client"]

Style = Literal["openai", "anthropic", "openai-responses"]
# A user's `on_metric` may take the typed events or, as before they were typed, any dict.
OnMetricOption = Callable[[MetricEvent], Any] | Callable[[dict[str, Any]], Any]
T = TypeVar("T")


class _Unset:
    """The marker of a per-run option left to the client's default."""

    def __repr__(self) -> str:
        return "<client default>"


UNSET: Any = _Unset()
_NO_RUN_OPTIONS: RunOptions = {}


@dataclass(frozen=True, slots=True)
class _Shared:
    """What a variant takes over from the client it derives from (`None`: its own)."""

    metrics: Metrics
    store: ConversationStore | None
    parts: PartPolicy | None


class Client:
    """Runs the tool-calling loop against an OpenAI- or Anthropic-style endpoint.

    Create one per provider configuration and reuse it: it keeps one pooled HTTP client, the
    conversation store and the metric registry for its lifetime. Close it with `await aclose()`
    (or `async with`) to release the connections it owns. `create_client(...)` is the same call.
    `derive(**changes)` makes a variant that shares them.
    """

    # The options a run reads, as attributes: each reads (and setting one replaces) the
    # client's `ClientOptions`, so a change takes effect from the next run on.
    model = option_attribute[str]()
    system_prompt = option_attribute[str | None]()
    max_turns = option_attribute[int]()
    hooks = option_attribute[Hooks | None]()
    timeout_ms = option_attribute[float | None]()
    wait_for = option_attribute[Callable[..., Any] | None]()
    output_type = option_attribute[Any]()
    output_mode = option_attribute[OutputMode | None]()
    output_retries = option_attribute[int]()
    tool_search = option_attribute[ToolSearch | None]()
    usage_limits = option_attribute[UsageLimits | None]()
    raise_on_limit = option_attribute[bool]()
    model_settings = option_attribute[ModelSettings | None]()

    # Given by `_start`: the options, and the state they are not (shared by a derived client).
    _options: ClientOptions
    _endpoint: Endpoint
    _owns_endpoint: bool
    _store: ConversationStore
    _owned_store: Any
    _locks: KeyedLock
    _parts: PartPolicy
    _metrics: Metrics
    _metric_tasks: set[asyncio.Future[Any]]
    _sync: SyncRunner

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
        store: ConversationStore | str | os.PathLike[str] | None = None,
        on_metric: OnMetricOption | None = None,
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
        http_transport: Any = None,
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 1,
        tool_search: ToolSearch | None = "auto",
        usage_limits: UsageLimits | None = None,
        raise_on_limit: bool = False,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        model_settings: ModelSettings | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.strip():
            raise ConfigError("base_url is required, e.g. https://api.openai.com/v1")
        if urlsplit(base_url).scheme not in ("http", "https"):
            raise ConfigError(f"base_url must be an http:// or https:// URL, not {base_url!r}")
        if style not in DIALECTS:
            raise ConfigError(
                f'style must be "openai", "anthropic" or "openai-responses", not {style!r}'
            )
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigTypeError(f"api_key must be a string, not {type(api_key).__name__}")
        if headers is not None and not isinstance(headers, Mapping):
            raise ConfigTypeError(f"headers must be a dict, not {type(headers).__name__}")
        if read_timeout_ms is None or read_timeout_ms <= 0:
            raise ConfigError(f"read_timeout_ms must be > 0, not {read_timeout_ms!r}")
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1024
        ):
            raise ConfigError(
                f"max_response_bytes must be a whole number >= 1024, not {max_response_bytes!r}"
            )
        # The parameters above are named as `ClientOptions`' fields: the rest of them make it.
        options = ClientOptions.pick(locals())
        transport: Transport
        if http_transport is not None:
            if http_client is not None:
                raise ConfigError("pass http_client or http_transport, not both")
            # The published package's blocking post/open seam, run in worker threads.
            from toolnexus.client._blocking import ThreadedTransport

            transport = ThreadedTransport(http_transport, read_timeout_ms / 1000)
        else:
            transport = HttpxTransport(http_client, read_timeout_ms / 1000, max_response_bytes)
        endpoint = Endpoint(
            DIALECTS[style],
            transport,
            options.call_options(),
            base_url=base_url,
            api_key=api_key,
            headers=headers,
        )
        self._start(options, endpoint, store)

    @classmethod
    def over_transport(
        cls,
        transport: Transport,
        *,
        style: Style = "openai",
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        store: ConversationStore | str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Client:
        """A client whose requests go to `transport` (a model in this process, a test model, a
        caller's sender) instead of an HTTP provider; `base_url=None` means no URL and no API
        key. `options` are `Client`'s other options (`model` among them)."""
        checked = ClientOptions(**options)
        endpoint = Endpoint(
            DIALECTS[style],
            transport,
            checked.call_options(),
            base_url=base_url,
            api_key=api_key,
            headers=headers,
        )
        return cls._started(checked, endpoint, store)

    def derive(
        self,
        *,
        transport: Transport | None = None,
        locks: KeyedLock | None = None,
        **changes: Unpack[ClientChanges],
    ) -> Client:
        """A client like this one with `changes` to its options: another model, system prompt,
        hooks, store, typed output, ... (any option of `Client(...)` but those that pick the
        endpoint: `base_url`, `style`, `api_key`, `headers` and the HTTP ones).

        The variant shares this client's endpoint and its connections, its metric registry
        (`metrics()` of either shows both), and, unless `store` is changed, its conversation
        store. Closing the variant closes only a store it opened from a config string; closing
        this client closes the connections they share. Changed options are checked as
        `Client(...)` checks them. `transport` (a model transport of this library, e.g. one
        that wraps this client's) and `locks` (the conversation locks of a shared store) are
        for the library's own wrappers.
        """
        keep_store = "store" not in changes
        store = changes.get("store")
        given = {name: value for name, value in changes.items() if name != "store"}
        options = self._options.replace(**given) if given else self._options
        endpoint = self._endpoint
        call = endpoint.options if CALL_FIELDS.isdisjoint(given) else options.call_options()
        if transport is not None or call is not endpoint.options:
            endpoint = endpoint.with_transport(
                transport if transport is not None else endpoint.transport, call
            )
        keep_parts = "on_unsupported_part" not in given and "max_part_bytes" not in given
        return type(self)._started(
            options,
            endpoint,
            store,
            shared=_Shared(
                metrics=self._metrics,
                store=self._store if keep_store else None,
                parts=self._parts if keep_parts else None,  # its warn-once memory too
            ),
            locks=locks if locks is not None else (self._locks if keep_store else None),
        )

    @classmethod
    def _started(
        cls,
        options: ClientOptions,
        endpoint: Endpoint,
        store: ConversationStore | str | os.PathLike[str] | None,
        *,
        shared: _Shared | None = None,
        locks: KeyedLock | None = None,
    ) -> Client:
        """A client built from checked `options` without running `__init__` again."""
        client = cls.__new__(cls)
        client._start(options, endpoint, store, shared=shared, locks=locks)
        return client

    def _start(
        self,
        options: ClientOptions,
        endpoint: Endpoint,
        store: ConversationStore | str | os.PathLike[str] | None,
        *,
        shared: _Shared | None = None,
        locks: KeyedLock | None = None,
    ) -> None:
        """Give a client built from `options` its state: fresh, or with what `shared` (from
        the client it derives from) carries: the metric registry always, and the store and
        the part policy when the variant keeps them."""
        if options.model_settings is not None:
            endpoint.dialect.check_settings(options.model_settings)
        self._options = options
        self._endpoint = endpoint
        self._owns_endpoint = shared is None
        if shared is not None and shared.store is not None:
            self._store = shared.store
            self._owned_store = None
        else:
            # A config string or path opens a store this client owns (and closes); an object
            # is used as given. Unusable values raise here.
            opened = open_conversation_store(store) if store is not None else None
            self._store = opened if opened is not None else InMemoryConversationStore()
            self._owned_store = opened if opened is not store else None
        self._locks = locks if locks is not None else KeyedLock()
        if shared is not None and shared.parts is not None:
            self._parts = shared.parts
        else:
            self._parts = PartPolicy(options.on_unsupported_part, options.max_part_bytes)
        self._metrics = shared.metrics if shared is not None else Metrics()
        self._metric_tasks = set()
        self._sync = SyncRunner()

    @property
    def options(self) -> ClientOptions:
        """This client's options as one checked, frozen value (`derive` makes a variant)."""
        return self._options

    @property
    def style(self) -> Style:
        """The wire dialect: `"openai"`, `"anthropic"` or `"openai-responses"`."""
        style: Style = self._endpoint.dialect.style  # type: ignore[assignment]
        return style

    @property
    def can_stream(self) -> bool:
        """Whether this client's model transport can stream (`stream` needs it)."""
        return self._endpoint.can_stream

    @property
    def base_url(self) -> str | None:
        """The provider's base URL; `None` for a model in this process."""
        return self._endpoint.base_url

    def check_api_key(self) -> None:
        """Raise now what the first request would raise when no API key can be found.

        Reads the environment by the same rule as a request (no network). Call it to fail
        fast, before starting tool servers; a client given `api_key`, one authenticated
        through `headers` and an in-process client never raise. The error is `MissingApiKey`
        (a `ConfigError`, hence a `ValueError`): `No API key: set api_key or
        OPENROUTER_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY`.
        """
        self._endpoint.check_credentials()

    def _settings(
        self, output_type: Any = UNSET, options: RunOptions = _NO_RUN_OPTIONS
    ) -> RunSettings:
        """One run's snapshot: this client's options, with the run's own over them."""
        o = self._options
        if options:
            check_run_options(options)
            output_retries = options.get("output_retries")
            raise_on_limit = options.get("raise_on_limit")
            usage_limits = options.get("usage_limits")
            tool_search = options.get("tool_search", UNSET)
            knobs = merge_settings(o.model_settings, options.get("model_settings"))
            output_mode = options.get("output_mode")
            deps = options.get("deps")
        else:
            output_retries = raise_on_limit = usage_limits = output_mode = deps = None
            tool_search = UNSET
            knobs = o.model_settings
        if knobs is not None:
            self._endpoint.dialect.check_settings(knobs)
        if output_type is UNSET:
            output_type = o.output_type
        return RunSettings(
            endpoint=self._endpoint,
            model=o.model,
            system_prompt=o.system_prompt,
            max_turns=o.max_turns,
            hooks=o.hooks,
            timeout_ms=o.timeout_ms,
            wait_for=o.wait_for,
            tool_concurrency=o.tool_concurrency,
            parts=self._parts,
            store=self._store,
            locks=self._locks,
            emit=self._emit,
            output=(
                None
                if output_type is None
                else resolve_output(
                    output_type, output_mode or o.output_mode, self._endpoint.dialect.style
                )
            ),
            output_retries=(
                o.output_retries
                if output_retries is None
                else require_int("output_retries", output_retries, 0)
            ),
            deps=deps,
            usage_limits=usage_limits if usage_limits is not None else o.usage_limits,
            raise_on_limit=o.raise_on_limit if raise_on_limit is None else raise_on_limit,
            model_settings=knobs,
            tool_search=o.tool_search if tool_search is UNSET else check_tool_search(tool_search),
        )

    def _emit(self, event: MetricEvent) -> None:
        """Record a metric event and hand it to `on_metric` (whose failure never breaks a run)."""
        self._metrics.record(event)
        on_metric = self._options.on_metric
        if on_metric is None:
            return
        try:
            reply = on_metric(event)
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
    # `options` are the per-run `RunOptions` (`output_mode`, `output_retries`, `tool_search`,
    # `deps`, `usage_limits`, `raise_on_limit`, `model_settings`); `output_type` stays a
    # parameter of its own so that the overloads type the result by it.

    @overload
    async def run(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        history: Sequence[dict[str, Any]] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        output_type: type[T],
        **options: Unpack[RunOptions],
    ) -> RunResult[T]: ...

    @overload
    async def run(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        history: Sequence[dict[str, Any]] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> RunResult[Any]: ...

    async def run(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        history: Sequence[dict[str, Any]] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> RunResult[Any]:
        """Run the loop once: call the model, run its tools, repeat until it answers.

        With `output_type`, `result.output` is the answer validated as that type (see
        `output_mode` and `output_retries`); `deps` reaches every tool as `ctx.deps`.
        """
        settings = self._settings(output_type, options)
        return await RunLoop(settings, prompt, toolkit, history, cancel, streaming=False).result()

    @overload
    async def ask(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        on_text: Callable[[str], Any] | None = None,
        cancel: asyncio.Event | None = None,
        output_type: type[T],
        **options: Unpack[RunOptions],
    ) -> RunResult[T]: ...

    @overload
    async def ask(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        on_text: Callable[[str], Any] | None = None,
        cancel: asyncio.Event | None = None,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> RunResult[Any]: ...

    async def ask(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        on_text: Callable[[str], Any] | None = None,
        cancel: asyncio.Event | None = None,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> RunResult[Any]:
        """`run` with memory: with `id`, continue and save that conversation (atomic per id).

        With `on_text`, the answer streams and `on_text(delta)` (sync or async) sees every delta.
        """
        if on_text is None:
            return await RunLoop(
                self._settings(output_type, options),
                prompt,
                toolkit,
                None,
                cancel,
                conversation_id=id,
            ).result()
        require_callable("on_text", on_text)
        events = self.stream(
            prompt, toolkit, id=id, cancel=cancel, output_type=output_type, **options
        )
        result: RunResult[Any] | None = None
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

    @overload
    def stream(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        cancel: asyncio.Event | None = None,
        output_type: type[T],
        **options: Unpack[RunOptions],
    ) -> AsyncGenerator[StreamEvent[T], None]: ...

    @overload
    def stream(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        cancel: asyncio.Event | None = None,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> AsyncGenerator[StreamEvent[Any], None]: ...

    def stream(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        cancel: asyncio.Event | None = None,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> AsyncGenerator[StreamEvent[Any], None]:
        """The loop as an async iterator of events; the last one is `{"type": "done", ...}`.

        With `id`, the conversation is loaded before the first request and saved at `done`.
        With `output_type`, an `{"type": "output", "output": value}` event precedes `done`.
        """
        if not self._endpoint.can_stream:
            from toolnexus.client._inprocess import STREAM_UNSUPPORTED

            raise StreamingUnsupported(STREAM_UNSUPPORTED)
        settings = self._settings(output_type, options)
        return RunLoop(
            settings, prompt, toolkit, None, cancel, streaming=True, conversation_id=id
        ).events()

    def conversation(
        self,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> Conversation:
        """A stateful conversation: `await send(prompt)` keeps the transcript between turns.

        `output_type` and the run options (`deps`, ...) apply to every `send`.
        """
        return Conversation(self, toolkit, cancel, output_type=output_type, **options)

    # -- the same, for synchronous code ---------------------------------------------------------

    @overload
    def run_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        history: Sequence[dict[str, Any]] | None = None,
        *,
        output_type: type[T],
        **options: Unpack[RunOptions],
    ) -> RunResult[T]: ...

    @overload
    def run_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        history: Sequence[dict[str, Any]] | None = None,
        *,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> RunResult[Any]: ...

    def run_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        history: Sequence[dict[str, Any]] | None = None,
        *,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> RunResult[Any]:
        """`run` for code without an event loop (or in a loop's worker thread); blocks.

        The run executes on the toolkit's loop, else on one this client keeps for its sync
        calls (so pooled connections are reused); `close()` releases it. Ctrl-C cancels the run.
        """
        loop = self._sync.loop_for(toolkit)
        coro = self.run(prompt, toolkit, history, output_type=output_type, **options)
        return self._sync.call(loop, coro)

    @overload
    def ask_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        output_type: type[T],
        **options: Unpack[RunOptions],
    ) -> RunResult[T]: ...

    @overload
    def ask_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> RunResult[Any]: ...

    def ask_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> RunResult[Any]:
        """`ask` for synchronous code (see `run_sync`)."""
        loop = self._sync.loop_for(toolkit)
        coro = self.ask(prompt, toolkit, id=id, output_type=output_type, **options)
        return self._sync.call(loop, coro)

    @overload
    def stream_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        output_type: type[T],
        **options: Unpack[RunOptions],
    ) -> Iterator[StreamEvent[T]]: ...

    @overload
    def stream_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> Iterator[StreamEvent[Any]]: ...

    def stream_sync(
        self,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        id: str | None = None,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> Iterator[StreamEvent[Any]]:
        """`stream` as a plain iterator of the same events (see `run_sync`).

        Stopping early (`break`, or closing the iterator) ends the run and closes its answer.
        """
        loop = self._sync.loop_for(toolkit)
        events = self.stream(prompt, toolkit, id=id, output_type=output_type, **options)
        return self._sync.iterate(loop, events)

    def close(self) -> None:
        """`aclose` for synchronous code; also closes the toolkits the sync calls ran on this
        client's own loop (their connections were opened there) and stops that loop."""
        self._sync.close(self.aclose)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def translate(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
    ) -> TranslateResult:
        """One provider call in OpenAI shapes: no loop, no tool execution, nothing stored."""
        from toolnexus.client._translate import translate

        return await translate(
            self._settings(),
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
        """Close the HTTP connections this client owns (an injected `http_client` stays open;
        a derived client's belong to the client it derives from), and the store it opened from
        a config string."""
        if self._owns_endpoint:
            await self._endpoint.aclose()
        store, self._owned_store = self._owned_store, None
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        where = redact_url(self.base_url) if self.base_url is not None else "in-process"
        return f"<Client {self.style} {self.model!r} at {where}>"


class Conversation:
    """A transcript kept between `send` calls (one at a time)."""

    def __init__(
        self,
        client: Client,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        output_type: Any = UNSET,
        **options: Unpack[RunOptions],
    ) -> None:
        check_run_options(options)
        self._client = client
        self._toolkit = toolkit
        self._cancel = cancel
        self._output_type = output_type
        self._options = options
        self._messages: list[dict[str, Any]] = []
        self._lock = asyncio.Lock()

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The transcript so far."""
        return self._messages

    async def send(self, prompt: Prompt) -> RunResult[Any]:
        """Run `prompt` with the retained history and keep the new transcript."""
        async with self._lock:
            result = await self._client.run(
                prompt,
                self._toolkit,
                history=self._messages or None,
                cancel=self._cancel,
                output_type=self._output_type,
                **self._options,
            )
            self._messages = result.messages
            return result

    def reset(self) -> None:
        """Forget the transcript."""
        self._messages = []


create_client = Client
"""`create_client(base_url=..., style=..., model=..., **options)`: the same as `Client(...)`."""

_NOT_IN_PROCESS = ("base_url", "api_key", "style", "http_client", "http_transport")


def create_in_process_client(
    *, model: str, generate: Callable[[dict[str, Any]], Any], **options: Any
) -> Client:
    """A `Client` over a model in this process: `generate(request)` returns one assistant turn.

    Takes every `create_client` option except `base_url`, `api_key`, `style`, `http_client` and
    `http_transport`. `retries` defaults to 0 (a local failure is final); streaming is refused.
    """
    for name in _NOT_IN_PROCESS:
        if name in options:
            raise ConfigTypeError(
                f"create_in_process_client() does not take {name!r}: an in-process model has "
                "no wire to configure (create_client is for a model behind an HTTP endpoint)"
            )
    if not callable(generate):
        raise ConfigTypeError(
            "create_in_process_client() needs a callable `generate`: generate(request) returns "
            "one assistant turn"
        )
    unknown = sorted(set(options) - set(inspect.signature(Client).parameters))
    if unknown:
        raise ConfigTypeError(f"create_in_process_client() got an unexpected option {unknown[0]!r}")
    options.setdefault("retries", 0)
    options.pop("read_timeout_ms", None)  # nothing to read from without HTTP
    options.pop("max_response_bytes", None)
    from toolnexus.client._inprocess import InProcessModel

    return Client.over_transport(InProcessModel(generate), model=model, **options)
