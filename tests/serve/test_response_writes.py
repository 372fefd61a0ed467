"""A response's head and fixed-length body leave the server in one write (the client wakes
once for both); everything else is written as it comes, and keep-alive connections still
carry every kind of response: bodies, `HEAD` answers, JSON-RPC answers, refusals."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from toolnexus.serve import ServeHandle
from toolnexus.serve._app import _HeadWithBody
from toolnexus.toolkit import Toolkit

HEAD = b"HTTP/1.1 200 OK\r\ndate: x\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n"


class _Sent:
    """What reaches the socket: the transport's writes, one entry each."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def write_eof(self) -> None:
        self.writes.append(b"<eof>")

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def _wrapped() -> tuple[_HeadWithBody, _Sent]:
    sent = _Sent()
    return _HeadWithBody(sent), sent  # type: ignore[arg-type]


def test_a_head_and_its_body_are_one_write() -> None:
    transport, sent = _wrapped()
    transport.write(HEAD)
    assert sent.writes == []
    transport.write(b"{}")
    transport.write(b"")  # h11's end of a fixed-length message
    assert sent.writes == [HEAD + b"{}"]


def test_a_head_answer_releases_the_head_on_its_empty_body() -> None:
    transport, sent = _wrapped()
    transport.write(HEAD)
    transport.write(b"")
    assert sent.writes == [HEAD]


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nx-content-length: 5\r\n\r\n",
    ],
    ids=["empty-body", "stream", "not-200", "no-length"],
)
def test_any_other_write_goes_out_at_once(head: bytes) -> None:
    transport, sent = _wrapped()
    transport.write(head)
    assert sent.writes == [head]


def test_closing_or_ending_writes_a_held_head_first() -> None:
    transport, sent = _wrapped()
    transport.write(HEAD)
    transport.close()
    assert (sent.writes, sent.closed) == ([HEAD], True)
    transport, sent = _wrapped()
    transport.write(HEAD)
    transport.write_eof()
    assert sent.writes == [HEAD, b"<eof>"]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served(toolkit: Toolkit) -> AsyncIterator[ServeHandle]:
    handle = await toolkit.serve("127.0.0.1:0", mcp={})
    yield handle
    await handle.stop()


async def _response(reader: asyncio.StreamReader, *, head_only: bool = False) -> tuple[int, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = b"" if head_only else await asyncio.wait_for(reader.readexactly(length), 10)
    return status, body


@pytest.mark.asyncio(loop_scope="session")
async def test_one_keep_alive_connection_carries_every_kind_of_response(
    served: ServeHandle,
) -> None:
    port = int(served.url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    host = f"Host: 127.0.0.1:{port}\r\n".encode()
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\n" + host + b"\r\n")
        assert await _response(reader) == (200, b'{"status":"ok"}')
        writer.write(b"HEAD /healthz HTTP/1.1\r\n" + host + b"\r\n")
        assert (await _response(reader, head_only=True))[0] == 200
        writer.write(b"GET /nowhere HTTP/1.1\r\n" + host + b"\r\n")
        assert await _response(reader) == (404, b"not found")
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
        call["params"] = {"name": "echo", "arguments": {"text": "once"}}  # type: ignore[assignment]
        body = json.dumps(call).encode()
        writer.write(
            b"POST /mcp HTTP/1.1\r\n"
            + host
            + b"Accept: application/json, text/event-stream\r\n"
            + b"Content-Type: application/json\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        status, answer = await _response(reader)
        assert status == 200
        assert json.loads(answer)["result"]["content"] == [{"type": "text", "text": "echo: once"}]
    finally:
        writer.close()
        await writer.wait_closed()
