"""Closing a stateless request cancels its tool call, and the tool sees its cancel signal set
whether it awaits or blocks a worker thread: on the gateway's own JSON path (a plain
2025-11-25 request, the call run in the request's task) and on the SDK transport's SSE path
(a request carrying a progress token); one request's cancel never reaches another's call."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from support.polling import wait_until
from toolnexus.serve import ServeHandle
from toolnexus.toolkit import Toolkit

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served(toolkit: Toolkit) -> AsyncIterator[ServeHandle]:
    handle = await toolkit.serve("127.0.0.1:0", mcp={})
    yield handle
    await handle.stop()


def _reset(seen: Any) -> None:
    for event in (seen.async_started, seen.async_cancelled):
        event.clear()
    seen.async_signal_set = None
    seen.thread_started.clear()
    seen.thread_saw_signal.clear()


def _start(http: httpx2.AsyncClient, url: str, tool: str, progress: bool) -> asyncio.Future[Any]:
    params: dict[str, Any] = {"name": tool, "arguments": {}}
    if progress:
        params["_meta"] = {"progressToken": "p1"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

    async def call() -> None:
        async with http.stream("POST", url + "/mcp", json=body, headers=HEADERS) as response:
            assert response.status_code == 200
            async for _ in response.aiter_bytes():
                pass

    return asyncio.ensure_future(call())


async def _close(request: asyncio.Future[Any]) -> None:
    request.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await request


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.parametrize("progress", [False, True], ids=["json", "sse"])
async def test_closing_the_request_signals_the_tool_first(
    served: ServeHandle, seen: Any, http: httpx2.AsyncClient, progress: bool
) -> None:
    _reset(seen)
    spinning = _start(http, served.url, "spin", progress)
    await wait_until(seen.thread_started.is_set)
    hanging = _start(http, served.url, "hang", progress)
    await asyncio.wait_for(seen.async_started.wait(), 10)

    await _close(spinning)
    await wait_until(seen.thread_saw_signal.is_set)
    assert not seen.async_cancelled.is_set()  # the other request's call runs on

    await _close(hanging)
    await asyncio.wait_for(seen.async_cancelled.wait(), 10)
    assert seen.async_signal_set is True
