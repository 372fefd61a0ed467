"""The gateway relays upstream MCP tasks: a toolkit built from a server that runs its tools as
tasks (`support/mcp_servers/tasks_server.py`, on the SDK's extension framework; FastMCP with
`fastmcp-tasks`), served as an MCP server, answers a caller that declared the Tasks extension
(the SDK's client, FastMCP's, toolnexus's) with a task of its own that follows the upstream one
(`tasks/get`, `tasks/update`, `tasks/cancel` reach the upstream task); a caller without the
extension, and an upstream tool answered at once, get plain answers."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim

from mcp import Client
from support.db_servers import free_port
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.tasks_server import app
from support.polling import wait_until
from support.requires import missing
from toolnexus import create_toolkit
from toolnexus.mcp_source import load_mcp_with_context
from toolnexus.mcp_source._tasks import TASKS, TaskHandle, cancel_task, get_task, update_task
from toolnexus.serve import ServeHandle
from toolnexus.serve._a2a._run_task import RunTaskClient
from toolnexus.toolkit import Toolkit
from toolnexus.types import Answer, Request

FASTMCP_PYTHON = os.environ.get("TOOLNEXUS_FASTMCP_TASKS_PYTHON", "")
FASTMCP_SERVER = Path(__file__).resolve().parents[1] / "support" / "fastmcp_tasks" / "server.py"
FASTMCP_CLIENT = Path(__file__).resolve().parents[1] / "support" / "fastmcp_tasks" / "client.py"
BOOT_S = 90.0  # importing FastMCP and docket on a loaded machine


class _Tasks(ClientExtension):
    """The SDK client declaring the extension and reading a task handle (followed by the test)."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        async def unresolved(handle: TaskHandle, ctx: ClaimContext) -> Any:
            raise AssertionError("followed by the test")

        return [ResultClaim(result_type="task", model=TaskHandle, resolve=unresolved)]


@pytest.fixture(scope="module")
def upstream() -> Iterator[ThreadedHttpServer]:
    server = ThreadedHttpServer(app())
    yield server
    server.stop()


@pytest_asyncio.fixture
async def gateway(upstream: ThreadedHttpServer) -> AsyncIterator[tuple[Toolkit, ServeHandle]]:
    toolkit = await create_toolkit(mcp_config={"t": {"url": upstream.url()}}, builtins=False)
    handle = await toolkit.serve("127.0.0.1:0", mcp={})
    yield toolkit, handle
    await handle.stop()
    await toolkit.close()


async def follow(client: Client, task_id: str, until: str) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        task = await get_task(client.session, task_id)
        return task if task["status"] == until else None

    found: dict[str, Any] = await wait_until(reached)
    return found


async def upstream_counts(client: Client) -> dict[str, Any]:
    result = await client.call_tool("t_calls", {})
    counts: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return counts


async def test_an_upstream_task_reaches_a_declaring_caller_as_a_task_it_follows(
    gateway: tuple[Toolkit, ServeHandle],
) -> None:
    _, handle = gateway
    async with Client(handle.url + "/mcp", extensions=[_Tasks()]) as client:
        before = await upstream_counts(client)
        answered = await client.session.call_tool("t_steps", {"n": 2}, allow_claimed=True)
        assert isinstance(answered, TaskHandle) and answered.status == "working"
        done = await follow(client, answered.task_id, "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "done 2"}]
        assert done["result"]["isError"] is False
        after = await upstream_counts(client)
        assert after["calls"]["steps"] == before["calls"].get("steps", 0) + 1  # called once
        # an upstream tool answered at once is a plain answer, task-declaring caller or not
        plain = await client.session.call_tool("t_plain", {}, allow_claimed=True)
        assert not isinstance(plain, TaskHandle)
        assert plain.content[0].text == "plain answer"  # type: ignore[union-attr]


async def test_a_caller_without_the_extension_gets_the_upstream_result(
    gateway: tuple[Toolkit, ServeHandle],
) -> None:
    _, handle = gateway
    async with Client(handle.url + "/mcp") as client:
        result = await client.call_tool("t_steps", {"n": 1})
        assert result.content[0].text == "done 1"  # type: ignore[union-attr]


async def test_an_upstream_input_request_is_answered_with_tasks_update_on_the_gateway_task(
    gateway: tuple[Toolkit, ServeHandle],
) -> None:
    _, handle = gateway
    async with Client(handle.url + "/mcp", extensions=[_Tasks()]) as client:
        answered = await client.session.call_tool("t_ask_name", {}, allow_claimed=True)
        assert isinstance(answered, TaskHandle)
        waiting = await follow(client, answered.task_id, "input_required")
        [(key, asked)] = waiting["inputRequests"].items()
        assert asked["method"] == "elicitation/create"
        assert asked["params"]["message"] == "Please enter your name."
        reply = {"action": "accept", "content": {"name": "Ada"}}
        await update_task(client.session, answered.task_id, {key: reply})
        done = await follow(client, answered.task_id, "completed")
        assert done["result"]["content"][0]["text"] == "Hello, Ada!"


async def test_cancelling_the_gateway_task_cancels_the_upstream_task(
    gateway: tuple[Toolkit, ServeHandle],
) -> None:
    _, handle = gateway
    async with Client(handle.url + "/mcp", extensions=[_Tasks()]) as client:
        before = (await upstream_counts(client))["cancelled"]
        answered = await client.session.call_tool("t_forever", {}, allow_claimed=True)
        assert isinstance(answered, TaskHandle)
        await follow(client, answered.task_id, "working")
        await cancel_task(client.session, answered.task_id)
        await follow(client, answered.task_id, "cancelled")

        async def cancelled_upstream() -> bool:
            return (await upstream_counts(client))["cancelled"] == before + 1

        assert await wait_until(cancelled_upstream)


async def test_a_fastmcp_upstream_task_reaches_a_declaring_caller_as_a_task() -> None:
    if not FASTMCP_PYTHON:
        missing(
            "FastMCP with fastmcp-tasks (TOOLNEXUS_FASTMCP_TASKS_PYTHON)",
            "make test builds .venv-fastmcp-tasks",
        )
    port = free_port()
    proc = subprocess.Popen(
        [FASTMCP_PYTHON, str(FASTMCP_SERVER), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def listening() -> bool:
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) == 0

        await wait_until(listening, timeout=BOOT_S, check_every=0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        toolkit = await create_toolkit(mcp_config={"f": {"url": url}}, builtins=False)
        handle = await toolkit.serve("127.0.0.1:0", mcp={})
        try:
            async with Client(handle.url + "/mcp", extensions=[_Tasks()]) as client:
                answered = await client.session.call_tool("f_crunch", {"n": 4}, allow_claimed=True)
                assert isinstance(answered, TaskHandle)
                done = await follow(client, answered.task_id, "completed")
                assert done["result"]["content"][0]["text"] == "crunched 4"
        finally:
            await handle.stop()
            await toolkit.close()
    finally:
        proc.kill()
        proc.wait(timeout=30)


async def test_toolnexus_through_the_gateway_follows_the_relayed_task(
    gateway: tuple[Toolkit, ServeHandle],
) -> None:
    _, handle = gateway
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(request.id, True, {"name": "Grace"})

    source = await load_mcp_with_context({"g": {"url": handle.url + "/mcp"}}, wait_for)
    try:
        tools = {t.name: t for t in source.tools}
        greeted = await tools["g_t_ask_name"].execute()
        assert (greeted.output, greeted.is_error) == ("Hello, Grace!", False)
        [request] = asked
        assert request.prompt == "Please enter your name."
        counted = await tools["g_t_steps"].execute({"n": 2})
        assert (counted.output, counted.is_error) == ("done 2", False)
    finally:
        await source.close()


async def test_fastmcps_client_follows_a_relayed_task(
    gateway: tuple[Toolkit, ServeHandle],
) -> None:
    if not FASTMCP_PYTHON:
        missing(
            "FastMCP with fastmcp-tasks (TOOLNEXUS_FASTMCP_TASKS_PYTHON)",
            "make test builds .venv-fastmcp-tasks",
        )
    _, handle = gateway
    proc = await asyncio.create_subprocess_exec(
        FASTMCP_PYTHON,
        str(FASTMCP_CLIENT),
        handle.url + "/mcp",
        "t_steps",
        json.dumps({"n": 3}),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert answer["text"] == "done 3"  # its client insists on a task answer


async def test_with_no_room_for_another_task_the_upstream_task_is_followed_in_the_call(
    upstream: ThreadedHttpServer,
) -> None:
    toolkit = await create_toolkit(mcp_config={"t": {"url": upstream.url()}}, builtins=False)
    agent = RunTaskClient(lambda text, _: text)
    handle = await toolkit.serve("127.0.0.1:0", client=agent, a2a={"maxInFlight": 1}, mcp={})
    try:
        async with Client(handle.url + "/mcp", extensions=[_Tasks()]) as client:
            held = await client.session.call_tool("t_forever", {}, allow_claimed=True)
            assert isinstance(held, TaskHandle)  # the one task the gateway has room for
            answered = await client.session.call_tool("t_steps", {"n": 1}, allow_claimed=True)
            assert not isinstance(answered, TaskHandle)
            assert answered.content[0].text == "done 1"  # type: ignore[union-attr]
            await cancel_task(client.session, held.task_id)
    finally:
        await handle.stop()
        await toolkit.close()


async def test_a_relayed_task_cancelled_on_another_replica_cancels_the_upstream_task(
    upstream: ThreadedHttpServer, postgres: Any
) -> None:
    profile = {"taskStore": postgres.database("gateway_relayed_tasks")}
    toolkits = [
        await create_toolkit(mcp_config={"t": {"url": upstream.url()}}, builtins=False)
        for _ in range(2)
    ]
    first, second = [await kit.serve("127.0.0.1:0", mcp=profile) for kit in toolkits]
    try:
        async with (
            Client(first.url + "/mcp", extensions=[_Tasks()]) as here,
            Client(second.url + "/mcp", extensions=[_Tasks()]) as there,
        ):
            before = (await upstream_counts(here))["cancelled"]
            held = await here.session.call_tool("t_forever", {}, allow_claimed=True)
            assert isinstance(held, TaskHandle)
            assert (await get_task(there.session, held.task_id))["status"] == "working"
            await cancel_task(there.session, held.task_id)  # on the replica not running it
            await follow(here, held.task_id, "cancelled")

            async def cancelled_upstream() -> bool:
                return (await upstream_counts(here))["cancelled"] == before + 1

            assert await wait_until(cancelled_upstream)
    finally:
        for handle in (first, second):
            await handle.stop()
        for kit in toolkits:
            await kit.close()
