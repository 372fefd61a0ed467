"""MCP Tasks (`io.modelcontextprotocol/tasks`) as a client, against a server on the SDK's
extension framework (`support/mcp_servers/tasks_server.py`): a task tool is offered and called
as ever, its progress reaches the call, its input requests go through `wait_for` or suspend the
call, cancelling or timing out the call cancels the task, and `"tasks": "avoid"` opts out."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.tasks_server import app
from support.polling import wait_until
from toolnexus.errors import ToolnexusError
from toolnexus.mcp_source import McpSource, load_mcp_with_context
from toolnexus.mcp_source._config import check_server
from toolnexus.types import Answer, Request, ToolContext, pending_of


@pytest.fixture(scope="module")
def upstream() -> Iterator[ThreadedHttpServer]:
    server = ThreadedHttpServer(app())
    yield server
    server.stop()


@pytest.fixture
async def source(upstream: ThreadedHttpServer) -> AsyncIterator[McpSource]:
    loaded = await load_mcp_with_context({"t": {"url": upstream.url()}})
    yield loaded
    await loaded.close()


def tool(source: McpSource, name: str) -> Any:
    return next(t for t in source.tools if t.name == f"t_{name}")


async def counts(source: McpSource) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((await tool(source, "calls").execute()).output)
    return result


async def test_a_task_tool_is_offered_and_completes_with_its_progress(source: McpSource) -> None:
    assert {"t_steps", "t_ask_name", "t_forever", "t_plain"} <= {t.name for t in source.tools}
    progress: list[dict[str, Any]] = []
    result = await tool(source, "steps").execute({"n": 3}, ToolContext(on_progress=progress.append))
    assert (result.output, result.is_error) == ("done 3", False)
    assert [p["message"] for p in progress] == ["step 1", "step 2", "step 3", "done"]
    assert (await tool(source, "plain").execute()).output == "plain answer"


async def test_an_input_request_in_a_task_goes_through_wait_for(
    upstream: ThreadedHttpServer,
) -> None:
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(request.id, True, {"name": "Ada"})

    loaded = await load_mcp_with_context({"t": {"url": upstream.url()}}, wait_for)
    try:
        result = await tool(loaded, "ask_name").execute()
    finally:
        await loaded.close()
    assert (result.output, result.is_error) == ("Hello, Ada!", False)
    [request] = asked
    assert (request.kind, request.prompt) == ("input", "Please enter your name.")


async def test_without_wait_for_a_task_input_request_suspends_and_resumes_the_same_task(
    source: McpSource,
) -> None:
    ask = tool(source, "ask_name")
    before = (await counts(source))["calls"].get("ask_name", 0)
    request = pending_of(await ask.execute())
    assert request is not None
    mcp = (request.data or {})["mcp"]
    assert isinstance(mcp["taskId"], str) and mcp["key"] == "name"
    json.dumps(request.to_dict())  # plain JSON, storable as it is
    answer = Answer(request.id, True, {"name": "Grace"})
    done = await ask.execute({}, ToolContext(answer=answer, request=request))
    assert (done.output, done.is_error) == ("Hello, Grace!", False)
    assert (await counts(source))["calls"]["ask_name"] == before + 1  # no second call


async def test_a_cancelled_call_cancels_its_task(source: McpSource) -> None:
    before = (await counts(source))["cancelled"]
    signal = asyncio.Event()
    calls = (await counts(source))["calls"].get("forever", 0)
    call = asyncio.ensure_future(tool(source, "forever").execute({}, ToolContext(signal=signal)))

    async def started() -> bool:
        return bool((await counts(source))["calls"].get("forever", 0) > calls)

    await wait_until(started)
    signal.set()
    result = await call
    assert (result.output, result.is_error) == ("MCP tool forever was cancelled", True)
    assert (await counts(source))["cancelled"] == before + 1


async def test_the_calls_time_cap_ends_the_task_and_cancels_it(source: McpSource) -> None:
    before = (await counts(source))["cancelled"]
    result = await tool(source, "forever").execute({}, ToolContext(timeout=0.2))
    assert result.is_error
    assert result.output == "MCP tool forever timed out after 200 ms"
    assert (await counts(source))["cancelled"] == before + 1


async def test_a_server_configured_to_avoid_tasks_is_never_answered_with_one(
    upstream: ThreadedHttpServer,
) -> None:
    loaded = await load_mcp_with_context({"t": {"url": upstream.url(), "tasks": "avoid"}})
    try:
        result = await tool(loaded, "steps").execute({"n": 1})
        assert (result.output, result.is_error) == ("Missing required client capability", True)
        assert (await tool(loaded, "plain").execute()).output == "plain answer"
    finally:
        await loaded.close()


def test_the_tasks_key_is_checked() -> None:
    with pytest.raises(ToolnexusError, match='"tasks" must be "prefer" or "avoid", not "maybe"'):
        check_server("t", {"url": "http://127.0.0.1:9/mcp", "tasks": "maybe"})
