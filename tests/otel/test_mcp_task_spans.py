"""A tool call an MCP server runs as a task (the Tasks extension) is traced as far as its end:
besides the `tools/call` that got the task handle, each `tasks/get` poll and the `tasks/cancel`
of a call given up on are MCP client spans and points of the client operation duration metric,
and the poll that finds the task ended with a tool error marks its span failed. The server is
a toolkit served on loopback with task tools (its own server spans are left aside)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from opentelemetry.trace import SpanKind, StatusCode

from support.polling import wait_until
from toolnexus import Toolkit, ToolResult
from toolnexus._aio import CancelSignal
from toolnexus.mcp_source import McpSource, load_mcp_with_context
from toolnexus.types import Tool, ToolContext

Recorded = Any  # conftest's `Recorded`: `.spans` (span exporter), `.metrics` (metric reader)
OPTIONAL = {"taskSupport": "optional"}
EMPTY = {"type": "object", "properties": {}}


async def works(args: dict[str, Any], ctx: ToolContext) -> str:
    return "worked"


async def breaks(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult("the build broke", True)


async def waits(args: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.signal.wait()
    return "stopped"


@pytest_asyncio.fixture
async def source() -> AsyncIterator[McpSource]:
    kit = Toolkit(
        extra_tools=[
            Tool(name, name, EMPTY, "native", fn, metadata=OPTIONAL)
            for name, fn in (("works", works), ("breaks", breaks), ("waits", waits))
        ],
        builtins=False,
    )
    handle = await kit.serve("127.0.0.1:0", mcp={"taskStore": "memory"})
    loaded = await load_mcp_with_context({"up": {"url": handle.url + "/mcp"}})
    yield loaded
    await loaded.close()
    await handle.stop()


def spans(otel: Recorded, method: str) -> list[Any]:
    return [
        s
        for s in otel.spans.get_finished_spans()
        # toolnexus's own (the SDK's `MCP send ...` spans and the server's are left aside)
        if s.name.startswith(method) and s.kind is SpanKind.CLIENT
    ]


def tool(source: McpSource, name: str) -> Tool:
    return next(t for t in source.tools if t.name == f"up_{name}")


async def test_task_polls_are_traced_to_the_tasks_end(otel: Recorded, source: McpSource) -> None:
    worked = await tool(source, "works").execute({})
    assert (worked.output, worked.is_error) == ("worked", False)
    polls = spans(otel, "tasks/get")
    assert polls, "the task was followed with tasks/get"
    assert all(p.status.status_code is not StatusCode.ERROR for p in polls)
    (called,) = spans(otel, "tools/call")
    task_id = polls[-1].name.removeprefix("tasks/get ")
    assert all(p.name == f"tasks/get {task_id}" for p in polls)
    assert called.name == "tools/call works"

    otel.spans.clear()
    broke = await tool(source, "breaks").execute({})
    assert broke.is_error
    last = spans(otel, "tasks/get")[-1]
    assert last.status.status_code is StatusCode.ERROR
    assert (last.attributes or {})["error.type"] == "tool_error"

    otel.spans.clear()
    signal = CancelSignal()
    call = asyncio.ensure_future(tool(source, "waits").execute({}, ToolContext(signal=signal)))

    await wait_until(lambda: spans(otel, "tasks/get") or None)
    signal.set()
    await call
    (cancelled,) = spans(otel, "tasks/cancel")
    assert cancelled.name.startswith("tasks/cancel ")

    data = otel.metrics.get_metrics_data()
    methods = {
        p.attributes.get("mcp.method.name")
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        if scope.scope.name == "toolnexus"
        for metric in scope.metrics
        if metric.name == "mcp.client.operation.duration"
        for p in metric.data.data_points
    }
    assert {"tools/call", "tasks/get", "tasks/cancel"} <= methods
