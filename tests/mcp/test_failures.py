"""Failure isolation, per-phase timeouts, readable reasons, and servers that die mid-session.

One module-wide load holds every misbehaving server at once: they connect concurrently, each
fails (or dies) alone, and the others keep working.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.mcp_fixtures import TOKEN_VAR
from support.mcp_servers import BASIC, SLOW_START, ThreadedHttpServer, command
from support.mcp_servers.basic_server import http_app
from toolnexus.mcp_source import McpSource, load_mcp_with_context
from toolnexus.types import Tool, ToolContext

UNSET_VAR = "TN_SURELY_UNSET_VARIABLE"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Special:
    source: McpSource
    refused_port: int

    def tool(self, name: str) -> Tool:
        return next(t for t in self.source.tools if t.name == name)


async def always_500(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An HTTP endpoint that fails every request (it does exist, so no SSE fallback)."""
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b"boom"})


@pytest.fixture(scope="module")
async def special(
    http_servers: dict[str, ThreadedHttpServer], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Special]:
    doomed_dir = tmp_path_factory.mktemp("doomed")
    barrier = tmp_path_factory.mktemp("barrier")
    server = " ".join(command(SLOW_START, "--life-tools"))
    # starts once; every later start fails (the marker file exists by then)
    doomed = (
        "if [ -e started ]; then echo 'no second life' >&2; exit 5; fi; "
        f"touch started; exec {server}"
    )
    evolving_dir = tmp_path_factory.mktemp("evolving")
    # the first start serves the life tools, every later one the basic server's other tools
    evolving = (
        f"if [ -e started ]; then exec {' '.join(command(BASIC))}; fi; touch started; exec {server}"
    )
    port = free_port()
    config = {
        "evolving": {"command": ["sh", "-c", evolving], "cwd": str(evolving_dir)},
        "crashy": {"command": command(BASIC, "--crash-after", "2")},
        "fragile": {"command": command(SLOW_START, "--life-tools"), "reconnect": False},
        "doomed": {"command": ["sh", "-c", doomed], "cwd": str(doomed_dir)},
        "hung": {"command": command(BASIC, "--hang-initialize"), "timeout": 1000},
        "listless": {"command": command(SLOW_START, "--hang", "tools/list"), "timeout": 2000},
        "odd": {"command": command(SLOW_START, "--odd-schemas")},
        # each of initialize and tools/list takes 3 s: over one 5 s budget, within two. The
        # first budget also pays for the server's start (interpreter + SDK import), which takes
        # up to ~2 s on 2 busy cores while the other servers of this module start with it.
        "unhurried": {"command": command(SLOW_START, "--phase-delay", "3"), "timeout": 5000},
        # none answers initialize before all four are running: only a concurrent load works
        **{
            f"together{i}": {
                "command": command(SLOW_START, "--barrier", str(barrier), "--count", "4"),
                "timeout": 20000,
            }
            for i in range(4)
        },
        "dup": {"command": command(SLOW_START, "--dup-cursor")},
        "endless": {"command": command(SLOW_START, "--endless"), "timeout": 120000},
        "missing": {"command": "definitely-not-installed-xyz --flag"},
        "badcwd": {"command": command(SLOW_START), "cwd": "/nonexistent/toolnexus-dir"},
        "wrongtype": {"command": 5},
        "crashstart": {
            "command": [sys.executable, "-c", "import sys; sys.exit('boom: missing dependency')"]
        },
        "noenv": {"url": http_servers["http"].url(), "headers": {"X-Key": f"${{{UNSET_VAR}}}"}},
        "refused": {"url": f"http://127.0.0.1:{port}/mcp?key=secret-in-query"},
        "unauthorized": {"url": http_servers["secure"].url()},
        "notfound": {"url": http_servers["http"].url("/nope")},
    }
    broken = ThreadedHttpServer(always_500)
    config["broken"] = {"url": broken.url()}
    source = await load_mcp_with_context(config)
    yield Special(source, port)
    await source.close()
    broken.stop()


async def test_only_the_good_servers_connect(special: Special) -> None:
    connected = {name for name, status in special.source.status.items() if status == "connected"}
    assert connected == {"crashy", "fragile", "doomed", "evolving", "odd", "unhurried"} | {
        f"together{i}" for i in range(4)
    }
    assert all(
        t.name.split("_", 1)[0] in connected
        for t in special.source.tools
        if t.name != "mcp_read_resource"  # shared by the servers that offer resources
    )


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        (  # the probe is what goes unanswered
            "hung",
            "discover timed out after 1000 ms; a server older than MCP 2026-07-28 needs "
            '"protocol": "legacy" in its entry, a slow one a larger "timeout" (ms)',
        ),
        (
            "listless",
            'tools/list timed out after 2000 ms; a slow server needs a larger "timeout" (ms) '
            "in its entry",
        ),
        ("dup", "MCP list returned duplicate cursor: page-1"),
        ("endless", "MCP list returned more than 1000 pages"),
        ("missing", 'cannot start "definitely-not-installed-xyz": No such file or directory'),
        ("badcwd", '"cwd" /nonexistent/toolnexus-dir is not a directory'),
        ("wrongtype", '"command" must be a list of strings or a string, not 5'),
        ("crashstart", "exited (code 1): boom: missing dependency"),
        ("noenv", f"environment variable {UNSET_VAR} is not set"),
        ("unauthorized", "HTTP 401 Unauthorized"),
        ("notfound", "streamable HTTP: HTTP 404 Not Found; SSE: HTTP 404 Not Found"),
        ("broken", "HTTP 500 Internal Server Error"),  # not retried over SSE
    ],
)
async def test_each_failure_has_a_readable_reason(
    special: Special, server: str, reason: str
) -> None:
    state = special.source.servers[server]
    assert (state.status, state.error, state.tool_count) == ("failed", reason, 0)


async def test_servers_are_connected_concurrently(special: Special) -> None:
    # Each `together` server answers initialize only once all four have been started.
    for i in range(4):
        state = special.source.servers[f"together{i}"]
        assert (state.status, state.error, state.transport, state.tool_count) == (
            "connected",
            None,
            "stdio",
            1,
        )


async def test_each_load_phase_gets_a_fresh_budget(special: Special) -> None:
    # 3 s in initialize plus 3 s in tools/list is more than one 5 s timeout.
    assert special.source.status["unhurried"] == "connected"


async def test_odd_tool_schemas_never_fail_the_server(special: Special) -> None:
    # The SDK alone rejects every one of these listings; the contract keeps the tools.
    tools = {t.name: t for t in special.source.tools if t.name.startswith("odd_")}
    schemas = {name: tool.input_schema for name, tool in tools.items()}
    assert schemas == {
        "odd_bare": {"type": "object", "properties": {}},  # the default when none is given
        "odd_null_schema": {"type": "object", "properties": {}},
        "odd_not_a_schema": {"type": "object", "properties": {}},  # not a schema at all
        "odd_typeless": {"properties": {"q": {"type": "string"}}},  # passed through unchanged
        "odd_loose": {"type": "object", "properties": {"q": "string"}},
        "odd_array_root": {"type": "array"},
    }
    assert tools["odd_bare"].description == ""
    result = await tools["odd_typeless"].execute({"q": "x"})
    assert (result.output, result.is_error) == ("pong", False)


async def test_a_refused_connection_is_reported_as_itself(special: Special) -> None:
    error = special.source.servers["refused"].error
    assert error == (
        f"cannot connect to http://127.0.0.1:{special.refused_port}/mcp: "
        "All connection attempts failed"
    )  # the query (which may hold a secret) is left out


async def test_failed_servers_record_the_transport_they_tried(special: Special) -> None:
    servers = special.source.servers
    assert servers["hung"].transport == "stdio"
    assert servers["refused"].transport == "streamable-http"
    assert servers["notfound"].transport == "sse"
    assert servers["broken"].transport == "streamable-http"
    assert servers["unauthorized"].transport == "streamable-http"
    assert servers["wrongtype"].transport is None


async def test_a_server_crashing_mid_call_then_reconnecting(special: Special) -> None:
    changes: list[int] = []
    special.source.on_tools_changed = lambda: changes.append(len(special.source.tools))
    try:
        echo = special.tool("crashy_echo")
        assert (await echo.execute({"text": "1"})).output == "1"
        assert (await echo.execute({"text": "2"})).output == "2"
        died = await echo.execute({"text": "3"})  # the server exits while serving this call
        assert died.is_error is True
        assert died.output == 'MCP server "crashy" exited (code 3): crashing after 2 calls'
        assert died.metadata == {"server": "crashy"}
        state = special.source.servers["crashy"]
        assert (state.status, state.error) == ("failed", "exited (code 3): crashing after 2 calls")
        again = await echo.execute({"text": "4"})  # one reconnect attempt: a fresh process
        assert (again.output, again.is_error) == ("4", False)
        assert special.source.status["crashy"] == "connected"
        assert special.source.servers["crashy"].error is None
        assert changes == [], "the respawned server lists the same tools: nothing changed"
        fresh = special.tool("crashy_calls_made")
        assert (await fresh.execute()).output == "2"  # the new process counts from zero
    finally:
        special.source.on_tools_changed = None


async def test_a_respawned_server_with_other_tools_tells_the_host(special: Special) -> None:
    changes: list[set[str]] = []
    special.source.on_tools_changed = lambda: changes.append(
        {t.name for t in special.source.tools if t.name.startswith("evolving_")}
    )
    try:
        before = {t.name for t in special.source.tools if t.name.startswith("evolving_")}
        exit_later = special.tool("evolving_exit_later")
        assert (await exit_later.execute({"code": 4, "message": "bye"})).output == "bye"
        await wait_for_status(special.source, "evolving", "failed")
        echo = special.tool("evolving_echo")
        assert (await echo.execute({"text": "x"})).is_error  # the death, reported once
        again = await echo.execute({"text": "y"})  # the reconnect: a server with other tools
        assert (again.output, again.is_error) == ("y", False)
        assert len(changes) == 1 and changes[0] != before
        assert "evolving_calls_made" in changes[0] - before  # one of the new server's tools
    finally:
        special.source.on_tools_changed = None


async def wait_for_status(source: McpSource, server: str, status: str) -> None:
    deadline = time.monotonic() + 10
    while source.status[server] != status:
        assert time.monotonic() < deadline, source.servers[server]
        await asyncio.sleep(0.01)


async def test_a_server_dying_between_calls_without_reconnect(special: Special) -> None:
    assert (
        await special.tool("fragile_exit_later").execute({"code": 9, "message": "bye"})
    ).output == "bye"
    await wait_for_status(special.source, "fragile", "failed")
    assert special.source.servers["fragile"].error == "exited (code 9): bye"
    echo = special.tool("fragile_echo")
    first = await echo.execute({"text": "x"})
    assert (first.output, first.is_error) == ('MCP server "fragile" exited (code 9): bye', True)
    second = await echo.execute({"text": "x"})  # `reconnect: false`: no new process
    assert (second.output, second.is_error) == (
        'MCP server "fragile" failed: exited (code 9): bye',
        True,
    )
    assert special.source.status["fragile"] == "failed"


async def test_a_reconnect_that_fails_keeps_the_new_reason(special: Special) -> None:
    await special.tool("doomed_exit_later").execute({"code": 2, "message": "first death"})
    await wait_for_status(special.source, "doomed", "failed")
    echo = special.tool("doomed_echo")
    first = await echo.execute({"text": "x"})
    assert first.output == 'MCP server "doomed" exited (code 2): first death'
    second = await echo.execute({"text": "x"})  # the reconnect attempt: the restart fails
    retried = " (respawning failed once; tried again by a call after 1 s)"
    assert second.output == f'MCP server "doomed" failed: exited (code 5): no second life{retried}'
    state = special.source.servers["doomed"]
    assert (state.status, state.error) == ("failed", f"exited (code 5): no second life{retried}")
    third = await echo.execute({"text": "x"})  # within the backoff: no restart yet
    assert third.output == second.output


async def test_a_remote_server_that_goes_away_and_comes_back() -> None:
    server = ThreadedHttpServer(http_app("--http", "0", "--name", "flaky"))
    source = await load_mcp_with_context({"flaky": {"url": server.url(), "timeout": 5000}})
    try:
        echo = next(t for t in source.tools if t.name == "flaky_echo")
        assert (await echo.execute({"text": "a"})).output == "a"
        server.stop()
        lost = await echo.execute({"text": "b"})
        assert lost.is_error is True
        assert lost.output.startswith('MCP server "flaky" connection lost: cannot connect to ')
        assert source.status["flaky"] == "failed"
        server = ThreadedHttpServer(http_app("--http", "0", "--name", "flaky"), port=server.port)
        back = await echo.execute({"text": "c"})  # the one reconnect attempt succeeds
        assert (back.output, back.is_error) == ("c", False)
        assert source.status["flaky"] == "connected"
    finally:
        await source.close()
        server.stop()


async def test_failures_are_warned_once_each_without_secrets(
    http_servers: dict[str, ThreadedHttpServer],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TN_WRONG_TOKEN", "wrong-secret-123")
    config = {
        "bad": {"command": ["ok", 1]},
        "denied": {
            "url": http_servers["secure"].url(),
            "headers": {"Authorization": "Bearer ${TN_WRONG_TOKEN}"},
        },
        "fine": {
            "url": http_servers["secure"].url(),
            "headers": {"Authorization": f"Bearer ${{{TOKEN_VAR}}}"},
        },
    }
    source = await load_mcp_with_context(config)
    try:
        assert source.status == {"bad": "failed", "denied": "failed", "fine": "connected"}
    finally:
        await source.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolnexus"]
    assert warnings == [
        '[toolnexus] MCP server "bad" failed: "command" must be a list of strings or a string, '
        "not a list holding a number",
        '[toolnexus] MCP server "denied" failed: HTTP 401 Unauthorized',
    ]
    assert "wrong-secret-123" not in caplog.text
    assert all(r.levelname == "WARNING" for r in caplog.records if r.name == "toolnexus")


async def test_an_unreadable_config_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{ not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        await load_mcp_with_context(path)


async def test_a_header_secret_never_leaks(
    http_servers: dict[str, ThreadedHttpServer],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "leak-canary-7c1d9e"
    monkeypatch.setenv("TN_CANARY", secret)
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx2's included
    headers = {"Authorization": "Bearer ${TN_CANARY}", "X-Key": "k=${TN_CANARY}"}
    config = {
        "denied": {"url": http_servers["secure"].url(), "headers": headers},
        "refused": {"url": f"http://127.0.0.1:{free_port()}/mcp", "headers": headers},
        "notfound": {"url": http_servers["http"].url("/nope"), "headers": headers},
        "legacy": {"url": http_servers["sse"].url("/sse"), "headers": headers},
        "remote": {"url": http_servers["http"].url(), "headers": headers, "timeout": 5000},
    }
    source = await load_mcp_with_context(config)
    seen: list[str] = [repr(source), repr(source.servers), repr(source.status)]
    try:
        assert source.status == {
            "denied": "failed",
            "refused": "failed",
            "notfound": "failed",
            "legacy": "connected",
            "remote": "connected",
        }
        tools = {t.name: t for t in source.tools}
        assert (await tools["remote_auth_header"].execute()).output == "present"
        outcomes = [
            await tools["remote_echo"].execute({"text": "hi"}),
            await tools["legacy_fail"].execute({"message": "no"}),
            await tools["remote_slow"].execute({"seconds": 30}, ToolContext(timeout=0.05)),
            await tools["remote_echo"].execute({}),  # rejected arguments
        ]
        seen += [f"{r.output} {r.metadata}" for r in outcomes]
    finally:
        await source.close()
    seen += [state.error or "" for state in source.servers.values()]
    assert all(secret not in text for text in seen)
    assert secret not in caplog.text
    assert all(secret not in str(record.args) for record in caplog.records)
