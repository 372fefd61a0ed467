"""a2a-sdk 0.3.x both ways. It cannot share an environment with a2a-sdk 1.x (the same `a2a`
package), so its side runs in the Python named by `TOOLNEXUS_A2A03_PYTHON` (`make test` builds
and caches that virtualenv); without it these tests skip, and fail under
`TOOLNEXUS_REQUIRE_ALL=1`."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from support.polling import wait_until
from support.requires import missing
from toolnexus.a2a import agent, agent_tools
from toolnexus.types import Answer, ToolContext

PYTHON = os.environ.get("TOOLNEXUS_A2A03_PYTHON", "")
SCRIPTS = Path(__file__).resolve().parents[1] / "support" / "a2a03"

pytestmark = pytest.mark.a2a03


@pytest.fixture(autouse=True)
def _a2a03_python() -> None:
    if not PYTHON:
        missing("a2a-sdk 0.3 Python (TOOLNEXUS_A2A03_PYTHON)", "make test builds .venv-a2a03")


async def test_sdk03_client_against_our_agent(served):
    proc = await asyncio.create_subprocess_exec(
        PYTHON,
        str(SCRIPTS / "client.py"),
        served.url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    steps = {line["step"]: line for line in map(json.loads, out.decode().splitlines())}
    assert steps["card"] == {"step": "card", "name": "tn", "url": served.url + "/"}
    [polled] = steps["send streaming=False"]["events"]
    assert polled["task"]["status"]["state"] == "completed"
    assert polled["task"]["artifacts"][0]["parts"] == [
        {"kind": "text", "text": "turns=1 last=sdk03 streaming=False"}
    ]
    streamed = steps["send streaming=True"]["events"]
    assert streamed[-1]["task"]["status"]["state"] == "completed"
    assert streamed[-1]["update"]["final"] is True
    resume = steps["resume"]
    assert resume["asked"]["task"]["status"]["state"] == "input-required"
    message = resume["asked"]["task"]["status"]["message"]
    assert message["messageId"] and message["metadata"]["toolnexusRequest"]["kind"] == "question"
    [done] = resume["events"]
    assert done["task"]["id"] == resume["asked"]["task"]["id"]
    assert done["task"]["status"]["state"] == "completed"


@pytest_asyncio.fixture(params=[False, True], ids=["poll", "stream"], loop_scope="session")
async def sdk03_server(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, Any]]:
    args = ["--streaming"] if request.param else []
    proc = await asyncio.create_subprocess_exec(
        PYTHON, str(SCRIPTS / "server.py"), *args, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
        async with httpx2.AsyncClient() as http:

            async def up() -> bool:
                try:
                    return (await http.get(url + "/seen")).status_code == 200
                except httpx2.HTTPError:
                    return False

            await wait_until(up, timeout=30)
        yield {"url": url, "streaming": request.param}
    finally:
        proc.kill()
        await proc.wait()


async def test_our_tool_against_an_sdk03_server(sdk03_server):
    url = sdk03_server["url"]
    [tool] = await agent_tools(agent(url, poll_every=20))
    result = await tool.execute({"task": "echo old peer"}, ToolContext(timeout=20))
    assert (result.output, result.is_error) == ("echo: echo old peer", False)
    meta = result.metadata or {}
    assert meta["protocol"] == "0.3"
    assert (meta["polls"] == 0) == sdk03_server["streaming"]

    waiting = await tool.execute({"task": "ask"}, ToolContext(timeout=20))
    request = (waiting.metadata or {})["pending"]
    assert (request.kind, request.prompt) == ("input", "Your name?")
    answer = Answer(id=request.id, ok=True, data={"text": "Lin"})
    done = await tool.execute({"task": "ask"}, ToolContext(timeout=20, answer=answer))
    assert (done.output, done.is_error) == ("hello Lin", False)

    slow = await tool.execute({"task": "sleep"}, ToolContext(timeout=0.4))
    task_id = (slow.metadata or {})["taskId"]
    assert slow.output == f"A2A task {task_id} timed out after 400ms (state=working)"
    async with httpx2.AsyncClient() as http:

        async def canceled() -> bool:
            return task_id in (await http.get(url + "/seen")).json()

        await wait_until(canceled)
