"""The MCP profile over streamable HTTP, driven by the official SDK client against `serve()`."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp.client.streamable_http import streamable_http_client

from mcp import Client, MCPError
from support.polling import wait_until
from toolnexus.serve import ServeHandle
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served(toolkit: Toolkit) -> AsyncIterator[tuple[ServeHandle, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    handle = await toolkit.serve(
        "127.0.0.1:0", mcp={"name": "gateway", "version": "9.9.9"}, on_call=calls.append
    )
    yield handle, calls
    await handle.stop()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_list_names_schemas_and_server_info(served, toolkit, mode):
    handle, _ = served
    async with Client(handle.url + "/mcp", mode=mode) as client:
        listed = (await client.list_tools()).tools
        if mode == "legacy":
            assert client.server_info is not None
            assert (client.server_info.name, client.server_info.version) == ("gateway", "9.9.9")
    assert [t.name for t in listed] == [t.name for t in toolkit.tools()]
    assert "weird.name-1" in [t.name for t in listed]
    for wire, tool in zip(listed, toolkit.tools(), strict=True):
        assert wire.input_schema == tool.input_schema
        assert wire.description == tool.description


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_call_maps_results(served, mode):
    handle, _ = served
    async with Client(handle.url + "/mcp", mode=mode) as client:
        ok = await client.call_tool("echo", {"text": "hi"})
        assert (ok.content[0].text, ok.is_error) == ("echo: hi", False)

        raised = await client.call_tool("boom", {})
        assert (raised.content[0].text, raised.is_error) == ("boom went the tool", True)

        invalid = await client.call_tool("echo", {"text": 5})
        assert invalid.is_error
        assert invalid.content[0].text.startswith("Invalid arguments for tool echo:")

        with pytest.raises(MCPError) as caught:
            await client.call_tool("no_such_tool", {})
        assert caught.value.code == -32602
        assert caught.value.message == "Unknown tool: no_such_tool"


async def test_on_call_reports_each_known_call(served):
    handle, calls = served
    calls.clear()
    async with Client(handle.url + "/mcp") as client:
        await client.call_tool("echo", {"text": "a"})
        await client.call_tool("boom", {})
        with pytest.raises(MCPError):
            await client.call_tool("missing", {})
    assert [(c["name"], c["source"], c["is_error"]) for c in calls] == [
        ("echo", "native", False),
        ("boom", "native", True),
    ]
    assert all(isinstance(c["ms"], int) and c["ms"] >= 0 for c in calls)


def _reset(seen) -> None:
    for event in (seen.async_started, seen.async_cancelled):
        event.clear()
    seen.async_signal_set = None
    seen.thread_started.clear()
    seen.thread_saw_signal.clear()


async def test_cancellation_reaches_async_and_thread_tools(served, seen):
    handle, _ = served
    _reset(seen)
    async with Client(handle.url + "/mcp") as client:
        call = asyncio.ensure_future(client.call_tool("hang", {}))
        await asyncio.wait_for(seen.async_started.wait(), 10)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await asyncio.wait_for(seen.async_cancelled.wait(), 10)
        assert seen.async_signal_set is True

        call = asyncio.ensure_future(client.call_tool("spin", {}))
        await wait_until(seen.thread_started.is_set)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await wait_until(seen.thread_saw_signal.is_set)


async def test_disconnect_cancels_a_legacy_era_call(served, seen, http):
    # Stateless HTTP has no session to carry `notifications/cancelled`: closing the request is
    # how a caller cancels, in either protocol era.
    handle, _ = served
    _reset(seen)
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hang"}}

    async def call() -> None:
        async with http.stream("POST", handle.url + "/mcp", json=body, headers=headers) as response:
            assert response.status_code == 200
            async for _ in response.aiter_bytes():
                pass

    request = asyncio.ensure_future(call())
    await asyncio.wait_for(seen.async_started.wait(), 10)
    request.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await request
    await asyncio.wait_for(seen.async_cancelled.wait(), 10)
    assert seen.async_signal_set is True


async def test_on_call_errors_are_swallowed_and_filter_applies(toolkit):
    def explode(event: dict[str, Any]) -> None:
        raise RuntimeError("callback bug")

    handle = await toolkit.serve(
        "127.0.0.1:0", mcp={"tools": ["echo", "not_a_tool"]}, on_call=explode
    )
    try:
        async with Client(handle.url + "/mcp") as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
            result = await client.call_tool("echo", {"text": "x"})
            assert result.content[0].text == "echo: x"
            with pytest.raises(MCPError) as caught:
                await client.call_tool("boom", {})
            assert caught.value.message == "Unknown tool: boom"
    finally:
        await handle.stop()


async def test_config_block_supplies_the_profile():
    toolkit = Toolkit(
        builtins=False,
        extra_tools=[Tool("one", "1", None, "native", lambda a, c: "1")],
        config={"mcpServer": {"name": "from-config"}},
    )
    async with (
        await toolkit.serve("127.0.0.1:0") as handle,
        Client(handle.url + "/mcp", mode="legacy") as client,
    ):
        assert client.server_info is not None
        assert client.server_info.name == "from-config"
        assert [t.name for t in (await client.list_tools()).tools] == ["one"]


# -- HTTP surface: routing, auth, limits, DNS-rebinding guard -------------------------------------


async def test_routes_other_than_mcp_are_404(served, http):
    handle, _ = served
    for method, path in [("GET", "/"), ("POST", "/"), ("GET", "/nope"), ("GET", "/mcp/")]:
        response = await http.request(method, handle.url + path)
        assert (response.status_code, response.text) == (404, "not found"), path
    card = await http.get(handle.url + "/.well-known/agent-card.json")
    assert card.status_code == 404


async def test_no_profile_answers_404_everywhere(toolkit, http):
    async with await toolkit.serve("127.0.0.1:0") as handle:
        for path in ["/", "/mcp", "/.well-known/agent-card.json"]:
            response = await http.post(handle.url + path, json={})
            assert (response.status_code, response.text) == (404, "not found")


async def test_bearer_token_guards_every_route(toolkit, http):
    async with await toolkit.serve("127.0.0.1:0", mcp={}, auth_token="s3cret") as handle:
        for headers in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}]:
            for path in ["/mcp", "/", "/missing"]:
                response = await http.post(handle.url + path, json={}, headers=headers)
                assert response.status_code == 401
                assert response.text == "unauthorized"
                assert response.headers["www-authenticate"] == "Bearer"
        authorized = await http.get(
            handle.url + "/missing", headers={"Authorization": "Bearer s3cret"}
        )
        assert authorized.status_code == 404
        async with (
            httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}) as authed,
            Client(streamable_http_client(handle.url + "/mcp", http_client=authed)) as client,
        ):
            assert (await client.call_tool("echo", {"text": "ok"})).content[0].text == "echo: ok"


async def test_oversized_bodies_get_413(served, http):
    handle, _ = served
    big = b"x" * (4 * 1024 * 1024 + 1)

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b"y" * (1024 * 1024)

    declared = await http.post(
        handle.url + "/mcp", content=big, headers={"Content-Type": "application/json"}
    )
    assert declared.status_code == 413
    streamed = await http.post(
        handle.url + "/mcp", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert "content-length" not in streamed.request.headers
    assert streamed.status_code == 413
    under = await http.post(handle.url + "/nope", content=b"x" * (4 * 1024 * 1024))
    assert under.status_code == 404


async def test_dns_rebinding_guard(served, http):
    handle, _ = served
    for headers in [
        {"Host": "evil.example"},
        {"Host": f"evil.example:{handle.port}"},
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
    ]:
        for path in ["/mcp", "/nope"]:
            response = await http.post(handle.url + path, json={}, headers=headers)
            assert response.status_code == 403, (headers, path)
    allowed = await http.get(
        handle.url + "/nope",
        headers={"Host": f"localhost:{handle.port}", "Origin": "http://127.0.0.1:3000"},
    )
    assert allowed.status_code == 404
    # Loopback names pass the SDK's own check on /mcp too, with or without a port.
    async with httpx2.AsyncClient(headers={"Origin": "http://localhost"}) as local:
        for host in ["localhost", f"[::1]:{handle.port}", "127.0.0.1"]:
            local.headers["Host"] = host
            async with Client(streamable_http_client(handle.url + "/mcp", http_client=local)) as c:
                assert (await c.call_tool("echo", {"text": host})).content[0].text.endswith(host)


def _ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
async def test_ipv6_loopback(toolkit):
    async with await toolkit.serve("[::1]:0", mcp={}) as handle:
        assert handle.url.startswith("http://[::1]:")
        assert handle.host == "::1"
        async with Client(handle.url + "/mcp") as client:
            assert (await client.call_tool("echo", {"text": "v6"})).content[0].text == "echo: v6"


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
async def test_ipv6_wildcard_is_reachable_at_its_reported_url(toolkit, http):
    async with await toolkit.serve("[::]:0", mcp={}) as handle:
        assert handle.url == f"http://127.0.0.1:{handle.port}"
        assert (await http.get(handle.url + "/nope")).status_code == 404
        assert (await http.get(f"http://[::1]:{handle.port}/nope")).status_code == 404


async def test_stop_releases_the_port(toolkit):
    handle = await toolkit.serve("127.0.0.1:0", mcp={})
    assert handle.url == f"http://127.0.0.1:{handle.port}" and handle.port > 0
    await handle.stop()
    await handle.close()  # idempotent
    assert not handle.running
    again = await toolkit.serve(f"127.0.0.1:{handle.port}", mcp={})
    assert again.port == handle.port
    await again.stop()


async def test_busy_port_is_a_clear_error(served, toolkit):
    handle, _ = served
    with pytest.raises(OSError) as caught:
        await toolkit.serve(f"127.0.0.1:{handle.port}", mcp={})
    assert str(caught.value) == f"cannot listen on 127.0.0.1:{handle.port}: Address already in use"
    assert caught.value.errno == errno.EADDRINUSE


async def test_wildcard_bind_warns_about_shell_tools_without_token(caplog):
    bash = Tool("bash", "Run a command", None, "builtin", lambda a, c: "")
    toolkit = Toolkit(builtins=[bash])
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        handle = await toolkit.serve("0.0.0.0:0", mcp={})
    try:
        assert handle.url == f"http://127.0.0.1:{handle.port}"
        warnings = [r.getMessage() for r in caplog.records if r.name == "toolnexus"]
        assert any("SECURITY" in w and "bash" in w and "auth_token" in w for w in warnings)
    finally:
        await handle.stop()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        async with await toolkit.serve("0.0.0.0:0", mcp={}, auth_token="t"):
            pass
        async with await toolkit.serve("127.0.0.1:0", mcp={}):
            pass
    assert not [r for r in caplog.records if "SECURITY" in r.getMessage()]


async def test_a2a_without_client_is_refused_at_once(toolkit):
    with pytest.raises(ValueError, match="needs a client"):
        await toolkit.serve("127.0.0.1:0", a2a={})
    configured = Toolkit(config={"a2a": {"name": "x"}})
    with pytest.raises(ValueError, match="needs a client"):
        await configured.serve("127.0.0.1:0")
