"""A warning about a server's tools is printed once: a `notifications/tools/list_changed` that
changes nothing rebuilds nothing, and a list that does change does not repeat a warning about a
tool that was already reported (as the stock example server, server-everything, did: it
announces a change right after start, and its task-only tool was reported twice)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from support.mcp_servers import ThreadedHttpServer
from support.polling import wait_until
from toolnexus.mcp_source import load_mcp_with_context

SKIPPED = (
    '[toolnexus] MCP server "s" tool "required_task" requires task-augmented calls, which '
    "toolnexus does not support; skipped"
)


class RelistingServer:
    """A lowlevel SDK server: a task-only tool, `nudge` (announces a change that is none) and
    `grow` (adds the tool `grown`, then announces it). Counts the tools/list requests."""

    def __init__(self) -> None:
        self.listings = 0
        self.grown = False

    def app(self) -> Any:
        from mcp.server.lowlevel import Server
        from mcp_types import CallToolResult, ListToolsResult, TextContent, Tool, ToolExecution

        schema: dict[str, Any] = {"type": "object", "properties": {}}

        async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
            self.listings += 1
            tools = [
                Tool(
                    name="required_task",
                    input_schema=schema,
                    execution=ToolExecution(task_support="required"),
                ),
                Tool(name="nudge", input_schema=schema),
                Tool(name="grow", input_schema=schema),
            ]
            if self.grown:
                tools.append(Tool(name="grown", input_schema=schema))
            return ListToolsResult(tools=tools)

        async def call_tool(ctx: Any, params: Any) -> CallToolResult:
            if params.name == "grow":
                self.grown = True
            await ctx.session.send_tool_list_changed()
            return CallToolResult(content=[TextContent(text=f"ran {params.name}")])

        server = Server("relisting", on_list_tools=list_tools, on_call_tool=call_tool)
        return server.streamable_http_app()


async def test_each_warning_is_printed_once(caplog: pytest.LogCaptureFixture) -> None:
    remote = RelistingServer()
    http = ThreadedHttpServer(remote.app())
    changes: list[list[str]] = []
    try:
        with caplog.at_level(logging.WARNING, logger="toolnexus"):
            # `execution.taskSupport` exists at 2025-11-25 only
            source = await load_mcp_with_context({"s": {"url": http.url(), "protocol": "legacy"}})
            source.on_tools_changed = lambda: changes.append([t.name for t in source.tools])
            try:
                assert [t.name for t in source.tools] == ["s_nudge", "s_grow"]
                await source.tools[0].execute()  # an announced change that changes nothing
                await wait_until(lambda: remote.listings >= 2)
                await source.tools[1].execute()  # a real change, handled after the first
                await wait_until(lambda: changes)
            finally:
                await source.close()
    finally:
        http.stop()
    assert changes == [["s_nudge", "s_grow", "s_grown"]]
    assert [m for m in caplog.messages if "toolnexus" in m] == [SKIPPED]
