"""The MCP profile without HTTP: `serve_stdio` in a subprocess, `build_mcp_server` in memory."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp import Client, MCPError
from toolnexus.serve import build_mcp_server, exposed_mcp_tools
from toolnexus.types import Tool

GATEWAY = Path(__file__).parents[1] / "support" / "stdio_gateway.py"
SRC = Path(__file__).parents[2] / "src"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


def _frame(id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"},
}
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


async def _spawn_gateway() -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(GATEWAY),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(),
    )


async def test_stdio_gateway_protocol_only_cancellation_and_eof():
    """A toolkit's `serve_stdio` in a subprocess, spoken to frame by frame."""
    process = await _spawn_gateway()
    assert process.stdin and process.stdout and process.stderr
    stderr_lines: list[bytes] = []
    try:
        process.stdin.write(_frame(1, "initialize", INIT) + INITIALIZED)
        process.stdin.write(_frame(2, "tools/call", {"name": "noisy", "arguments": {"text": "x"}}))
        process.stdin.write(_frame(3, "tools/list"))
        process.stdin.write(_frame(5, "tools/call", {"name": "hidden", "arguments": {}}))
        await process.stdin.drain()
        replies = {}
        while len(replies) < 4:
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line, "the gateway closed stdout early"
            reply = json.loads(line)  # every stdout line is a JSON-RPC message
            assert reply["jsonrpc"] == "2.0"
            replies[reply["id"]] = reply
        initialized = replies[1]["result"]
        assert initialized["serverInfo"] == {"name": "stdio-gateway", "version": "0.1.0"}
        assert "tools" in initialized["capabilities"]
        # Output and is_error only: a result's metadata never goes on the wire.
        assert replies[2]["result"] == {
            "content": [{"type": "text", "text": "quiet result: x"}],
            "isError": False,
        }
        assert [t["name"] for t in replies[3]["result"]["tools"]] == ["noisy", "hang"]
        # A tool outside the profile's list is unknown: a protocol error, not an isError result.
        assert replies[5]["error"] == {"code": -32602, "message": "Unknown tool: hidden"}

        # A session transport carries `notifications/cancelled`: it reaches the running tool.
        process.stdin.write(_frame(4, "tools/call", {"name": "hang", "arguments": {}}))
        cancel = {"requestId": 4, "reason": "user gave up"}
        note = (
            json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
            + "\n"
        ).encode()

        async def cancelled_line() -> bytes:
            while True:
                line = await process.stderr.readline()
                stderr_lines.append(line)
                if not line or b"hang cancelled" in line:
                    return line

        watcher = asyncio.ensure_future(cancelled_line())
        # The call may not have reached the tool yet: resend the cancel until the tool reports.
        while not watcher.done():
            process.stdin.write(note)
            await process.stdin.drain()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(watcher), 0.2)
        assert b"signal=True" in watcher.result()

        process.stdin.close()  # EOF ends the server and the script
        rest, stderr = await asyncio.wait_for(
            asyncio.gather(process.stdout.read(), process.stderr.read()), 30
        )
        assert await asyncio.wait_for(process.wait(), 30) == 0
        assert rest == b""  # nothing else ever reached stdout (a cancelled call gets no reply)
        text = b"".join(stderr_lines).decode() + stderr.decode()
        assert "stray print from a tool" in text
        assert "a log line from a tool" in text
        assert "gateway exiting" in text
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_build_mcp_server_in_memory():
    calls: list[dict[str, Any]] = []
    tools = [
        Tool(
            "add",
            "Add two integers",
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            "native",
            lambda args, ctx: str(args["a"] + args["b"]),
        ),
        Tool("other", "Filtered out", None, "native", lambda a, c: "no"),
    ]
    server = build_mcp_server(tools, {"name": "mem", "tools": ["add"]}, on_call=calls.append)
    async with Client(server) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["add"]
        assert (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"
        bad = await client.call_tool("add", {"a": "2"})
        assert bad.is_error
        assert "Invalid arguments for tool add" in bad.content[0].text
        with pytest.raises(MCPError) as caught:
            await client.call_tool("other", {})
        assert caught.value.code == -32602
    assert [(c["name"], c["is_error"]) for c in calls] == [("add", False), ("add", True)]


def test_exposed_mcp_tools_filter():
    tools = [Tool(n, n, None, "native", lambda a, c: "") for n in ["a", "b", "c"]]
    assert [t.name for t in exposed_mcp_tools(tools)] == ["a", "b", "c"]
    assert [t.name for t in exposed_mcp_tools(tools, {})] == ["a", "b", "c"]
    assert [t.name for t in exposed_mcp_tools(tools, {"tools": ["c", "a", "zz"]})] == ["a", "c"]
    assert exposed_mcp_tools(tools, {"tools": []}) == []
    with pytest.raises(TypeError, match="list of tool names"):
        exposed_mcp_tools(tools, {"tools": "a"})


def _asking() -> Tool:
    from toolnexus.types import ToolResult, pending

    def ask(args: dict[str, Any], ctx: Any) -> ToolResult:
        if ctx.answer is None:
            return pending(kind="input", prompt="Your name?")
        return ToolResult(f"hello {(ctx.answer.data or {}).get('answer')}")

    return Tool("ask", "Ask for a name", None, "native", ask)


async def test_request_state_keys_are_checked_expanded_and_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolnexus.errors import ConfigError

    secret = "k" * 40
    for cfg, message in [
        ({"requestStateKeys": ["short-secret"]}, '"requestStateKeys" must be 32+ bytes'),
        ({"requestStateKeys": secret}, '"requestStateKeys" must be a list of strings'),
        ({"requestStateKeys": []}, '"requestStateKeys" must be a list of strings'),
        ({"requestStateTtl": 0}, '"requestStateTtl" must be a positive number of ms'),
    ]:
        with pytest.raises(ConfigError) as bad:
            build_mcp_server([_asking()], cfg)
        assert message in str(bad.value)
        assert "short-secret" not in str(bad.value) and secret not in str(bad.value)
    # a key from the environment seals what the same key, written out, unseals
    monkeypatch.setenv("TN_TEST_STATE_KEY", secret)
    minting = build_mcp_server([_asking()], {"requestStateKeys": ["${TN_TEST_STATE_KEY}"]})
    finishing = build_mcp_server([_asking()], {"requestStateKeys": ["o" * 40, secret]})

    async def never(context: Any, params: Any) -> Any:
        raise AssertionError("answered by hand below")

    async with Client(minting, elicitation_callback=never) as first:
        raw = await first.session.call_tool("ask", {}, allow_input_required=True)
    assert raw.request_state is not None and secret not in raw.request_state
    [key] = list(raw.input_requests or {})  # type: ignore[union-attr]
    responses: Any = {key: {"action": "accept", "content": {"answer": "Ada"}}}
    async with Client(
        finishing, elicitation_callback=never
    ) as second:  # any key of the list unseals (rotation)
        done = await second.call_tool(
            "ask", {}, input_responses=responses, request_state=raw.request_state
        )
    assert done.content[0].text == "hello Ada"  # type: ignore[union-attr]
