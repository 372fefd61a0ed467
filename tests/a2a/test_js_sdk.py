"""The official JavaScript SDK `@a2a-js/sdk` 1.3.0 on both sides, on loopback: its client
against our served agent, and our agent tool against an agent built with it. Node and the
package come from `.ci/run` (`npm install --prefix tests/.node ...`)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from support.a2a_agent import Model, Seen, make_tools
from support.requires import missing
from toolnexus.a2a import agent, agent_tools
from toolnexus.client import create_in_process_client
from toolnexus.skill import SkillDef
from toolnexus.toolkit import create_toolkit
from toolnexus.types import ToolContext

TESTS = Path(__file__).resolve().parent.parent
NODE_DIR = TESTS / ".node"
SCRIPTS = TESTS / "support" / "js"
INSTALL = "npm install --prefix tests/.node @a2a-js/sdk@1.3.0 express@5.3.0 (see .ci/run)"
TOKEN = "js-interop-token"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        missing("node (Node.js 20+)", "apt-get install nodejs")
    if not (NODE_DIR / "node_modules" / "@a2a-js" / "sdk" / "package.json").is_file():
        missing("@a2a-js/sdk in tests/.node", INSTALL)
    return node


async def _run_client(url: str, token: str) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        _node(),
        str(SCRIPTS / "a2a_client.cjs"),
        str(NODE_DIR),
        url,
        token,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(60):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()[-2000:]
    return dict(json.loads(out))


async def test_the_js_client_against_our_agent_with_a_static_token():
    seen = Seen()
    toolkit = await create_toolkit(
        skills=[SkillDef(name="echo", content="Echo.", description="Echoes the task.")],
        builtins=False,
        extra_tools=make_tools(seen),
    )
    client = create_in_process_client(model="scripted", generate=Model(seen))
    try:
        handle = await toolkit.serve(
            "127.0.0.1:0", client=client, a2a={"name": "tn"}, auth_token=TOKEN
        )
        async with handle:
            seen_by_js = await _run_client(handle.url, TOKEN)
    finally:
        await toolkit.close()
    # The card is read without a token and says how to authenticate.
    assert seen_by_js["card"] == {"status": 200, "securitySchemes": ["bearer"]}
    completed, canceled, input_required = 3, 5, 6  # the JS TaskState enum
    sent = seen_by_js["sent"]
    assert sent["state"] == completed
    assert seen_by_js["got"] == sent
    # ListTasks without a filter (the JS client sends status "UNRECOGNIZED") lists the task.
    assert seen_by_js["listed"] == {"ids": [sent["id"]], "total": 1}
    assert seen_by_js["asking"] == {"state": input_required}
    first, second = seen_by_js["cancels"]
    assert first == {"state": canceled}
    assert second["error"]["name"] == "JsonRpcTaskNotCancelableError"
    assert seen_by_js["unknown"] == {
        "name": "JsonRpcTaskNotFoundError",
        "message": "Task not found: no-such-task",
    }


@pytest_asyncio.fixture(loop_scope="session")
async def js_agent() -> AsyncIterator[str]:
    """The JS agent's base URL; it takes `TOKEN` on every route but its card."""
    process = await asyncio.create_subprocess_exec(
        _node(),
        str(SCRIPTS / "a2a_agent.cjs"),
        str(NODE_DIR),
        TOKEN,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        async with asyncio.timeout(30):
            line = await process.stdout.readline()
        assert line, (await process.stderr.read()).decode()[-2000:] if process.stderr else ""
        yield str(json.loads(line)["url"])
    finally:
        process.stdin.close()
        try:
            async with asyncio.timeout(10):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


async def test_our_agent_tool_against_the_js_agent(js_agent: str):
    [tool] = await agent_tools(
        agent(js_agent, headers={"Authorization": f"Bearer {TOKEN}"}, poll_every=10)
    )
    assert tool.name == "jsagent_echo"
    result = await tool.execute({"task": "hello js"}, ToolContext(timeout=20))
    assert (result.output, result.is_error) == ("js echo: hello js", False)
    # Its card is public, the calls are not: without the token the call fails, clearly.
    [bare] = await agent_tools(agent(js_agent, poll_every=10))
    refused = await bare.execute({"task": "no token"}, ToolContext(timeout=20))
    assert refused.is_error and "401" in str(refused.output)


@pytest.mark.parametrize("streaming", [False, True])
async def test_our_agent_tool_polls_or_streams_the_js_agent(js_agent: str, streaming: bool):
    [tool] = await agent_tools(
        agent(
            js_agent,
            headers={"Authorization": f"Bearer {TOKEN}"},
            poll_every=10,
            streaming=streaming,
        )
    )
    result = await tool.execute({"task": f"mode {streaming}"}, ToolContext(timeout=20))
    assert (result.output, result.is_error) == (f"js echo: mode {streaming}", False)
