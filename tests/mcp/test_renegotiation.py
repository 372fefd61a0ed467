"""Requests the server refuses without executing them, recovered transparently: -32022 (the
server no longer accepts the negotiated version: it was upgraded or restarted) ⇒ negotiate again
once and resend; -32020 (a 2026-07-28 request's headers disagree with the tool's current schema)
⇒ list the tools again and resend once. Against the SDK's own dual-era server over streamable
HTTP, behind a switch that changes what it accepts while it runs, and over stdio."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from support.mcp_servers import ERAS, ThreadedHttpServer, command
from support.mcp_servers.sdk_eras import EraSwitch, switchable
from toolnexus.mcp_source import McpSource, load_mcp_with_context

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
UPGRADED = [LEGACY, "2027-01-01"]  # a newer modern revision this client does not speak


@pytest.fixture(params=["--stateless", "--stateful"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[ThreadedHttpServer, EraSwitch]]:
    app, switch = switchable(request.param)
    http = ThreadedHttpServer(app)
    yield http, switch
    http.stop()


@pytest_asyncio.fixture
async def source(server: tuple[ThreadedHttpServer, EraSwitch]) -> AsyncIterator[McpSource]:
    http, _ = server
    loaded = await load_mcp_with_context(
        {
            "auto": {"url": http.url(), "timeout": 10000},
            "pinned": {"url": http.url(), "timeout": 10000, "protocol": MODERN},
        }
    )
    yield loaded
    await loaded.close()


async def call(source: McpSource, name: str, args: dict[str, Any] | None = None) -> Any:
    tool = next(t for t in source.tools if t.name == name)
    return await tool.execute(args or {})


async def test_an_upgraded_server_is_negotiated_with_again_and_the_call_resent(
    source: McpSource, server: tuple[ThreadedHttpServer, EraSwitch]
) -> None:
    _, switch = server
    assert source.servers["auto"].protocol == MODERN
    switch.supported = UPGRADED  # 2026-07-28 is refused now; 2025-11-25 is still served
    sent = switch.seen["tools/call"]
    result = await call(source, "auto_echo", {"text": "still here"})
    assert (result.output, result.is_error) == ("still here", False)
    state = source.servers["auto"]
    assert (state.status, state.protocol) == ("connected", LEGACY)
    assert state.server_info == {"name": "eras", "version": "1.2.3"}
    assert switch.seen["tools/call"] - sent == 2  # refused once, sent once more
    # the pinned server has no version left in common: it fails, and says why
    pinned = await call(source, "pinned_echo", {"text": "x"})
    assert pinned.is_error
    reason = "no longer accepts protocol 2026-07-28: Unsupported protocol version"
    assert pinned.output == f'MCP server "pinned" {reason}'
    assert (source.status["pinned"], source.servers["pinned"].error) == ("failed", reason)
    # a lost connection's rules: the next call tries one reconnect, and within 5 s of that
    # the calls fail at once
    again = await call(source, "pinned_echo", {"text": "x"})
    refusal = "HTTP 400 Bad Request: Unsupported protocol version"
    assert again.output == f'MCP server "pinned" failed: {refusal}'
    started = time.monotonic()
    at_once = await call(source, "pinned_echo", {"text": "x"})
    assert at_once.output == again.output and time.monotonic() - started < 1.0
    # upgraded again, to 2026-07-28 only: back to the modern era, listen stream included
    switch.supported = [MODERN]
    back = await call(source, "auto_echo", {"text": "modern again"})
    assert (back.output, back.is_error) == ("modern again", False)
    assert source.servers["auto"].protocol == MODERN
    changed: list[int] = []
    source.on_tools_changed = lambda: changed.append(1)
    assert (await call(source, "auto_add_tool_now", {"name": "later"})).output == "added later"
    deadline = time.monotonic() + 15
    while not any(t.name == "auto_later" for t in source.tools):
        assert time.monotonic() < deadline, "the listen stream never re-opened"
        await asyncio.sleep(0.02)
    assert changed
    assert (await call(source, "auto_later")).output == "later works"


@pytest.mark.parametrize("name", ["auto", "pinned"])
async def test_a_call_refused_once_is_rediscovered_and_resent_once(
    source: McpSource, server: tuple[ThreadedHttpServer, EraSwitch], name: str
) -> None:
    _, switch = server
    switch.refuse["tools/call"] = 1
    sent, probes = switch.seen["tools/call"], switch.seen["server/discover"]
    result = await call(source, f"{name}_echo", {"text": "one"})
    assert (result.output, result.is_error) == ("one", False)
    assert switch.seen["tools/call"] - sent == 2
    assert switch.seen["server/discover"] - probes == 1
    assert (source.status[name], source.servers[name].protocol) == ("connected", MODERN)
    # refused again after discovering again: never a third send
    switch.refuse["tools/call"] = 2
    sent = switch.seen["tools/call"]
    refused = await call(source, f"{name}_echo", {"text": "two"})
    assert (refused.output, refused.is_error) == ("Unsupported protocol version", True)
    assert switch.seen["tools/call"] - sent == 2
    assert source.status[name] == "connected"


async def test_calls_refused_together_share_one_new_negotiation(
    source: McpSource, server: tuple[ThreadedHttpServer, EraSwitch]
) -> None:
    _, switch = server
    switch.refuse["tools/call"] = 3
    probes = switch.seen["server/discover"]
    # all three are sent before the first refusal comes back
    results = await asyncio.gather(*(call(source, "auto_echo", {"text": "t"}) for _ in range(3)))
    assert [(r.output, r.is_error) for r in results] == [("t", False)] * 3
    assert switch.seen["server/discover"] - probes == 1


@pytest.mark.parametrize("server", ["--stateless"], indirect=True)
async def test_a_stale_schema_is_listed_again_and_the_call_resent(
    source: McpSource, server: tuple[ThreadedHttpServer, EraSwitch]
) -> None:
    _, switch = server
    assert (await call(source, "auto_regional", {"region": "eu"})).output == "region eu"
    changed: list[int] = []
    source.on_tools_changed = lambda: changed.append(1)
    # the server now wants `region` in an `Mcp-Param-Region` header, and says nothing
    assert (await call(source, "auto_route_by_region")).output == "regional now routes by header"
    sent, lists = switch.seen["tools/call"], switch.seen["tools/list"]
    result = await call(source, "auto_regional", {"region": "us"})
    assert (result.output, result.is_error) == ("routed to us", False)
    assert switch.seen["tools/call"] - sent == 2  # rejected (-32020), listed, sent once more
    assert switch.seen["tools/list"] - lists == 1
    assert changed  # the listing changed: the toolkit hears of it
    regional = next(t for t in source.tools if t.name == "auto_regional")
    assert regional.input_schema["properties"]["region"]["x-mcp-header"] == "Region"


async def test_other_requests_are_rediscovered_and_resent_too(
    source: McpSource, server: tuple[ThreadedHttpServer, EraSwitch]
) -> None:
    _, switch = server
    switch.refuse["resources/read"] = 1
    switch.refuse["prompts/list"] = 1
    probes = switch.seen["server/discover"]
    notes = await source.read_mcp_resource("eras://notes", server="pinned")
    assert (notes.output, notes.is_error) == ("the notes", False)
    prompts = await source.list_mcp_prompts("auto")
    assert [p.name for p in prompts] == ["review"]
    assert switch.seen["server/discover"] - probes == 2


@pytest.mark.parametrize("server", ["--stateless"], indirect=True)
async def test_a_refused_refresh_of_the_tool_list_is_rediscovered_too(
    source: McpSource, server: tuple[ThreadedHttpServer, EraSwitch]
) -> None:
    _, switch = server
    switch.refuse["tools/list"] = 1  # the first of the listings the change sets off
    probes = switch.seen["server/discover"]
    assert (await call(source, "auto_add_tool_now", {"name": "fresh"})).output == "added fresh"
    deadline = time.monotonic() + 15
    while not any(t.name == "auto_fresh" for t in source.tools):
        assert time.monotonic() < deadline, "the refused listing was never made again"
        await asyncio.sleep(0.02)
    while not any(t.name == "pinned_fresh" for t in source.tools):
        assert time.monotonic() < deadline, "the refused listing was never made again"
        await asyncio.sleep(0.02)
    assert switch.seen["server/discover"] - probes == 1
    assert (await call(source, "auto_fresh")).output == "fresh works"


async def test_over_stdio_a_refused_call_is_rediscovered_and_resent() -> None:
    source = await load_mcp_with_context(
        {"s": {"command": command(ERAS, "--refuse-calls", "1"), "timeout": 20000}}
    )
    try:
        first = await call(source, "s_pid")  # refused once, negotiated again, resent
        assert first.is_error is False
        assert (source.status["s"], source.servers["s"].protocol) == ("connected", MODERN)
        again = await call(source, "s_pid")
        assert again.output == first.output  # the same process: nothing was respawned
    finally:
        await source.close()


async def test_forgetting_a_negotiation_resets_exactly_the_sdk_session_fields() -> None:
    # The SDK has no public reset: `forget_negotiation` writes its session's own fields. This
    # fails at once should an SDK release rename or stop using them.
    import anyio
    from mcp.client._probe import negotiate_auto
    from mcp.server.runner import serve_dual_era_loop
    from mcp.shared.memory import create_client_server_memory_streams

    from support.mcp_servers.sdk_eras import build
    from toolnexus.mcp_source._negotiation import _NEGOTIATED_FIELDS, _Session

    server = build()._lowlevel_server
    streams = create_client_server_memory_streams()
    async with streams as (client_streams, server_streams), anyio.create_task_group() as group:

        async def serve() -> None:
            async with server.lifespan(server) as state:
                await serve_dual_era_loop(server, *server_streams, lifespan_state=state)

        group.start_soon(serve)
        async with _Session(*client_streams) as session:
            assert set(_NEGOTIATED_FIELDS) <= set(vars(session))
            await negotiate_auto(session)
            assert session.protocol_version == MODERN
            first = session.discover_result
            assert first is not None
            assert await session.discover() is first  # the SDK answers from its cache
            session.forget_negotiation()
            assert (session.protocol_version, session.discover_result) == (None, None)
            assert (session.initialize_result, session.server_capabilities) == (None, None)
            # negotiating again asks the server again
            again = await session.discover()
            assert again is not first
            assert session.protocol_version == MODERN
            result = await session.call_tool("echo", {"text": "again"})
            assert [c.text for c in result.content] == ["again"]  # type: ignore[union-attr]
        group.cancel_scope.cancel()
