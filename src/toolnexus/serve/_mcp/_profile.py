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
from collections.abc import Awaitable, Callable, Mapping, Sequence
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
from toolnexus.serve._mcp._asking import answer_of, ask_client
from toolnexus.serve._mcp._caller import LogLevels, McpCaller
from toolnexus.serve._mcp._offers import offer_handlers, part_block
from toolnexus.serve._mcp._relay import relay_handlers
from toolnexus.serve._mcp._skills import skills_provider
from toolnexus.serve._mcp._subscriptions import relayed_changes
from toolnexus.serve._mcp._tasks import McpTasks, runs_as_task
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
    from toolnexus._served import Served
    from toolnexus.mcp_source import McpSource
    from toolnexus.offers import Offers
    from toolnexus.serve._a2a._endpoint import A2AEndpoint
    from toolnexus.skill import SkillSource

__all__ = [
    "DEFAULT_NAME",
    "DEFAULT_VERSION",
    "REQUEST_SIGNAL",
    "Execute",
    "MCPServeConfig",
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
    the MCP tasks when no A2A profile is served (the A2A `store` values). Over HTTP:
    `stateless: true` serves without sessions; else `maxSessions` open sessions at most, each
    ended after `sessionIdleTimeout` ms without a request and keeping its last `sessionEvents`
    events for resumption (`serve/_mcp/_http.py`)."""

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
    stateless: bool
    maxSessions: int
    sessionIdleTimeout: int
    sessionEvents: int


OnCall: TypeAlias = Callable[[dict[str, Any]], "Awaitable[None] | None"]
"""Called after each `tools/call` of a known tool with `{"name", "source", "ms", "is_error"}`."""

# The cancel signal of the request being served, when the endpoint serving it sets the signal
# itself before it cancels the request; `None` when the SDK's transport owns the cancellation.
REQUEST_SIGNAL: ContextVar[CancelSignal | None] = ContextVar(
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
    current_tools: Callable[[], Sequence[Tool]] | None = None,
) -> Server[Any]:
    """An SDK server exposing `tools` (already filtered); `execute` runs one validated call.
    With `tool_scopes`, a caller holding an OAuth access token sees only the tools its scopes
    allow (`serve/_auth.py` refuses the calls of the others). With `upstream`, the toolkit's
    MCP servers, their resources and prompts are served too (unless the profile says
    `resources: false` / `prompts: false`): those of every server when the profile exposes all
    tools, else of the servers whose tools it exposes. With `offers`, the toolkit's declared
    resources, prompts and completions are served before the upstream ones. With `tasks` (the
    endpoint keeping the A2A tasks), the tools that declare task support run as MCP tasks
    (`serve/_mcp/_tasks.py`). With `skills`, the gateway is a Skills provider (`_skills.py`)
    unless the profile says `skills: false`. With `current_tools` (the exposed tools now), the
    listing follows the upstream servers' tool changes (`_subscriptions.py`)."""
    cfg = cfg or {}
    by_name = {t.name: t for t in tools}
    listed = list(tools)
    search: Tool | None = None
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

    def refresh_tools() -> bool:
        """Serve the exposed tools now (an upstream server's changed); true when the listing
        changed. The search index stays the one built first."""
        nonlocal listing, scoped
        if current_tools is None:
            return False
        now = list(current_tools())
        shown = [t for t in now if not t.defer_loading] + [search] if search else now
        fresh = types.ListToolsResult(tools=[_listed(t) for t in shown])
        if fresh == listing:
            return False
        by_name.clear()
        by_name.update({t.name: t for t in [*now, *([search] if search else [])]})
        output_schemas.clear()
        output_schemas.update({t.name: (t.metadata or {}).get("outputSchema") for t in now})
        listing, scoped = fresh, _scoped_listings(shown, tool_scopes) if tool_scopes else None
        return True

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
        owned = REQUEST_SIGNAL.get()
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
        return await conclude(ctx, tool, args, result, started)

    async def conclude(
        ctx: Any, tool: Tool, args: dict[str, Any], result: ToolResult, started: float
    ) -> Any:
        """The answer to a `tools/call` whose first run gave `result`."""
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
    among = _upstream_servers(tools, cfg)
    changes = relayed_changes(upstream, cfg, among, offers=offers, refresh_tools=refresh_tools)
    relayed = relay_handlers(upstream, cfg, among)
    if changes is not None:  # resource subscriptions and change notifications relayed
        relayed.update(changes.handlers())
    handlers = offer_handlers(offers, relayed)
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
    if tasks is not None and any(map(runs_as_task, tools)):
        McpTasks(
            tasks,
            tools,
            execute,
            lambda tool, result: _call_result(tool, result, output_schemas),
            conclude=conclude,
            on_call=on_call,
        ).install(server, call_tool)
    if provider is not None:
        provider.install(server)
    if changes is not None:
        changes.install(server)
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


def build_mcp_server(
    tools: Sequence[Tool],
    cfg: Mapping[str, Any] | None = None,
    on_call: OnCall | None = None,
) -> Server[Any]:
    """An MCP SDK `Server` exposing `tools` per the profile `cfg`, for in-memory clients.

    `mcp.Client(build_mcp_server(toolkit.tools()))` talks to it without HTTP.
    """
    from toolnexus._served import ToolList

    exposed = exposed_mcp_tools(tools, cfg)
    # Calls get the same validation as `Toolkit.execute`.
    return make_mcp_server(exposed, cfg, on_call, execute_through(ToolList(exposed)))
