"""MCP Tasks served (`io.modelcontextprotocol/tasks`): a native tool that declares task support
runs as a task for a caller that declared the extension (the SDK's client, and toolnexus's own),
and with the A2A profile served beside it an MCP task and an A2A task are views of one task."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim

from mcp import Client, MCPError
from support.a2a_agent import message, rpc
from support.polling import wait_until
from support.requires import missing
from toolnexus import Toolkit, ToolResult, pending
from toolnexus.mcp_source import load_mcp_with_context
from toolnexus.mcp_source._tasks import TASKS, TaskHandle, cancel_task, get_task, update_task
from toolnexus.serve import ServeHandle
from toolnexus.serve._a2a._run_task import RunTaskClient
from toolnexus.types import Tool, ToolContext

GATE = asyncio.Event()
FASTMCP_PYTHON = os.environ.get("TOOLNEXUS_FASTMCP_TASKS_PYTHON", "")
FASTMCP_CLIENT = Path(__file__).resolve().parents[1] / "support" / "fastmcp_tasks" / "client.py"


async def build(args: dict[str, Any], ctx: ToolContext) -> str:
    if ctx.on_progress is not None:
        await ctx.on_progress({"progress": 1, "total": None, "message": "compiling"})
    await GATE.wait()
    return f"built {args.get('n')}"


async def hold(args: dict[str, Any], ctx: ToolContext) -> str:
    await asyncio.Event().wait()  # until cancelled
    return "never"


def ask(args: dict[str, Any], ctx: ToolContext) -> ToolResult | str:
    if ctx.answer is None:
        return pending(kind="input", prompt="Your name?", id="who")
    return f"Hi {(ctx.answer.data or {}).get('answer')}"


def toolkit() -> Toolkit:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    empty = {"type": "object", "properties": {}}
    return Toolkit(
        extra_tools=[
            Tool("build", "Build.", schema, "native", build, metadata={"taskSupport": "required"}),
            Tool("hold", "Hold.", empty, "native", hold, metadata={"taskSupport": "optional"}),
            Tool("ask", "Ask.", empty, "native", ask, metadata={"taskSupport": "optional"}),
            Tool("quick", "Quick.", empty, "native", lambda a, c: "quick"),
        ],
        builtins=False,
    )


class _Tasks(ClientExtension):
    """The SDK client's side of the extension, as a test would write it: it declares the
    extension and reads a task handle (the test follows the task itself)."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        async def unresolved(handle: TaskHandle, ctx: ClaimContext) -> Any:
            raise AssertionError("followed by the test")

        return [ResultClaim(result_type="task", model=TaskHandle, resolve=unresolved)]


@pytest_asyncio.fixture
async def both() -> AsyncIterator[ServeHandle]:
    GATE.clear()
    handle = await toolkit().serve(
        "127.0.0.1:0", client=RunTaskClient(lambda text, _: f"agent: {text}"), a2a={}, mcp={}
    )
    yield handle
    await handle.stop()


async def follow(client: Client, task_id: str, until: str) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        task = await get_task(client.session, task_id)
        return task if task["status"] == until else None

    found: dict[str, Any] = await wait_until(reached)
    return found


async def test_a_task_tool_answers_a_declaring_caller_with_a_task_it_follows(
    both: ServeHandle,
) -> None:
    async with Client(both.url + "/mcp", extensions=[_Tasks()]) as client:
        handle = await client.session.call_tool("build", {"n": 3}, allow_claimed=True)
        assert isinstance(handle, TaskHandle) and handle.status == "working"
        working = await follow(client, handle.task_id, "working")
        assert working["pollIntervalMs"] == 500
        assert (await client.call_tool("quick", {})).content[0].text == "quick"  # as ever
        GATE.set()
        done = await follow(client, handle.task_id, "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "built 3"}]
        assert done["result"]["isError"] is False
        with pytest.raises(MCPError) as unknown:
            await get_task(client.session, "no-such-task")
        assert unknown.value.code == -32602


async def test_a_required_task_tool_refuses_a_caller_without_the_extension(
    both: ServeHandle,
) -> None:
    async with Client(both.url + "/mcp") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("build", {"n": 1})
        assert refused.value.code == -32021
        assert (await client.call_tool("quick", {})).content[0].text == "quick"


async def test_an_mcp_task_and_an_a2a_task_are_one_task(both: ServeHandle) -> None:
    async with (
        Client(both.url + "/mcp", extensions=[_Tasks()]) as client,
        httpx2.AsyncClient() as http,
    ):
        # created over MCP, read and cancelled over A2A, seen cancelled over MCP
        handle = await client.session.call_tool("hold", {}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        got = (await rpc(http, both.url, "GetTask", {"id": handle.task_id}))["result"]
        assert (got["id"], got["status"]["state"]) == (handle.task_id, "TASK_STATE_WORKING")
        await rpc(http, both.url, "CancelTask", {"id": handle.task_id})
        await follow(client, handle.task_id, "cancelled")

        # created over A2A, read over MCP
        sent = await rpc(http, both.url, "SendMessage", {"message": message("hello")})
        task_id = sent["result"]["task"]["id"]
        done = await follow(client, task_id, "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "agent: hello"}]

        # an input request inside an MCP task, answered with tasks/update
        asked = await client.session.call_tool("ask", {}, allow_claimed=True)
        assert isinstance(asked, TaskHandle)
        waiting = await follow(client, asked.task_id, "input_required")
        assert waiting["inputRequests"]["who"]["params"]["message"] == "Your name?"
        a2a_view = (await rpc(http, both.url, "GetTask", {"id": asked.task_id}))["result"]
        assert a2a_view["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        reply = {"action": "accept", "content": {"answer": "Ada"}}
        await update_task(client.session, asked.task_id, {"who": reply})
        greeted = await follow(client, asked.task_id, "completed")
        assert greeted["result"]["content"][0]["text"] == "Hi Ada"

        # cancelled over MCP, seen over A2A
        held = await client.session.call_tool("hold", {}, allow_claimed=True)
        assert isinstance(held, TaskHandle)
        await cancel_task(client.session, held.task_id)
        seen = (await rpc(http, both.url, "GetTask", {"id": held.task_id}))["result"]
        assert seen["status"]["state"] == "TASK_STATE_CANCELED"


async def test_toolnexus_as_the_caller_follows_a_served_task_to_its_result() -> None:
    GATE.set()
    handle = await toolkit().serve("127.0.0.1:0", mcp={"taskStore": "memory"})
    try:
        source = await load_mcp_with_context({"g": {"url": handle.url + "/mcp"}})
        try:
            tools = {t.name: t for t in source.tools}
            result = await tools["g_build"].execute({"n": 7})
            assert (result.output, result.is_error) == ("built 7", False)
        finally:
            await source.close()
    finally:
        await handle.stop()


async def test_fastmcps_client_follows_a_served_task(both: ServeHandle) -> None:
    if not FASTMCP_PYTHON:
        missing(
            "FastMCP with fastmcp-tasks (TOOLNEXUS_FASTMCP_TASKS_PYTHON)",
            "make test builds .venv-fastmcp-tasks",
        )
    GATE.set()
    proc = await asyncio.create_subprocess_exec(
        FASTMCP_PYTHON,
        str(FASTMCP_CLIENT),
        both.url + "/mcp",
        "build",
        json.dumps({"n": 5}),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert answer["text"] == "built 5"
    async with httpx2.AsyncClient() as http:  # the same task, seen over A2A
        seen = (await rpc(http, both.url, "GetTask", {"id": answer["task"]}))["result"]
    assert seen["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_replicas_on_one_shared_store_serve_each_others_tasks(postgres: Any) -> None:
    GATE.clear()
    profile = {"taskStore": postgres.database("mcp_tasks_replicas")}
    first = await toolkit().serve("127.0.0.1:0", mcp=profile)
    second = await toolkit().serve("127.0.0.1:0", mcp=profile)
    try:
        async with (
            Client(first.url + "/mcp", extensions=[_Tasks()]) as here,
            Client(second.url + "/mcp", extensions=[_Tasks()]) as there,
        ):
            handle = await here.session.call_tool("build", {"n": 2}, allow_claimed=True)
            assert isinstance(handle, TaskHandle)
            # the other replica reads the task running on the first (not orphaned)
            assert (await get_task(there.session, handle.task_id))["status"] == "working"
            GATE.set()
            done = await follow(there, handle.task_id, "completed")
            assert done["result"]["content"] == [{"type": "text", "text": "built 2"}]

            held = await here.session.call_tool("hold", {}, allow_claimed=True)
            assert isinstance(held, TaskHandle)
            await cancel_task(there.session, held.task_id)  # cancelled on the other replica
            await follow(here, held.task_id, "cancelled")
    finally:
        await first.stop()
        await second.stop()


async def test_a_task_tool_runs_as_a_task_over_stdio() -> None:
    script = Path(__file__).resolve().parents[1] / "support" / "stdio_tasks_gateway.py"
    src = str(Path(__file__).resolve().parents[2] / "src")
    entry = {"command": sys.executable, "args": [str(script)], "env": {"PYTHONPATH": src}}
    # a task-only tool: it answers only a caller that follows its task
    source = await load_mcp_with_context({"s": entry, "plain": {**entry, "tasks": "avoid"}})
    try:
        assert source.status == {"s": "connected", "plain": "connected"}
        tools = {t.name: t for t in source.tools}
        done = await tools["s_build"].execute({"n": 7})
        assert (done.output, done.is_error) == ("built 7", False)
        refused = await tools["plain_build"].execute({"n": 1})
        assert refused.is_error
    finally:
        await source.close()


async def stops(args: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.signal.wait()  # a tool that heeds its signal
    return "stopped"


async def test_a_task_call_is_observed_like_a_plain_call_when_it_ends() -> None:
    GATE.clear()
    seen: list[dict[str, Any]] = []
    kit = toolkit()
    empty = {"type": "object", "properties": {}}
    optional = {"taskSupport": "optional"}
    kit.register(Tool("stop_me", "Stop.", empty, "native", stops, metadata=optional))
    handle = await kit.serve("127.0.0.1:0", mcp={"taskStore": "memory"}, on_call=seen.append)
    try:
        async with Client(handle.url + "/mcp", extensions=[_Tasks()]) as client:
            assert (await client.call_tool("quick", {})).content[0].text == "quick"
            built = await client.session.call_tool("build", {"n": 2}, allow_claimed=True)
            held = await client.session.call_tool("stop_me", {}, allow_claimed=True)
            asked = await client.session.call_tool("ask", {}, allow_claimed=True)
            assert all(isinstance(h, TaskHandle) for h in (built, held, asked))
            await follow(client, asked.task_id, "input_required")
            # a task waiting for input, or still working, has not ended
            assert [e["name"] for e in seen] == ["quick"]
            GATE.set()
            await follow(client, built.task_id, "completed")
            await cancel_task(client.session, held.task_id)
            await follow(client, held.task_id, "cancelled")
            await wait_until(lambda: len(seen) == 3 or None)
    finally:
        await handle.stop()
    quick, *ended = seen
    assert set(quick) == {"name", "source", "ms", "is_error"}
    by_name = {e["name"]: e for e in ended}
    assert {k: v for k, v in by_name["build"].items() if k != "ms"} == {
        "name": "build",
        "source": "native",
        "is_error": False,
        "task": built.task_id,
        "status": "completed",
    }
    assert {k: v for k, v in by_name["stop_me"].items() if k != "ms"} == {
        "name": "stop_me",
        "source": "native",
        "is_error": True,
        "task": held.task_id,
        "status": "cancelled",
    }
    assert all(isinstance(e["ms"], int) and e["ms"] >= 0 for e in ended)
