"""The MCP server profile: the toolkit's tools as one MCP server (SDK lowlevel `Server`).

The SDK serves both protocol eras on the same server. Results keep what the tools returned:
an MCP tool's upstream content blocks verbatim, otherwise the output text and one block per
content part; `structuredContent`, `isError`, and the listing's `title`, `annotations`,
`outputSchema` and `icons`. A suspension (a `pending` result) becomes, for a 2026-07-28
client, an `InputRequiredResult` whose sealed `requestState` carries the `Request`; for a
2025-11-25 client over stdio, a pushed elicitation; otherwise an error result with its text.
"""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from toolnexus._aio import CancelSignal, call_maybe_async
from toolnexus._env import expand_env
from toolnexus._log import logger
from toolnexus._tool_search import (
    SEARCH_SCHEMA,
    SEARCH_TOOL,
    ToolIndex,
    search_limit,
    shadowed_message,
)
from toolnexus.errors import ConfigError, ConfigTypeError
from toolnexus.serve._asking import answer_of, ask_client
from toolnexus.serve._mcp_caller import LogLevels, McpCaller
from toolnexus.serve._mcp_offers import offer_handlers, part_block
from toolnexus.serve._mcp_relay import relay_handlers
from toolnexus.serve._mcp_skills import skills_provider
from toolnexus.serve._mcp_tasks import McpTasks, task_support
from toolnexus.types import (
    Answer,
    Request,
    Tool,
    ToolContext,
    ToolResult,
    error_message,
    pending_of,
)

if TYPE_CHECKING:
    from toolnexus.mcp_source import McpSource
    from toolnexus.offers import Offers
    from toolnexus.serve._a2a import A2AEndpoint
    from toolnexus.serve._served import Served
    from toolnexus.skill import SkillSource

__all__ = [
    "DEFAULT_NAME",
    "DEFAULT_VERSION",
    "Execute",
    "MCPServeConfig",
    "McpHttpEndpoint",
    "OnCall",
    "build_mcp_server",
    "execute_through",
    "exposed_mcp_tools",
    "make_mcp_server",
]

DEFAULT_NAME = "toolnexus"
DEFAULT_VERSION = "0.1.0"
DEFAULT_STATE_TTL_MS = 600_000
_MIN_KEY_BYTES = 32


class MCPServeConfig(TypedDict, total=False):
    """The MCP profile: `serverInfo` name/version, the exposed tool names, the gateway's
    `instructions`, and the request-state keys (`${ENV}` expanded; the first seals, all unseal)
    with their lifetime in milliseconds. Replicas must share `requestStateKeys` and `name`.
    `resources: false` / `prompts: false` stop re-serving the upstream MCP servers' ones;
    `skills: false` stops serving the toolkit's skills (Skills extension). `taskStore` keeps
    the MCP tasks when no A2A profile is served (the A2A `store` values)."""

    name: str
    version: str
    tools: list[str]
    instructions: str
    requestStateKeys: list[str]
    requestStateTtl: int
    resources: bool
    prompts: bool
    taskStore: str
    skills: bool


OnCall: TypeAlias = Callable[[dict[str, Any]], "Awaitable[None] | None"]
"""Called after each `tools/call` of a known tool with `{"name", "source", "ms", "is_error"}`."""

# The cancel signal of the request being served, when the endpoint serving it sets the signal
# itself before it cancels the request; `None` when the SDK's transport owns the cancellation.
_REQUEST_SIGNAL: ContextVar[CancelSignal | None] = ContextVar(
    "toolnexus_mcp_request_signal", default=None
)

Execute: TypeAlias = Callable[[Tool, dict[str, Any], ToolContext], Awaitable[ToolResult]]


def exposed_mcp_tools(tools: Sequence[Tool], cfg: Mapping[str, Any] | None = None) -> list[Tool]:
    """The tools the profile exposes: all of them, or those named in `cfg["tools"]` (in order).

    Unknown names in `cfg["tools"]` are ignored.
    """
    names = (cfg or {}).get("tools")
    if names is None:
        return list(tools)
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ConfigTypeError('the MCP profile\'s "tools" must be a list of tool names')
    wanted = set(names)
    return [t for t in tools if t.name in wanted]


def execute_through(toolkit: Served) -> Execute:
    """A call through `toolkit.execute`: the toolkit's own validation and error mapping."""

    async def execute(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await toolkit.execute(tool.name, args, ctx)

    return execute


def _searchable(cfg: Mapping[str, Any]) -> bool:
    value = cfg.get("toolSearch", False)
    if not isinstance(value, bool):
        raise ConfigTypeError(
            f'the MCP profile\'s "toolSearch" must be true or false, not {value!r}'
        )
    return value


def _search_tool(tools: Sequence[Tool]) -> Tool:
    """`search_tools` over the served tools: the matches' names, descriptions and input
    schemas, as JSON, for the caller to call them by name."""
    index: list[ToolIndex] = []  # built on the first search

    def search(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str):
            return ToolResult('search_tools needs "query": the words describing a tool', True)
        if not index:
            index.append(ToolIndex(tools))
        found = index[0].search(query, search_limit(args))
        return ToolResult(
            json.dumps(
                [
                    {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                    for t in found
                ]
            )
        )

    description = (
        "Search the tools this server offers beyond those listed; call a match by its name "
        "with arguments per its inputSchema."
    )
    return Tool(SEARCH_TOOL, description, SEARCH_SCHEMA, "builtin", search)


def _with_own(own: Tool, execute: Execute) -> Execute:
    async def either(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await (own.execute(args, ctx) if tool is own else execute(tool, args, ctx))

    return either


def _listed(tool: Tool) -> types.Tool:
    """The `tools/list` entry: serve.md's three fields plus what the source knew."""
    meta = tool.metadata or {}
    return types.Tool.model_validate(
        {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": tool.input_schema,
            **{
                k: meta[k]
                for k in ("title", "annotations", "outputSchema", "icons", "_meta")
                if k in meta
            },
        }
    )


def _security(cfg: Mapping[str, Any], audience: str) -> RequestStateBoundary:
    """The request-state seal: the profile's shared keys, else a key held by this process."""
    ttl_ms = cfg.get("requestStateTtl", DEFAULT_STATE_TTL_MS)
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int | float) or ttl_ms <= 0:
        raise ConfigError('the MCP profile\'s "requestStateTtl" must be a positive number of ms')
    keys = cfg.get("requestStateKeys")
    if keys is None:
        security = RequestStateSecurity.ephemeral(ttl=ttl_ms / 1000, audience=audience)
    else:
        if isinstance(keys, str) or not keys or not all(isinstance(k, str) for k in keys):
            raise ConfigError('the MCP profile\'s "requestStateKeys" must be a list of strings')
        expanded = [expand_env(k) for k in keys]
        if any(len(k.encode()) < _MIN_KEY_BYTES for k in expanded):
            # never the value: the keys are secrets
            raise ConfigError(
                f'each of the MCP profile\'s "requestStateKeys" must be {_MIN_KEY_BYTES}+ bytes'
            )
        security = RequestStateSecurity(keys=expanded, ttl=ttl_ms / 1000, audience=audience)
    return RequestStateBoundary(security, default_audience=audience)


# A complete result (a 2026-07-28 `resultType`; the SDK drops it for earlier versions).
_COMPLETE = {"resultType": "complete"}


def _call_result(
    tool: Tool, result: ToolResult, output_schemas: Mapping[str, Any]
) -> dict[str, Any]:
    """The `tools/call` result in wire form (the SDK validates and shapes it for the
    negotiated version once, on the way out)."""
    metadata = result.metadata if isinstance(result.metadata, dict) else {}
    upstream = metadata.get("content") if tool.source == "mcp" else None
    structured = metadata.get("structured", metadata.get("structuredContent"))
    if not isinstance(structured, dict):
        structured = None
    if not result.is_error and structured is None and output_schemas.get(tool.name) is not None:
        text = f"Tool {tool.name} has an output schema but returned no structured content"
        return {"content": [{"type": "text", "text": text}], "isError": True, **_COMPLETE}
    content: list[Any]
    if isinstance(upstream, list):
        content = upstream
    else:
        parts = result.parts or ()
        content = [{"type": "text", "text": result.output}] if result.output or not parts else []
        content.extend(part_block(p) for p in parts)
    wire: dict[str, Any] = {"content": content, "isError": result.is_error, **_COMPLETE}
    if structured is not None:
        wire["structuredContent"] = structured
    return wire


def _scoped_listings(
    tools: Sequence[Tool], tool_scopes: Mapping[str, Sequence[str]]
) -> Callable[[], types.ListToolsResult]:
    """The listing of the caller's access token (all tools without one), one per scope set."""
    from toolnexus.serve._auth import PerScopeSet, granted_scopes, visible_tools

    entries = {t.name: _listed(t) for t in tools}
    everything = types.ListToolsResult(tools=list(entries.values()))
    per_scopes = PerScopeSet(
        lambda granted: types.ListToolsResult(
            tools=[entries[n] for n in visible_tools(tool_scopes, granted, entries)]
        )
    )

    def listing() -> types.ListToolsResult:
        granted = granted_scopes()
        return everything if granted is None else per_scopes.get(granted)

    return listing


def make_mcp_server(
    tools: Sequence[Tool],
    cfg: Mapping[str, Any] | None,
    on_call: OnCall | None,
    execute: Execute,
    *,
    tool_scopes: Mapping[str, Sequence[str]] | None = None,
    upstream: McpSource | None = None,
    offers: Offers | None = None,
    tasks: A2AEndpoint | None = None,
    skills: SkillSource | None = None,
) -> Server[Any]:
    """An SDK server exposing `tools` (already filtered); `execute` runs one validated call.
    With `tool_scopes`, a caller holding an OAuth access token sees only the tools its scopes
    allow (`serve/_auth.py` refuses the calls of the others). With `upstream`, the toolkit's
    MCP servers, their resources and prompts are served too (unless the profile says
    `resources: false` / `prompts: false`): those of every server when the profile exposes all
    tools, else of the servers whose tools it exposes. With `offers`, the toolkit's declared
    resources, prompts and completions are served before the upstream ones. With `tasks` (the
    endpoint keeping the A2A tasks), the tools that declare task support run as MCP tasks
    (`serve/_mcp_tasks.py`). With `skills`, the gateway is a Skills provider (`_mcp_skills.py`)
    unless the profile says `skills: false`."""
    cfg = cfg or {}
    by_name = {t.name: t for t in tools}
    listed = list(tools)
    if _searchable(cfg) and any(t.defer_loading for t in tools):
        # The deferred tools are left out of the listing but stay callable by name; the
        # search tool runs here, not through the toolkit, which has no such tool.
        search = _search_tool(tools)
        if search.name in by_name:  # refused: either tool would hide the other
            raise ConfigError(shadowed_message(by_name[search.name], '"toolSearch": true'))
        listed = [t for t in tools if not t.defer_loading]
        listed.append(search)
        by_name[search.name] = search
        execute = _with_own(search, execute)
    # The exposed set is fixed, so the listing is built once (once per set of scopes).
    listing = types.ListToolsResult(tools=[_listed(t) for t in listed])
    output_schemas = {t.name: (t.metadata or {}).get("outputSchema") for t in tools}
    name = str(cfg.get("name") or DEFAULT_NAME)
    scoped = _scoped_listings(listed, tool_scopes) if tool_scopes else None
    log_levels = LogLevels()

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        return listing if scoped is None else scoped()

    async def run_once(
        tool: Tool, args: dict[str, Any], ctx: Any, answer: Answer | None, request: Request | None
    ) -> ToolResult:
        session = ctx.session

        async def progress(event: dict[str, Any]) -> None:
            await session.report_progress(
                event.get("progress", 0), event.get("total"), event.get("message")
            )

        # The tool must see its signal set whether it awaits or runs in a worker thread, so
        # the signal is set before the call is cancelled: by the endpoint serving the request,
        # when it owns the cancellation (the call then runs in the request's own task), or
        # here, with the call in a task of its own that is cancelled only after the signal.
        owned = _REQUEST_SIGNAL.get()
        signal = owned if owned is not None else CancelSignal()
        context = ToolContext(
            signal=signal,
            answer=answer,
            request=request,
            on_progress=progress,
            caller=McpCaller(ctx, log_levels),
        )
        call = None if owned is not None else asyncio.ensure_future(execute(tool, args, context))
        try:
            if call is None:
                return await execute(tool, args, context)
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            signal.set()  # also for a cancellation the endpoint did not make
            if call is not None:
                call.cancel()
            raise
        except Exception as exc:  # the server never crashes on a tool
            return ToolResult(error_message(exc), True)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        tool = by_name.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        args = params.arguments or {}
        started = time.perf_counter()
        answer = request = None
        if params.request_state is not None and params.input_responses:
            request = Request.from_dict(json.loads(params.request_state))
            answer = answer_of(request, params.input_responses.get(request.id))
        result = await run_once(tool, args, ctx, answer, request)
        suspended = pending_of(result)
        if suspended is not None:
            relayed = await _relay(ctx, tool, args, result, suspended, run_once)
            if isinstance(relayed, types.InputRequiredResult):
                return relayed
            result = relayed
        if on_call is not None:
            event = {
                "name": tool.name,
                "source": tool.source,
                "ms": round((time.perf_counter() - started) * 1000),
                "is_error": result.is_error,
            }
            try:
                await call_maybe_async(on_call, event)
            except Exception:
                logger.debug("[toolnexus] on_call raised; ignored", exc_info=True)
        return _call_result(tool, result, output_schemas)

    def input_schema(tool_name: str) -> Mapping[str, Any] | None:
        tool = by_name.get(tool_name)
        return tool.input_schema if tool is not None else None

    version = cfg.get("version")
    instructions = cfg.get("instructions")
    handlers = offer_handlers(offers, relay_handlers(upstream, cfg, _upstream_servers(tools, cfg)))
    provider = skills_provider(skills, cfg)
    if provider is not None:
        handlers = provider.resource_handlers(handlers)
    with warnings.catch_warnings():  # logging is deprecated at 2026-07-28, still 2025-11-25's
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = Server(
            name,
            version=str(DEFAULT_VERSION if version is None else version),
            instructions=instructions if isinstance(instructions, str) else None,
            get_tool_input_schema=input_schema,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_set_logging_level=log_levels.set_level,
            **handlers,
        )
    server.middleware.append(_security(cfg, name))
    if tasks is not None and any(task_support(t) for t in tools):
        McpTasks(
            tasks, tools, execute, lambda tool, result: _call_result(tool, result, output_schemas)
        ).install(server, call_tool)
    if provider is not None:
        provider.install(server)
    return server


def _upstream_servers(tools: Sequence[Tool], cfg: Mapping[str, Any]) -> set[str] | None:
    """The MCP servers whose resources and prompts are re-served: all (`None`) unless the
    profile names the tools it exposes, then those of the exposed tools' servers."""
    if cfg.get("tools") is None:
        return None
    return {
        str(t.metadata["server"])
        for t in tools
        if t.source == "mcp" and t.metadata is not None and "server" in t.metadata
    }


async def _relay(
    ctx: Any,
    tool: Tool,
    args: dict[str, Any],
    result: ToolResult,
    request: Request,
    run_once: Callable[..., Awaitable[ToolResult]],
) -> ToolResult | types.InputRequiredResult:
    """A suspension, in the form the calling client can answer."""
    asked = await ask_client(ctx, request)
    if asked is None or isinstance(asked, types.InputRequiredResult):
        return result if asked is None else asked
    again = await run_once(tool, args, ctx, asked, request)
    if pending_of(again) is not None:
        return ToolResult(f"unresolved: {request.prompt}", True)
    return again


class McpHttpEndpoint:
    """The `/mcp` ASGI app, stateless: a 2025-11-25 request is answered as plain JSON unless it
    asks for progress (then SSE, so progress can stream); a 2026-07-28 request goes through the
    SDK's modern entry with SSE enabled (plain JSON unless the handler sends a notification).
    `run()` is its lifespan.

    A well-formed 2025-11-25 request answered as JSON is served as one exchange: the SDK's
    `serve_one` kernel (negotiated version, middleware, request-state boundary, result sieve)
    without the per-POST transport, dispatcher and task group of its stateless transport, and
    answered the bytes that transport would answer. Everything else (`initialize`,
    notifications, malformed bodies, wrong headers) goes through the SDK's transport itself."""

    def __init__(self, server: Server[Any], *, security_settings: Any, max_body: int) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        def manager(json_response: bool) -> StreamableHTTPSessionManager:
            return StreamableHTTPSessionManager(
                app=server,
                stateless=True,
                json_response=json_response,
                security_settings=security_settings,
                max_request_body_size=max_body,
            )

        self._server = server
        self._max_body = max_body
        self._lifespan_state: Any = None
        self._plain = manager(True)
        self._streaming = manager(False)
        self._handshake = {v.encode() for v in HANDSHAKE_PROTOCOL_VERSIONS}

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        server = self._server
        async with server.lifespan(server) as state, self._plain.run(), self._streaming.run():
            self._lifespan_state = state
            yield

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        streaming = self._streaming
        if scope.get("method") != "POST":
            await streaming.handle_request(scope, receive, send)
            return
        version = next((v for k, v in scope["headers"] if k == b"mcp-protocol-version"), None)
        if version is not None and version not in self._handshake:
            await streaming.handle_request(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its request
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if b'"progressToken"' in body:
            await streaming.handle_request(scope, _replay(bytes(body), receive), send)
            return
        exchange = (
            _one_exchange(scope, bytes(body), version) if len(body) <= self._max_body else None
        )
        await self._plain_call(scope, bytes(body), exchange, receive, send)

    async def _plain_call(
        self, scope: Any, body: bytes, exchange: _Exchange | None, receive: Any, send: Any
    ) -> None:
        """A JSON-answered request, cancelled when the client goes away (an SSE answer notices
        that itself): closing the request is how a stateless caller cancels."""
        after_body: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        async def rest() -> Any:
            return await asyncio.shield(after_body)

        signal = CancelSignal()
        token = _REQUEST_SIGNAL.set(signal)  # seen by the handler's task, made just below
        try:
            if exchange is None:
                handler = asyncio.ensure_future(
                    self._plain.handle_request(scope, _replay(body, rest), send)
                )
            else:
                exchange.receive = rest
                handler = asyncio.ensure_future(self._answer(exchange, send))
        finally:
            _REQUEST_SIGNAL.reset(token)

        async def watch() -> None:
            message = await receive()
            after_body.set_result(message)
            if message.get("type") == "http.disconnect":
                signal.set()  # before the cancellation reaches the tool
                handler.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await handler
        except asyncio.CancelledError:
            if not handler.cancelled() or asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
        finally:
            watcher.cancel()

    async def _answer(self, exchange: _Exchange, send: Any) -> None:
        """Serve one request with the SDK's kernel; answer as its JSON-response transport does."""
        import pydantic_core
        from mcp.server.runner import serve_one
        from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data

        request = exchange.request
        try:
            result = await serve_one(
                self._server,
                exchange,
                request.method,
                request.params,
                connection=exchange.connection(),
                lifespan_state=self._lifespan_state,
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:  # the code the SDK's dispatcher answers an unmapped failure with
                logger.debug("[toolnexus] MCP handler for %r raised", request.method, exc_info=True)
                error = types.ErrorData(code=0, message=str(exc))
            message = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
            payload = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        else:
            # The bytes `JSONRPCResponse(...).model_dump_json(by_alias=True, exclude_unset=True)`
            # gives for the SDK's JSON result, without building and validating the model.
            payload = pydantic_core.to_json(
                {"jsonrpc": "2.0", "id": request.id, "result": result}, inf_nan_mode="null"
            )
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-length", str(len(payload)).encode()),
                    (b"content-type", b"application/json"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


class _Exchange:
    """The dispatch context of one JSON-answered 2025-11-25 request over stateless HTTP: no
    back-channel (a server request raises `NoBackChannelError`, as on the SDK's transport),
    and notifications, progress included, have no wire in a JSON answer."""

    can_send_request = False

    def __init__(self, scope: Any, request: types.JSONRPCRequest, version: str) -> None:
        from mcp.shared.transport_context import TransportContext

        self.scope = scope
        self.request = request
        self.version = version
        self.request_id = request.id
        self.transport = TransportContext(kind="streamable-http", can_send_request=False)
        self.receive: Callable[[], Awaitable[Any]] | None = None
        self._metadata: Any = None
        self._cancel: Any = None

    def connection(self) -> Any:
        from mcp.server.connection import Connection

        return Connection.from_envelope(self.version, None, None)

    @property
    def message_metadata(self) -> Any:
        if self._metadata is None:  # built only when a handler looks (the HTTP request)
            from mcp.shared.message import ServerMessageMetadata
            from starlette.requests import Request as HttpRequest

            self._metadata = ServerMessageMetadata(
                request_context=HttpRequest(self.scope, self.receive),  # type: ignore[arg-type]
                can_send_request=False,
            )
        return self._metadata

    @property
    def cancel_requested(self) -> Any:
        if self._cancel is None:  # nothing can cancel it but the client going away
            import anyio

            self._cancel = anyio.Event()
        return self._cancel

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        from mcp.shared.exceptions import NoBackChannelError

        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


def _one_exchange(scope: Any, body: bytes, version: bytes | None) -> _Exchange | None:
    """The request as one exchange, or `None` when the SDK's transport must answer it (its
    checks fail, it is not one request, or it is `initialize`)."""
    import pydantic_core
    from mcp_types import DEFAULT_NEGOTIATED_VERSION
    from pydantic import ValidationError

    accept: bytes | None = None
    content_type: bytes | None = None
    for key, value in scope["headers"]:  # the first of each, as the SDK's transport reads them
        if key == b"accept":
            if accept is None:
                accept = value
        elif key == b"content-type" and content_type is None:
            content_type = value
    if not _accepts_json(accept or b"") or not _is_json_type(content_type or b""):
        return None
    try:  # the SDK transport's parser, so both read every body alike
        decoded = pydantic_core.from_json(body)
    except ValueError:
        return None
    if (
        not isinstance(decoded, dict)
        or "id" not in decoded
        or decoded.get("method") == "initialize"
    ):
        return None
    try:
        request = types.JSONRPCRequest.model_validate(decoded, by_name=False)
    except ValidationError:
        return None
    negotiated = DEFAULT_NEGOTIATED_VERSION if version is None else version.decode("latin-1")
    return _Exchange(scope, request, negotiated)


def _accepts_json(accept: bytes) -> bool:
    """The SDK transport's rule: `application/json`, `application/*` or `*/*` is accepted."""
    kinds = {part.split(b";")[0].strip().lower() for part in accept.split(b",")}
    return not kinds.isdisjoint((b"application/json", b"application/*", b"*/*"))


def _is_json_type(content_type: bytes) -> bool:
    """The SDK transport's two rules: the value starts with `application/json` (any case), and
    its media type (before `;`) lists `application/json` exactly."""
    media = content_type.decode("latin-1")
    if not media.lower().startswith("application/json"):
        return False
    return any(part.strip() == "application/json" for part in media.split(";")[0].split(","))


def _replay(body: bytes, receive: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    """`receive` for an ASGI app: the body already read, then what `receive` gives."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def build_mcp_server(
    tools: Sequence[Tool],
    cfg: Mapping[str, Any] | None = None,
    on_call: OnCall | None = None,
) -> Server[Any]:
    """An MCP SDK `Server` exposing `tools` per the profile `cfg`, for in-memory clients.

    `mcp.Client(build_mcp_server(toolkit.tools()))` talks to it without HTTP.
    """
    from toolnexus.serve._served import ToolList

    exposed = exposed_mcp_tools(tools, cfg)
    # Calls get the same validation as `Toolkit.execute`.
    return make_mcp_server(exposed, cfg, on_call, execute_through(ToolList(exposed)))
