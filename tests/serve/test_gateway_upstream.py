"""The gateway's upstream hop: cancelling a call through the gateway (or a `CancelSignal` given to
an MCP tool) cancels the upstream `tools/call` in the caller's own task, and the upstream
connection stays usable afterwards."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx2
import pytest_asyncio

from mcp import Client
from support.mcp_servers import BASIC, command
from toolnexus import create_toolkit
from toolnexus._aio import CancelSignal
from toolnexus.serve import ServeHandle
from toolnexus.toolkit import Toolkit
from toolnexus.types import ToolContext

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def upstream() -> AsyncIterator[tuple[Toolkit, ServeHandle]]:
    argv = command(BASIC)
    toolkit = await create_toolkit(
        mcp_config={"up": {"command": argv[0], "args": argv[1:]}}, builtins=False
    )
    handle = await toolkit.serve("127.0.0.1:0", mcp={})
    yield toolkit, handle
    await handle.stop()
    await toolkit.close()


async def _calls_made(toolkit: Toolkit) -> int:
    return int((await toolkit.execute("up_calls_made", {})).output)


async def _until_one_more_call(toolkit: Toolkit, before: int) -> None:
    """Poll until the upstream has started one call beyond `before` and the polls themselves."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    polls = 0
    while loop.time() < deadline:
        polls += 1
        if await _calls_made(toolkit) >= before + polls + 1:
            return
    raise AssertionError("the upstream call never started")


async def test_a_cancel_signal_cancels_the_upstream_call_promptly(upstream):
    toolkit, _ = upstream
    signal = CancelSignal()
    asyncio.get_running_loop().call_later(0.2, signal.set)
    call = toolkit.execute("up_slow", {"seconds": 30}, ToolContext(signal=signal))
    result = await asyncio.wait_for(call, 10)
    assert (result.output, result.is_error) == ("MCP tool slow was cancelled", True)
    assert (await toolkit.execute("up_echo", {"text": "still here"})).output == "still here"


async def test_a_cancel_signal_set_before_the_call_sends_nothing(upstream):
    toolkit, _ = upstream
    before = await _calls_made(toolkit)
    signal = CancelSignal()
    signal.set()
    result = await toolkit.execute("up_echo", {"text": "x"}, ToolContext(signal=signal))
    assert (result.output, result.is_error) == ("MCP tool echo was cancelled", True)
    assert await _calls_made(toolkit) == before + 1  # only the counting call itself


async def test_a_cancel_signal_after_the_answer_changes_nothing(upstream):
    toolkit, _ = upstream
    signal = CancelSignal()
    result = await toolkit.execute("up_echo", {"text": "x"}, ToolContext(signal=signal))
    signal.set()
    assert (result.output, result.is_error) == ("x", False)


async def test_an_outer_cancel_is_not_taken_for_the_signal(upstream):
    toolkit, _ = upstream
    signal = CancelSignal()
    before = await _calls_made(toolkit)
    call = asyncio.ensure_future(
        toolkit.execute("up_slow", {"seconds": 30}, ToolContext(signal=signal))
    )
    await _until_one_more_call(toolkit, before)
    call.cancel()
    signal.set()  # in the same instant: the caller's own cancellation still wins
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(call, 10)
    assert call.cancelled()


async def test_a_client_going_away_cancels_the_upstream_call(upstream, http):
    toolkit, handle = upstream
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "up_slow", "arguments": {"seconds": 30}},
    }

    async def call() -> None:
        async with http.stream("POST", handle.url + "/mcp", json=body, headers=HEADERS) as reply:
            await reply.aread()

    before = await _calls_made(toolkit)
    request = asyncio.ensure_future(call())
    await _until_one_more_call(toolkit, before)
    request.cancel()
    with contextlib.suppress(asyncio.CancelledError, httpx2.HTTPError):
        await request
    # The upstream connection is not left with a call in flight: the next answers at once.
    async with Client(handle.url + "/mcp", mode="legacy") as client:
        echoed = await asyncio.wait_for(client.call_tool("up_echo", {"text": "next"}), 10)
    assert echoed.content[0].text == "next"  # type: ignore[union-attr]


def test_a_cancel_signal_calls_back_once_and_forgets_removed_callbacks():
    signal = CancelSignal()
    heard: list[str] = []
    signal.on_set(lambda: heard.append("a"))
    remove = signal.on_set(lambda: heard.append("b"))
    remove()
    remove()  # removing twice is harmless
    signal.set()
    signal.set()  # a second set calls nothing again
    signal.on_set(lambda: heard.append("late"))  # already set: called at once
    assert heard == ["a", "late"]
    assert signal.is_set()
