"""The MCP server profile: the toolkit's tools as one MCP server (SDK lowlevel `Server`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from toolnexus._aio import call_maybe_async
from toolnexus._log import logger
from toolnexus.types import Tool, ToolContext, ToolResult, error_message

if TYPE_CHECKING:
    from toolnexus.toolkit import Toolkit

__all__ = [
    "DEFAULT_NAME",
    "DEFAULT_VERSION",
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


class MCPServeConfig(TypedDict, total=False):
    """The MCP profile: `serverInfo` name/version and an optional list of exposed tool names."""

    name: str
    version: str
    tools: list[str]


OnCall: TypeAlias = Callable[[dict[str, Any]], "Awaitable[None] | None"]
"""Called after each `tools/call` of a known tool with `{"name", "source", "ms", "is_error"}`."""

Execute: TypeAlias = Callable[[Tool, dict[str, Any], ToolContext], Awaitable[ToolResult]]


def exposed_mcp_tools(tools: Sequence[Tool], cfg: Mapping[str, Any] | None = None) -> list[Tool]:
    """The tools the profile exposes: all of them, or those named in `cfg["tools"]` (in order).

    Unknown names in `cfg["tools"]` are ignored.
    """
    names = (cfg or {}).get("tools")
    if names is None:
        return list(tools)
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError('the MCP profile\'s "tools" must be a list of tool names')
    wanted = set(names)
    return [t for t in tools if t.name in wanted]


def execute_through(toolkit: Toolkit) -> Execute:
    """A call through `toolkit.execute`: the toolkit's own validation and error mapping."""

    async def execute(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await toolkit.execute(tool.name, args, ctx)

    return execute


def make_mcp_server(
    tools: Sequence[Tool],
    cfg: Mapping[str, Any] | None,
    on_call: OnCall | None,
    execute: Execute,
) -> Server[Any]:
    """An SDK server exposing `tools` (already filtered); `execute` runs one validated call."""
    cfg = cfg or {}
    by_name = {t.name: t for t in tools}
    # The exposed set is fixed, so the listing is built once.
    listing = types.ListToolsResult(
        tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in tools
        ]
    )

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        return listing

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        tool = by_name.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        # Set when the request is cancelled (a client cancel or disconnect) before the call is
        # cancelled, so the tool sees the signal whether it awaits or runs in a worker thread.
        signal = asyncio.Event()
        started = time.perf_counter()
        call = asyncio.ensure_future(
            execute(tool, params.arguments or {}, ToolContext(signal=signal))
        )
        try:
            result = await asyncio.shield(call)
        except asyncio.CancelledError:
            signal.set()
            call.cancel()
            raise
        except Exception as exc:  # the server never crashes on a tool
            result = ToolResult(error_message(exc), True)
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
        return types.CallToolResult(
            content=[types.TextContent(text=result.output)], is_error=result.is_error
        )

    def input_schema(name: str) -> Mapping[str, Any] | None:
        tool = by_name.get(name)
        return tool.input_schema if tool is not None else None

    name = cfg.get("name")
    version = cfg.get("version")
    return Server(
        str(DEFAULT_NAME if name is None else name),
        version=str(DEFAULT_VERSION if version is None else version),
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def build_mcp_server(
    tools: Sequence[Tool],
    cfg: Mapping[str, Any] | None = None,
    on_call: OnCall | None = None,
) -> Server[Any]:
    """An MCP SDK `Server` exposing `tools` per the profile `cfg`, for in-memory clients.

    `mcp.Client(build_mcp_server(toolkit.tools()))` talks to it without HTTP.
    """
    from toolnexus.toolkit import Toolkit

    exposed = exposed_mcp_tools(tools, cfg)
    # A private toolkit of the exposed tools: calls get the same validation as `Toolkit.execute`.
    return make_mcp_server(exposed, cfg, on_call, execute_through(Toolkit(extra_tools=exposed)))
