"""Both protocol eras: negotiation per `protocol`, what was negotiated, change events, respawn.

Every server here is the SDK's own (`support/mcp_servers/sdk_eras.py`) in one era or both, over
stdio (a child process) and streamable HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from support.mcp_fixtures import ErasShared
from support.mcp_servers import ERAS, SLOW_START, ThreadedHttpServer, command
from support.mcp_servers.sdk_eras import INSTRUCTIONS
from support.mcp_servers.sdk_eras import app as eras_app
from toolnexus.mcp_source import list_mcp_tools, load_mcp_with_context

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


@pytest.mark.parametrize(
    ("server", "protocol"),
    [
        ("s_dual", MODERN),
        ("h_dual", MODERN),
        ("s_legacy", LEGACY),
        ("h_legacy", LEGACY),
        ("s_modern", MODERN),
        ("h_modern", MODERN),
    ],
)
async def test_auto_adopts_the_newest_shared_era(
    eras: ErasShared, server: str, protocol: str
) -> None:
    state = eras.source.servers[server]
    assert (state.status, state.protocol) == ("connected", protocol)
    result = await eras.tool(server, "echo").execute({"text": f"hi {server}"})
    assert (result.output, result.is_error) == (f"hi {server}", False)


async def test_pinned_eras_never_fall_back(era_http: dict[str, ThreadedHttpServer]) -> None:
    config = {
        "legacy_vs_modern_http": {"url": era_http["modern"].url(), "protocol": "legacy"},
        "modern_vs_legacy_http": {"url": era_http["legacy"].url(), "protocol": MODERN},
        "modern_vs_legacy_stdio": {
            "command": command(ERAS, "--era", "legacy"),
            "protocol": MODERN,
        },
        "legacy_vs_dual": {"url": era_http["dual"].url(), "protocol": "legacy"},
        "modern_vs_dual": {"command": command(ERAS), "protocol": MODERN},
        "invalid": {"command": command(ERAS), "protocol": "2025-11-25"},
    }
    source = await load_mcp_with_context(config)
    try:
        servers = source.servers
        assert servers["legacy_vs_modern_http"].status == "failed"
        assert servers["legacy_vs_modern_http"].error == "Unsupported protocol version"
        assert servers["modern_vs_legacy_http"].status == "failed"
        assert servers["modern_vs_legacy_http"].error == "HTTP 404 Not Found"
        assert servers["modern_vs_legacy_stdio"].status == "failed"
        assert servers["modern_vs_legacy_stdio"].error == "Method not found"
        assert servers["legacy_vs_dual"].protocol == LEGACY
        assert servers["modern_vs_dual"].protocol == MODERN
        assert servers["invalid"].status == "failed"
        assert servers["invalid"].error == 'protocol must be "auto", "legacy" or "2026-07-28"'
    finally:
        await source.close()


@pytest.mark.parametrize("server", ["s_dual", "h_legacy", "h_modern"])
async def test_the_negotiated_state_is_reported(eras: ErasShared, server: str) -> None:
    state = eras.source.servers[server]
    assert state.server_info == {"name": "eras", "version": "1.2.3"}
    assert state.instructions == INSTRUCTIONS
    assert state.capabilities is not None
    assert {"tools", "resources", "prompts", "completions"} <= set(state.capabilities)


async def test_failed_and_disabled_servers_report_nothing_negotiated(
    era_http: dict[str, ThreadedHttpServer],
) -> None:
    source = await load_mcp_with_context(
        {
            "down": {"url": era_http["legacy"].url(), "protocol": MODERN},
            "off": {"command": command(ERAS), "disabled": True},
        }
    )
    try:
        for state in source.servers.values():
            assert (state.protocol, state.server_info, state.capabilities, state.instructions) == (
                None,
                None,
                None,
                None,
            )
    finally:
        await source.close()


async def test_the_inventory_shows_each_protocol(era_http: dict[str, ThreadedHttpServer]) -> None:
    inventory = await list_mcp_tools(
        {
            "dual": {"url": era_http["dual"].url()},
            "legacy": {"url": era_http["legacy"].url()},
            "down": {"url": era_http["legacy"].url(), "protocol": MODERN},
        }
    )
    assert inventory.protocol == {"dual": MODERN, "legacy": LEGACY, "down": None}
    weather = next(t for t in inventory.tools["dual"] if t.name == "weather")
    assert weather.title == "Weather report"
    assert weather.annotations == {"title": "Weather", "readOnlyHint": True, "openWorldHint": False}
    assert weather.output_schema is not None
    assert weather.output_schema["properties"]["degrees"] == {"title": "Degrees", "type": "integer"}


async def _wait_for_tool(source: Any, name: str) -> None:
    deadline = time.monotonic() + 15
    while not any(t.name == name for t in source.tools):
        assert time.monotonic() < deadline, f"{name} never appeared"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize(
    ("era", "transport"),
    [("dual", "stdio"), ("dual", "http"), ("legacy", "stdio"), ("legacy", "http")],
)
async def test_a_changed_tool_list_reaches_the_toolkit(
    era_http: dict[str, ThreadedHttpServer], era: str, transport: str
) -> None:
    # 2026-07-28: a `subscriptions/listen` event; 2025-11-25: `notifications/tools/list_changed`
    entry: dict[str, Any] = (
        {"command": command(ERAS, "--era", era)}
        if transport == "stdio"
        else {"url": era_http[era].url()}
    )
    source = await load_mcp_with_context({"srv": entry})
    changed: list[int] = []
    source.on_tools_changed = lambda: changed.append(1)
    try:
        fresh = f"fresh_{era}_{transport}"
        adder = next(t for t in source.tools if t.name == "srv_add_tool_now")
        assert (await adder.execute({"name": fresh})).output == f"added {fresh}"
        await _wait_for_tool(source, f"srv_{fresh}")
        tool = next(t for t in source.tools if t.name == f"srv_{fresh}")
        assert (await tool.execute()).output == f"{fresh} works"
        assert changed
    finally:
        await source.close()


async def test_a_killed_dual_stdio_server_is_reported_once_and_respawned(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    told = tmp_path / "instructions.txt"  # read by the server when it starts
    told.write_text("Before the restart.")
    entry = {"command": command(ERAS, "--instructions-file", str(told)), "instructions": True}
    source = await load_mcp_with_context({"d": entry})
    caplog.set_level(logging.WARNING, logger="toolnexus")
    try:
        assert source.servers["d"].instructions == "Before the restart."
        told.write_text("After the restart.")
        tools = {t.name: t for t in source.tools}
        first_pid = int((await tools["d_pid"].execute()).output)
        os.kill(first_pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while source.status["d"] == "connected":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        lost = await tools["d_echo"].execute({"text": "x"})
        assert lost.is_error
        assert lost.output.startswith('MCP server "d" ')
        again = await tools["d_pid"].execute()  # one respawn, negotiated afresh
        assert not again.is_error
        assert int(again.output) != first_pid
        assert source.servers["d"].protocol == MODERN
        assert source.status["d"] == "connected"
        # the respawned server's instructions, not the first one's
        assert source.servers["d"].instructions == "After the restart."
        assert source.instructions_prompt() == (
            "## MCP Server Instructions\n\n### d\nAfter the restart."
        )
        about = [m for m in caplog.messages if m.startswith('[toolnexus] MCP server "d"')]
        assert len(about) == 1 and "exited" in about[0], about  # the death, told once
    finally:
        await source.close()


async def test_a_restarted_stateful_legacy_server_is_rejoined_transparently() -> None:
    server = ThreadedHttpServer(eras_app("--era", "legacy", "--stateful"))
    port = server.port
    source = await load_mcp_with_context({"st": {"url": server.url()}})
    try:
        echo = next(t for t in source.tools if t.name == "st_echo")
        assert (await echo.execute({"text": "one"})).output == "one"
        server.stop()
        restarted = eras_app("--era", "legacy", "--stateful", "--instructions", "Rejoined.")
        server = ThreadedHttpServer(restarted, port=port)
        # the old session id gets 404: a new session, the request sent once more
        again = await echo.execute({"text": "two"})
        assert (again.output, again.is_error) == ("two", False)
        assert source.status["st"] == "connected"
        assert source.servers["st"].instructions == "Rejoined."  # the new session's
    finally:
        await source.close()
        server.stop()


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_stopped_http_server_fails_fast_then_reconnects(era: str) -> None:
    server = ThreadedHttpServer(eras_app("--era", era, "--stateless", "--instructions", "Old."))
    port = server.port
    entry = {"url": server.url(), "timeout": 5000, "instructions": True}
    source = await load_mcp_with_context({"web": entry})
    try:
        assert source.instructions_prompt().endswith("### web\nOld.")
        echo = next(t for t in source.tools if t.name == "web_echo")
        assert (await echo.execute({"text": "up"})).output == "up"
        server.stop()
        lost = await echo.execute({"text": "x"})
        assert lost.is_error
        assert lost.output.startswith('MCP server "web" connection lost')
        assert source.status["web"] == "failed"
        refused = await echo.execute({"text": "x"})  # one reconnect attempt: refused
        assert refused.is_error
        started = time.monotonic()
        fast = await echo.execute({"text": "x"})  # within 5 s of that attempt: at once
        assert fast.is_error and time.monotonic() - started < 1.0
        restarted = eras_app("--era", era, "--stateless", "--instructions", "New.")
        server = ThreadedHttpServer(restarted, port=port)
        deadline = time.monotonic() + 15
        while True:
            back = await echo.execute({"text": "back"})
            if not back.is_error:
                break
            assert time.monotonic() < deadline, back.output
            await asyncio.sleep(0.2)
        assert back.output == "back"
        assert source.status["web"] == "connected"
        # read again on the reconnect: what the restarted server says now
        assert source.servers["web"].instructions == "New."
        assert source.instructions_prompt().endswith("### web\nNew.")
        if era == "modern":  # the new connection holds a new listen stream: it sees a change
            changed: list[int] = []
            source.on_tools_changed = lambda: changed.append(1)
            adder = next(t for t in source.tools if t.name == "web_add_tool_now")
            assert (await adder.execute({"name": "after_restart"})).output == "added after_restart"
            await _wait_for_tool(source, "web_after_restart")
            assert changed
    finally:
        await source.close()
        server.stop()


async def test_a_server_that_never_answers_the_probe_fails_like_a_hung_phase(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The SDK gives up on an unanswered probe after its own 10 s (then `auto` would fall back
    # to `initialize`, which this server answers); shortened here so the test shows, in
    # seconds, that the server's own `timeout` decides instead.
    import mcp.client.session

    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 0.2)
    hung = command(SLOW_START, "--hang", "server/discover")
    source = await load_mcp_with_context(
        {
            "auto": {"command": hung, "timeout": 2000},
            "pinned": {"command": hung, "timeout": 2000, "protocol": MODERN},
            "remedy": {"command": hung, "timeout": 2000, "protocol": "legacy"},
        }
    )
    try:
        servers = source.servers
        for name in ("auto", "pinned"):
            assert (servers[name].status, servers[name].error) == (
                "failed",
                "discover timed out after 2000 ms; a server older than MCP 2026-07-28 needs "
                '"protocol": "legacy" in its entry, a slow one a larger "timeout" (ms)',
            )
        assert (servers["remedy"].status, servers["remedy"].protocol) == ("connected", LEGACY)
    finally:
        await source.close()


async def test_a_dropped_listen_stream_is_reopened_and_the_tools_listed_again() -> None:
    from support.mcp_servers.sdk_eras import cuttable

    asgi, cutter = cuttable("--stateless")
    server = ThreadedHttpServer(asgi)
    source = await load_mcp_with_context({"web": {"url": server.url()}})
    try:
        assert source.servers["web"].protocol == MODERN
        deadline = time.monotonic() + 10
        while cutter.opened < 1:  # the connection holds its listen stream
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        changed: list[int] = []
        source.on_tools_changed = lambda: changed.append(1)
        cutter.cut()
        # changed while no stream is open: the event is lost (there is no replay) ...
        adder = next(t for t in source.tools if t.name == "web_add_tool_now")
        assert (await adder.execute({"name": "unheard"})).output == "added unheard"
        # ... but the stream re-opened a second later (the default) lists the tools again
        await _wait_for_tool(source, "web_unheard")
        assert cutter.opened == 2
        assert changed
    finally:
        await source.close()
        server.stop()


_REOPENING = re.compile(r'MCP server "web" listen stream ended \(.*\); re-opening in (\d+) ms$')


def _reopen_delays(caplog: pytest.LogCaptureFixture) -> list[int]:
    return [int(m.group(1)) for m in map(_REOPENING.search, caplog.messages) if m is not None]


async def test_failing_re_opens_double_the_delay_up_to_the_cap_and_each_re_open_re_lists(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from support.mcp_servers.sdk_eras import cuttable

    caplog.set_level(logging.DEBUG, logger="toolnexus")
    asgi, cutter = cuttable("--stateless")
    server = ThreadedHttpServer(asgi)
    # the delays of the contract (1 s doubling to 30 s), scaled down by the server's own keys
    entry = {"url": server.url(), "listenRetry": 100, "listenRetryMax": 400}
    source = await load_mcp_with_context({"web": entry})
    try:
        deadline = time.monotonic() + 10
        while cutter.opened < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        changed: list[int] = []
        source.on_tools_changed = lambda: changed.append(1)
        adder = next(t for t in source.tools if t.name == "web_add_tool_now")
        # tools added without an event: only listing the tools again finds them
        quiet = await adder.execute({"name": "quiet_one", "announce": False})
        assert quiet.output == "added quiet_one"
        cutter.refused = 4  # the stream drops, and the next four re-opens fail
        cutter.cut()
        await _wait_for_tool(source, "web_quiet_one")
        assert _reopen_delays(caplog) == [100, 200, 400, 400, 400]
        assert (cutter.opened, len(cutter.arrivals)) == (2, 6)
        gaps = [b - a for a, b in zip(cutter.arrivals[1:], cutter.arrivals[2:], strict=False)]
        for gap, delay_ms in zip(gaps, [200, 400, 400, 400], strict=True):
            assert gap >= delay_ms / 1000 - 0.01  # each attempt waited its delay
        assert changed
        # open again: the next drop starts from the first delay, and re-lists once more
        caplog.clear()
        quiet = await adder.execute({"name": "quiet_two", "announce": False})
        assert quiet.output == "added quiet_two"
        cutter.cut()
        await _wait_for_tool(source, "web_quiet_two")
        assert _reopen_delays(caplog) == [100]
        assert cutter.opened == 3
    finally:
        await source.close()
        server.stop()


async def test_the_sse_fallback_is_handshake_only(
    http_servers: dict[str, ThreadedHttpServer],
) -> None:
    sse = http_servers["sse"].url("/sse")  # an endpoint that speaks only the legacy SSE transport
    source = await load_mcp_with_context(
        {"auto": {"url": sse}, "pinned": {"url": sse, "protocol": MODERN}}
    )
    try:
        auto, pinned = source.servers["auto"], source.servers["pinned"]
        assert (auto.status, auto.transport, auto.protocol) == ("connected", "sse", LEGACY)
        assert (pinned.status, pinned.protocol) == ("failed", None)
        assert pinned.error == (
            "HTTP 405 Method Not Allowed; not tried over SSE, which speaks only the handshake "
            "era (protocol is 2026-07-28)"
        )
    finally:
        await source.close()
