"""The HTTP server against clients that ask and then never read the answer: a response whose
writes stall for `send_timeout` is cut, so such clients cannot hold every connection slot (or
the tasks writing to them) for ever, and an honest client is served again."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from support.polling import wait_until
from support.serve_hardening import serve_both
from toolnexus.serve import ServeHandle, ServeLimits
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(sys.platform != "linux", reason="reads TCP_INFO"),
]
_TCP_CLOSE = 7  # `tcpi_state` of a connection that is over

TOKEN = "slow-reader-token"
SLOTS = 3
BIG = 8 << 20  # far more than the loopback socket buffers hold once the reader stops
# At ~1 MB/s this answer keeps the server's writes paused past `send_timeout` at least once
# (2 MiB did not, on loopback): the reader below must still get all of it.
STEADY_BYTES = 4 << 20
LIMITS = ServeLimits(
    header_timeout=5.0, body_timeout=5.0, keep_alive_timeout=5.0, max_connections=SLOTS,
    send_timeout=0.5,
)  # fmt: skip
HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}


def _toolkit() -> Toolkit:
    def big(args: dict[str, Any], ctx: Any) -> str:
        return "x" * int(args.get("bytes", BIG))

    def echo(args: dict[str, Any], ctx: Any) -> str:
        return str(args.get("text"))

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return Toolkit(
        extra_tools=[
            Tool("big", "A large answer", {"type": "object"}, "native", big),
            Tool("echo", "Echo", schema, "native", echo),
        ]
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[ServeHandle]:
    toolkit = _toolkit()
    handle = await serve_both(toolkit, LIMITS, auth_token=TOKEN)
    yield handle
    await handle.stop()
    await toolkit.close()


def _request(method: str, params: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _asks_and_never_reads(
    port: int, request: bytes, receive_buffer: int = 4096
) -> socket.socket:
    """A client with a small receive buffer that sends `request` and then reads nothing."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    await loop.sock_sendall(sock, request)
    return sock


async def _honest_call(url: str) -> int:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    call["params"] = {"name": "echo", "arguments": {"text": "hi"}}
    async with httpx2.AsyncClient() as http:
        try:
            response = await http.post(url + "/mcp", json=call, headers=HEADERS, timeout=10)
        except httpx2.HTTPError:
            return 0  # e.g. a 503 written and closed before the request was read
    if response.status_code == 200:
        assert '"hi"' in response.text
    return response.status_code


def _cut(sock: socket.socket) -> bool:
    """Whether the server has cut this connection (its TCP state is CLOSE), read without
    taking a byte: reading would let the stalled answer flow again."""
    state = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)
    return state[0] == _TCP_CLOSE


async def test_clients_that_never_read_are_cut_and_free_their_slots(server: ServeHandle) -> None:
    big_call = _request("tools/call", {"name": "big", "arguments": {}})
    stalled = [await _asks_and_never_reads(server.port, big_call) for _ in range(SLOTS)]
    try:
        # Every slot is held by a client that reads nothing: once its answer's writes have
        # stalled for `send_timeout`, each is cut (before: never, and no honest client was
        # served again).
        cut = await wait_until(
            lambda: all(_cut(sock) for sock in stalled), timeout=30, raise_on_timeout=False
        )
        assert cut, f"{sum(not _cut(sock) for sock in stalled)} stalled clients still connected"
        seen: list[int] = []

        async def served() -> bool:
            seen.append(await _honest_call(server.url))
            return seen[-1] == 200

        assert await wait_until(served, timeout=10, check_every=0.05, raise_on_timeout=False), seen
    finally:
        for sock in stalled:
            sock.close()


async def test_a_reader_that_keeps_reading_gets_the_whole_answer(server: ServeHandle) -> None:
    # Slow but steady: the kernel's buffers make each of the server's write pauses last longer
    # than `send_timeout`, but the client takes something in every one, so nothing is cut.
    size = STEADY_BYTES
    request = _request("tools/call", {"name": "big", "arguments": {"bytes": size}})
    sock = await _asks_and_never_reads(server.port, request, receive_buffer=8192)
    loop = asyncio.get_running_loop()
    received = bytearray()
    try:
        while not received.endswith(b"}}"):
            chunk = await asyncio.wait_for(loop.sock_recv(sock, 1 << 20), 15)
            assert chunk, "the server cut a client that was reading"
            received += chunk
            await asyncio.sleep(0.01)
    finally:
        sock.close()
    assert received.count(b"x") >= size
