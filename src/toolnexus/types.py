"""Core types shared by every tool source: `Tool`, `ToolResult`, `Context`, suspension data."""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeAlias

from typing_extensions import TypeVar

from toolnexus._aio import is_async_callable, run_in_thread
from toolnexus._log import tool_raised
from toolnexus.errors import ConfigError, ConfigTypeError, ToolnexusError, WireFormatError

if TYPE_CHECKING:
    from toolnexus.content import ContentPart

__all__ = [
    "LOG_LEVELS",
    "TOOL_SOURCES",
    "Answer",
    "Caller",
    "Context",
    "JSONSchema",
    "McpStatus",
    "Request",
    "Signal",
    "Tool",
    "ToolContext",
    "ToolResult",
    "ToolSource",
    "ToolSuspended",
    "answer_declined",
    "answer_output",
    "auth_required",
    "pending",
    "pending_of",
    "sanitize",
]

ToolSource: TypeAlias = Literal["mcp", "skill", "native", "http", "builtin", "a2a", "custom"]
JSONSchema: TypeAlias = dict[str, Any]
"""A JSON Schema object (a tool's `input_schema`)."""
McpStatus: TypeAlias = Literal["connected", "disabled", "failed", "needs_auth"]
"""The state of one configured MCP server."""
TOOL_SOURCES: tuple[str, ...] = ("mcp", "skill", "native", "http", "builtin", "a2a", "custom")


class Signal(Protocol):
    """A cancellation token: anything with `is_set()`, typically an `asyncio.Event`."""

    def is_set(self) -> bool: ...


@dataclass(slots=True, init=False, repr=False)
class ToolResult:
    """What a tool hands back to the model.

    `output` is the text every reader sees; `parts` (images, documents, audio) travel to the
    model beside it. `parts` accepts `ContentPart`s, part dicts and `str`s and holds validated
    canonical part dicts (`None` when there are none); an invalid item raises `ContentPartError`.
    """

    output: str
    is_error: bool
    metadata: dict[str, Any] | None
    parts: list[dict[str, Any]] | None

    def __init__(
        self,
        output: str,
        is_error: bool = False,
        metadata: dict[str, Any] | None = None,
        parts: Sequence[ContentPart | Mapping[str, Any] | str] | None = None,
    ) -> None:
        self.output = output
        self.is_error = is_error
        self.metadata = metadata
        if parts:
            from toolnexus.content import normalize_parts

            self.parts = normalize_parts(parts) or None
        else:
            self.parts = None

    def __repr__(self) -> str:
        fields = f"output={self.output!r}, is_error={self.is_error!r}, metadata={self.metadata!r}"
        if self.parts:
            # Parts by summary, never their base64: a repr ends up in logs and tracebacks.
            from toolnexus.content import from_dict

            fields += f", parts=[{', '.join(repr(from_dict(p)) for p in self.parts)}]"
        return f"ToolResult({fields})"


@dataclass(slots=True)
class Request:
    """An out-of-band request carried by a suspended tool result (wire keys, camelCase kept)."""

    id: str
    kind: str
    prompt: str
    url: str | None = None
    data: dict[str, Any] | None = None
    expiresAt: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form: the fixed keys, optional ones omitted when `None`."""
        return {
            "id": self.id,
            "kind": self.kind,
            "prompt": self.prompt,
            **_present(url=self.url, data=self.data, expiresAt=self.expiresAt),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Request:
        """A `Request` from its wire form (`id` and `kind` required)."""
        return cls(
            id=str(_required(data, "id", "Request")),
            kind=str(_required(data, "kind", "Request")),
            prompt=str(data.get("prompt", "")),
            url=data.get("url"),
            data=data.get("data"),
            expiresAt=data.get("expiresAt"),
        )


@dataclass(slots=True)
class Answer:
    """The host's resolution of a `Request` (wire keys)."""

    id: str
    ok: bool
    data: dict[str, Any] | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form: the fixed keys, optional ones omitted when `None`."""
        return {"id": self.id, "ok": self.ok, **_present(data=self.data, reason=self.reason)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        """An `Answer` from its wire form (`id` and `ok` required)."""
        return cls(
            id=str(_required(data, "id", "Answer")),
            ok=bool(_required(data, "ok", "Answer")),
            data=data.get("data"),
            reason=data.get("reason"),
        )

    @classmethod
    def coerce(cls, value: Any) -> Answer | None:
        """What a host's `wait_for` returned, as an `Answer`: an `Answer`, its wire-form dict,
        or `None` for anything else (no answer counts as declined)."""
        if isinstance(value, Answer):
            return value
        if isinstance(value, Mapping) and "id" in value and "ok" in value:
            return cls.from_dict(value)
        return None


def _present(**fields: Any) -> dict[str, Any]:
    """The optional wire fields that are set (a `None` field is omitted, not sent as null)."""
    return {key: value for key, value in fields.items() if value is not None}


def _required(data: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in data:
        got = ", ".join(map(str, data)) or "none"
        raise WireFormatError(f'{what} wire data needs "{key}" (got keys: {got})')
    return data[key]


DepsT = TypeVar("DepsT", default=Any)

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP's log levels (RFC 5424 severities), least severe first."""


class Caller(Protocol):
    """The client a served tool call came from, as the server that serves the call reaches it
    (`ToolContext.log`, `sample` and `ask` go through it)."""

    @property
    def capabilities(self) -> Mapping[str, Any] | None:
        """The MCP client capabilities the caller declared (wire form), if known."""
        ...

    @property
    def log_level(self) -> str | None:
        """The least severe level the caller takes log messages at; `None` when it takes none."""
        ...

    async def log(self, level: str, data: Any, logger: str | None) -> None: ...

    async def sample(
        self, messages: list[dict[str, Any]], options: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The reply (a wire `CreateMessageResult`), or `None` when the caller answers only in
        a later round (the call suspends); `CallerUnavailable` when it cannot sample."""
        ...

    async def ask(self, request: Request) -> Answer | None:
        """The caller's answer, or `None` when it cannot answer now (the call suspends)."""
        ...


class ToolSuspended(ToolnexusError):
    """Raised by `ToolContext.ask` when the question must be answered out of band: the tool's
    call ends with the suspension `result` (`pending`), and is run again with the answer."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.output)
        self.result = result


@dataclass(slots=True)
class ToolContext(Generic[DepsT]):
    """Per-call context: cancellation `signal`, `timeout` in seconds, a resolved `answer` with
    the `request` it answers (when resuming a suspension), `on_progress`, a sync or async
    callable taking `{"progress", "total", "message"}` that any tool may call, and `deps`, the
    value the run was given as `deps=` (`Context[MyDeps]` types it for a checker)."""

    signal: Signal | None = None
    timeout: float | None = None
    answer: Answer | None = None
    request: Request | None = None
    on_progress: Callable[[dict[str, Any]], Any] | None = None
    deps: DepsT = None  # type: ignore[assignment]  # `None` when the run was given none
    caller: Caller | None = None

    @property
    def cancelled(self) -> bool:
        return self.signal is not None and self.signal.is_set()

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send `data` (any JSON value) to the caller as an MCP log message at `level` (one of
        `LOG_LEVELS`; dropped below the level the caller set). Not served over MCP, it goes to
        the `toolnexus.tools` Python logger."""
        if level not in LOG_LEVELS:
            raise ConfigError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        if self.caller is not None:
            await self.caller.log(level, data, logger)
            return
        import logging

        severity = min(logging.CRITICAL, 10 + 10 * (LOG_LEVELS.index(level) + 1) // 2)
        logging.getLogger("toolnexus.tools").log(
            severity, "%s%s", f"{logger}: " if logger else "", data
        )

    async def sample(
        self,
        messages: str | Sequence[str | Mapping[str, Any]],
        *,
        max_tokens: int = 1024,
        system: str | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> str:
        """Ask the caller's model (MCP sampling) and return the text of its reply. `messages`
        is a user text, or a list of texts and `{"role", "content"}` dicts in MCP wire form.
        Raises `CallerUnavailable` when the caller cannot be asked (not served over MCP, no
        sampling capability declared, or no way back on its connection). When the caller
        answers only in a later round (a 2026-07-28 client), the call suspends and runs again
        with the reply, which this same `sample` then returns: code before it may run twice."""
        from toolnexus.errors import CallerUnavailable

        if self.caller is None:
            raise CallerUnavailable("cannot sample: this call has no MCP caller to ask")
        listed = [messages] if isinstance(messages, str) else list(messages)
        wire = [
            {"role": "user", "content": {"type": "text", "text": m}}
            if isinstance(m, str)
            else dict(m)
            for m in listed
        ]
        options: dict[str, Any] = {"maxTokens": max_tokens}
        options.update(
            {
                k: v
                for k, v in (
                    ("systemPrompt", system),
                    ("temperature", temperature),
                    ("stopSequences", list(stop) if stop is not None else None),
                )
                if v is not None
            }
        )
        params = {"messages": wire, **options}
        sampled_id = "sample-" + _digest(params)
        earlier = self._earlier_answers()
        if sampled_id in earlier:
            reply = dict(Answer.from_dict(earlier[sampled_id]).data or {})
        else:
            found = await self.caller.sample(wire, options)
            if found is None:  # answered in a later round: this call runs again with it
                data: dict[str, Any] = {"sampling": params}
                if earlier:
                    data["answers"] = earlier
                prompt = "The tool asks the client's model for a reply"
                asked = pending(kind="sampling", prompt=prompt, id=sampled_id, data=data)
                raise ToolSuspended(asked)
            reply = found
        content = reply.get("content")
        blocks = content if isinstance(content, list) else [content]
        return "\n".join(
            str(b.get("text", ""))
            for b in blocks
            if isinstance(b, Mapping) and b.get("type") == "text"
        )

    async def ask(
        self, message: str, schema: Mapping[str, Any] | None = None, *, url: str | None = None
    ) -> Answer:
        """Ask the person behind the caller (MCP elicitation): a form (`schema`, a flat JSON
        Schema object; default one string field `answer`), or with `url` a page to visit.
        Returns the `Answer` (`ok`, `data`). When the caller cannot answer during the call
        (a 2026-07-28 client, or a host's `wait_for`), the call suspends and runs again with
        the answer, and this same `ask` then returns it: code before an `ask` may run twice."""
        asked_id = "ask-" + _digest([message, schema, url])
        earlier = self._earlier_answers()
        if asked_id in earlier:
            return Answer.from_dict(earlier[asked_id])
        data: dict[str, Any] = {}
        if schema is not None:
            data["schema"] = dict(schema)
        kind = "authorization" if url else "input"
        request = Request(asked_id, kind, message, url=url, data=data or None)
        if self.caller is not None:
            answer = await self.caller.ask(request)
            if answer is not None:
                return answer
        if earlier:
            data["answers"] = earlier
        raise ToolSuspended(
            pending(kind=kind, prompt=message, id=asked_id, url=url, data=data or None)
        )

    def _earlier_answers(self) -> dict[str, Any]:
        """The answers this call was run again with (by question id): those of the earlier
        runs, carried in the request, and the one it resumes with."""
        earlier: dict[str, Any] = (
            dict((self.request.data or {}).get("answers") or {})
            if (self.request is not None)
            else {}
        )
        if self.answer is not None and self.request is not None:
            earlier[self.request.id] = self.answer.to_dict()
        return earlier


def _digest(value: Any) -> str:
    """A short stable id for a question (the same question asked again has the same id)."""
    import hashlib
    import json

    key = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


Context = ToolContext

ExecuteFn: TypeAlias = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]


class Tool:
    """One callable tool with a JSON-Schema input, whatever its source.

    `execute` may be an async or sync callable `(args, ctx)`; sync ones run in a worker thread.
    `Tool.execute` never raises for a tool failure: exceptions become `is_error` results.
    `defer_loading=True` marks a tool the model finds by searching (docs/tools-search.md): it
    is callable as ever, only not declared in a request up front.
    """

    __slots__ = (
        "_execute",
        "_is_async",
        "_validator",
        "defer_loading",
        "description",
        "input_schema",
        "metadata",
        "name",
        "original_name",
        "self_validating",
        "source",
    )

    def __init__(
        self,
        name: str,
        description: str,
        input_schema: dict[str, Any] | None,
        source: str = "custom",
        execute: Callable[..., Any] | None = None,
        *,
        original_name: str | None = None,
        self_validating: bool = False,
        metadata: dict[str, Any] | None = None,
        defer_loading: bool = False,
    ) -> None:
        if execute is None:
            raise ConfigTypeError(f"Tool {name!r} needs an execute callable")
        self.name = name
        self.description = description or ""
        self.input_schema: dict[str, Any] = (
            input_schema if input_schema is not None else {"type": "object", "properties": {}}
        )
        self.source = source
        # The name before sanitising/capping, used to tell real duplicates from collisions.
        self.original_name = original_name if original_name is not None else name
        # What the source knows beyond the schema (an MCP tool: server, title, annotations...).
        self.metadata = metadata
        self._execute = execute
        self._is_async = is_async_callable(execute)
        # True when the tool checks its own arguments (native tools, with pydantic's lax rules),
        # so the toolkit skips its generic jsonschema check.
        self.self_validating = self_validating
        self.defer_loading = defer_loading
        self._validator: Any = None

    async def execute(
        self, args: dict[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Run the tool; a failure is a result with `is_error=True`, never an exception."""
        call_args = {} if args is None else args
        call_ctx = ctx if ctx is not None else ToolContext()
        try:
            if self._is_async:
                result = await self._execute(call_args, call_ctx)
            else:
                result = await run_in_thread(self._execute, call_args, call_ctx)
        except asyncio.CancelledError:
            raise
        except ToolSuspended as exc:  # `ctx.ask` needs an answer out of band
            return exc.result
        except Exception as exc:  # a tool failure is data for the model (and logged once)
            tool_raised(self.name, exc)
            return ToolResult(output=error_message(exc), is_error=True)
        return result_of(result)

    def renamed(self, name: str) -> Tool:
        """A copy of this tool under another exposed name (same execute, same schema)."""
        clone = Tool(
            name,
            self.description,
            self.input_schema,
            self.source,
            self._execute,
            original_name=self.original_name,
            self_validating=self.self_validating,
            metadata=self.metadata,
            defer_loading=self.defer_loading,
        )
        clone._is_async = self._is_async
        return clone

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, source={self.source!r})"


def result_of(value: Any) -> ToolResult:
    """The `ToolResult` for what a tool's function returned.

    A `ToolResult` passes through and a `str` is the output. A `ContentPart`, or a list holding
    at least one, gives parts: its strings and text parts (joined by newlines) are the output,
    its other parts the `parts` (no text: their one-line descriptions are the output). Any other
    value is sent as compact JSON.
    """
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(output=value)
    from toolnexus.content import ContentPart

    if isinstance(value, ContentPart) or (
        isinstance(value, list) and any(isinstance(item, ContentPart) for item in value)
    ):
        return _parts_result(value if isinstance(value, list) else [value])
    from toolnexus._json import to_compact_json

    return ToolResult(output=to_compact_json(value))


def _parts_result(items: list[Any]) -> ToolResult:
    from toolnexus.content import ContentPartError, describe_parts, normalize_parts

    texts: list[str] = []
    media: list[dict[str, Any]] = []
    try:
        for part in normalize_parts(items):
            if part["type"] == "text":
                texts.append(part["text"])
            else:
                media.append(part)
    except ContentPartError as exc:
        return ToolResult(f"the tool returned an unusable content part: {exc}", True)
    output = "\n".join(texts) if texts else describe_parts(media)
    return ToolResult(output, parts=media)


def error_message(exc: BaseException) -> str:
    """A readable one-line message for an exception (its text, or its type when empty)."""
    text = str(exc)
    return text if text else type(exc).__name__


_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize(value: str) -> str:
    """Replace each character outside `[a-zA-Z0-9_-]` with `_` (one for one)."""
    return _UNSAFE.sub("_", value)


_pending_seq = itertools.count(1)


def _new_pending_id(prefix: str = "pnd") -> str:
    return f"{prefix}-{int(time.time() * 1000)}-{next(_pending_seq)}"


def pending(
    *,
    kind: str,
    prompt: str,
    id: str | None = None,
    url: str | None = None,
    data: dict[str, Any] | None = None,
    expiresAt: str | None = None,
) -> ToolResult:
    """A suspension result: the tool needs something out of band before it can answer."""
    request = Request(
        id=id or _new_pending_id(),
        kind=kind,
        prompt=prompt,
        url=url,
        data=data,
        expiresAt=expiresAt,
    )
    output = prompt if url is None else f"{prompt}\n{url}"
    return ToolResult(output=output, is_error=True, metadata={"pending": request})


def auth_required(url: str, prompt: str = "Authorization required to continue") -> ToolResult:
    """A suspension asking the host to complete an authorization at `url`."""
    return pending(kind="authorization", prompt=prompt, url=url)


def pending_of(result: ToolResult | None) -> Request | None:
    """The `Request` carried by a suspension result, else `None`."""
    if result is None or not isinstance(result.metadata, dict):
        return None
    request = result.metadata.get("pending")
    return request if isinstance(request, Request) else None


def answer_output(id: str, output: str) -> Answer:
    """A positive answer whose data carries `output` (text; anything else is a `TypeError`)."""
    if not isinstance(output, str):
        raise ConfigTypeError(f"answer output must be a str, got {type(output).__name__}")
    return Answer(id=id, ok=True, data={"output": output})


_DECLINE_REASONS = ("declined", "cancelled", "expired")


def answer_declined(id: str, reason: str = "declined") -> Answer:
    """A negative answer: `reason` is `declined`, `cancelled` or `expired` (else `ValueError`)."""
    if reason not in _DECLINE_REASONS:
        raise ConfigError(
            f'answer reason must be "declined", "cancelled" or "expired", got {reason!r}'
        )
    return Answer(id=id, ok=False, reason=reason)
