"""One HTTP/1.1 client connection: an asyncio protocol, a request out, a response in.

The event loop feeds received bytes into `Http1Connection.buffer`; a reader that needs more waits
on one future with one timer (the read timeout), and a writer whose socket buffer is full
waits the same way (the write timeout). Unread bytes past a high-water mark pause the socket,
so a consumer that reads a streamed body slowly sets the pace (back-pressure).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, Callable
from typing import Any

import httpx2

from toolnexus._http1._parse import (
    MAX_HEAD_BYTES,
    MAX_LINE_BYTES,
    Framing,
    ResponseHead,
    chunk_size,
    find_head_end,
    framing,
    keeps_alive,
    parse_head,
    parse_trailers,
)

__all__ = ["Http1Connection", "ResponseBody", "exchange", "wait"]

_HIGH_WATER = 256 * 1024
_LOW_WATER = 64 * 1024


class _StaleConnection(Exception):  # never leaves this package: the pool catches it
    """A reused connection turned out closed before any byte of the response came back.

    The server dropped it while idle, so the request can be sent again on a fresh one;
    `error` is what to raise if it is not.
    """

    def __init__(self, error: httpx2.TransportError) -> None:
        super().__init__(str(error))
        self.error = error


def _wake(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


async def wait(future: asyncio.Future[None], timeout: float | None) -> None:
    """Await `future`; `TimeoutError` after `timeout` seconds (one timer, no task)."""
    if timeout is None:
        await future
        return
    timer = asyncio.get_running_loop().call_later(timeout, _expire, future)
    try:
        await future
    finally:
        timer.cancel()


class Http1Connection(asyncio.Protocol):
    """A TCP (or TLS) connection to one origin and what it has received."""

    __slots__ = (
        "buffer",
        "cut",
        "deadline",
        "drained",
        "eof",
        "error",
        "expires_at",
        "loop",
        "origin",
        "reading_paused",
        "received",
        "requests",
        "timer",
        "transport",
        "waiter",
        "writing_paused",
    )

    def __init__(self, origin: tuple[bytes, bytes, int]) -> None:
        self.origin = origin
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False  # the peer closed its side, or the connection is gone
        self.error: Exception | None = None  # why it was lost, when not cleanly
        self.received = False  # a byte arrived since the current request was sent
        self.cut = False  # a request was left half-sent: the connection cannot carry another
        self.requests = 0  # requests sent on it so far
        self.expires_at: float | None = None  # while idle: when keep-alive gives up on it
        self.waiter: asyncio.Future[None] | None = None
        # The read timeout: one timer per connection, re-armed when it fires early, rather
        # than one timer made and cancelled per wait.
        self.deadline: float | None = None  # when the current wait for bytes gives up
        self.timer: asyncio.TimerHandle | None = None
        self.drained: asyncio.Future[None] | None = None
        self.reading_paused = False
        self.writing_paused = False

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.received = True
        if len(self.buffer) > _HIGH_WATER and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()
        _wake(self.waiter)

    def eof_received(self) -> bool:
        self.eof = True
        _wake(self.waiter)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        if exc is not None:
            self.error = exc
        _wake(self.waiter)
        _wake(self.drained)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        _wake(self.drained)

    # used by the exchange and the pool

    @property
    def usable(self) -> bool:
        """Whether an idle connection can carry another request (open, nothing unread)."""
        transport = self.transport
        return not (
            self.eof or self.cut or self.buffer or transport is None or transport.is_closing()
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.eof = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _read_deadline(self) -> None:
        timer, self.timer = self.timer, None
        waiter, deadline = self.waiter, self.deadline
        if timer is None or waiter is None or waiter.done() or deadline is None:
            return  # no timed wait in progress: the next one arms a timer again
        if deadline <= timer.when():
            waiter.set_exception(TimeoutError())
        else:  # the wait that armed this timer ended, and a later one runs to a later deadline
            self.timer = waiter.get_loop().call_at(deadline, self._read_deadline)

    async def more(self, timeout: float | None) -> bool:
        """Wait for bytes beyond those buffered; False when the peer closed instead."""
        if self.eof:
            return False
        if self.reading_paused:  # the reader wants more than what is buffered
            self.reading_paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        size = len(self.buffer)
        loop = asyncio.get_running_loop()
        waiter = self.waiter = loop.create_future()
        if timeout is None:
            self.deadline = None
        else:
            deadline = self.deadline = loop.time() + timeout
            timer = self.timer
            if timer is None or timer.when() > deadline:
                if timer is not None:
                    timer.cancel()
                self.timer = loop.call_at(deadline, self._read_deadline)
        try:
            await waiter
        except TimeoutError:
            raise httpx2.ReadTimeout("timed out waiting for the server") from None
        finally:
            self.waiter = None
        return len(self.buffer) > size

    def take(self, size: int) -> bytes:
        """Remove and return the first `size` buffered bytes."""
        buffer = self.buffer
        if size >= len(buffer):
            data = bytes(buffer)
            buffer.clear()
        else:
            data = bytes(buffer[:size])
            del buffer[:size]
        if self.reading_paused and len(buffer) <= _LOW_WATER and not self.eof:
            self.reading_paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        return data

    def line(self) -> bytes | None:
        """One buffered line without its ending, or None while it is incomplete."""
        end = self.buffer.find(b"\n")
        if end < 0:
            if len(self.buffer) > MAX_LINE_BYTES:
                raise httpx2.RemoteProtocolError("chunk size line too long")
            return None
        if end > MAX_LINE_BYTES:
            raise httpx2.RemoteProtocolError("chunk size line too long")
        line = self.take(end + 1)[:-1]
        return line[:-1] if line.endswith(b"\r") else line

    def lost(
        self, closed: str = "the server closed the connection without a response"
    ) -> httpx2.TransportError:
        """The error for a connection that ended where more was expected: why it was lost, or
        `closed` when the server closed it cleanly."""
        if self.error is not None:
            return httpx2.ReadError(str(self.error) or type(self.error).__name__)
        return httpx2.RemoteProtocolError(closed)

    def write(self, data: bytes | bytearray) -> None:
        if self.eof or self.transport is None or self.transport.is_closing():
            raise httpx2.WriteError(str(self.error or "the connection is closed"))
        self.transport.write(data)

    async def drain(self, timeout: float | None) -> None:
        """Wait until the full send buffer has room (the write timeout applies). Callers on the
        hot path check `writing_paused` first, so that a write that fitted costs no coroutine."""
        if not self.writing_paused:
            return  # resume_writing alone resolves the wait: never start one that cannot end
        self.drained = asyncio.get_running_loop().create_future()
        try:
            await wait(self.drained, timeout)
        except TimeoutError:
            raise httpx2.WriteTimeout("timed out sending to the server") from None
        finally:
            self.drained = None
        if self.eof:
            raise httpx2.WriteError(str(self.error or "the connection is closed"))


async def _send_stream(
    conn: Http1Connection,
    stream: AsyncIterable[bytes],
    chunked: bool,
    length: int | None,
    timeout: float | None,
) -> None:
    sent = 0
    async for chunk in stream:
        if not chunk:
            continue
        sent += len(chunk)
        if length is not None and sent > length:
            raise httpx2.LocalProtocolError("request body longer than its Content-Length")
        conn.write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
        if conn.writing_paused:
            await conn.drain(timeout)
    if chunked:
        conn.write(b"0\r\n\r\n")
        if conn.writing_paused:
            await conn.drain(timeout)
    elif length is not None and sent != length:
        raise httpx2.LocalProtocolError("request body shorter than its Content-Length")


async def exchange(
    conn: Http1Connection,
    method: bytes,
    head: bytes | bytearray,
    body: bytes | AsyncIterable[bytes],
    chunked: bool,
    length: int | None,
    timeouts: dict[str, Any],
) -> tuple[ResponseHead, Framing]:
    """Send one request on `conn` and read the head of its final response.

    Raises `_StaleConnection` when a reused connection proves closed before any response
    byte arrived (the request may be sent again); httpx2's errors otherwise.
    """
    reused = conn.requests > 0
    conn.requests += 1
    conn.received = False
    write_timeout = timeouts.get("write")
    try:
        if isinstance(body, bytes):
            if chunked and body:
                body = b"%x\r\n%b\r\n0\r\n\r\n" % (len(body), body)
            elif chunked:
                body = b"0\r\n\r\n"
            conn.write(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                conn.write(body)
            if conn.writing_paused:
                await conn.drain(write_timeout)
        else:
            conn.write(head)
            await _send_stream(conn, body, chunked, length, write_timeout)
    except (httpx2.WriteError, httpx2.WriteTimeout) as exc:
        if not conn.received:
            if reused and isinstance(exc, httpx2.WriteError):
                raise _StaleConnection(exc) from None
            raise
        # A server that answers before taking the whole body (say 413) is still heard out,
        # on a connection that then closes: the rest of the body must not reach it.
        conn.cut = True
    read_timeout = timeouts.get("read")
    scanned = 0
    while True:
        end = find_head_end(conn.buffer, scanned)
        if end < 0:
            scanned = len(conn.buffer)
            if scanned > MAX_HEAD_BYTES:
                raise httpx2.RemoteProtocolError("response head too large")
            if not await conn.more(read_timeout) and conn.eof:
                if not conn.received and reused:
                    raise _StaleConnection(conn.lost())
                if conn.buffer:
                    raise httpx2.RemoteProtocolError("the server closed the connection mid-head")
                raise conn.lost()
            continue
        if end > MAX_HEAD_BYTES:
            raise httpx2.RemoteProtocolError("response head too large")
        response = parse_head(conn.take(end))
        scanned = 0
        if 100 <= response.status < 200 and response.status != 101:
            continue  # interim (100 Continue, 103 Early Hints): the final answer follows
        return response, framing(method, response)


class ResponseBody(httpx2.AsyncByteStream):
    """A response body read straight off its connection, as its framing delimits it.

    When the body ends the connection goes back to the pool (if both sides keep it alive);
    closed before its end, on an error or a cancellation, the connection is closed instead.
    A body dropped unread and unclosed (garbage-collected) closes its connection too, so it
    gives its place in the pool back rather than holding it for ever.
    """

    __slots__ = ("_conn", "_done", "_keep", "_left", "_release", "_state", "_timeout")

    def __init__(
        self,
        conn: Http1Connection,
        head: ResponseHead,
        body_framing: Framing,
        keep: bool,
        release: Callable[[Http1Connection, bool], None],
        read_timeout: float | None,
    ) -> None:
        self._conn: Http1Connection | None = conn
        self._release = release
        self._timeout = read_timeout
        self._keep = (
            keep and keeps_alive(head) and body_framing.kind != "close" and head.status != 101
        )
        self._state = body_framing.kind  # none, length, chunked (size), data, crlf, trailers, close
        self._left = body_framing.length
        if self._state == "none":
            self._finish()

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._release(conn, self._keep and conn.usable)

    def _abandon(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._release(conn, False)

    def __del__(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # Collection may run anywhere (in another thread, inside the pool's own code): the
            # connection is handed back on its loop's next turn.
            with contextlib.suppress(RuntimeError):  # the loop is closed: its sockets too
                conn.loop.call_soon_threadsafe(self._release, conn, False)

    def __aiter__(self) -> ResponseBody:
        return self

    async def __anext__(self) -> bytes:
        conn = self._conn
        if conn is None:
            raise StopAsyncIteration
        if self._state == "length" and conn.buffer:  # the usual case: what is buffered, at once
            data = conn.take(self._left)
            self._left -= len(data)
            if not self._left:
                self._state = "done"
                self._finish()
            return data
        try:
            data = await self._read(conn)
        except BaseException:
            self._abandon()
            raise
        if self._state == "done":
            self._finish()
            if not data:
                raise StopAsyncIteration
        return data

    async def _read(self, conn: Http1Connection) -> bytes:
        """The next piece of the body: every whole part already buffered, else what comes."""
        out = bytearray()
        while True:
            state = self._state
            if state == "length" or state == "data":
                if conn.buffer:
                    piece = conn.take(self._left)
                    out += piece
                    self._left -= len(piece)
                    if not self._left:
                        self._state = "done" if state == "length" else "crlf"
                    continue
            elif state == "chunked":
                line = conn.line()
                if line is not None:
                    self._left = chunk_size(line)
                    self._state = "data" if self._left else "trailers"
                    continue
            elif state == "crlf":
                line = conn.line()
                if line is not None:
                    if line:
                        raise httpx2.RemoteProtocolError("chunk data longer than its size")
                    self._state = "chunked"
                    continue
            elif state == "trailers":
                if self._trailers(conn):
                    self._state = "done"
                    continue
            elif state == "close":
                if conn.buffer:
                    out += conn.take(len(conn.buffer))
                    continue
                if conn.eof:
                    if conn.error is not None:
                        raise conn.lost()
                    self._state = "done"
                    continue
            else:  # done
                return bytes(out)
            if out:
                return bytes(out)
            if not await conn.more(self._timeout) and conn.eof and state != "close":
                raise conn.lost("the server closed the connection before the body was complete")

    def _trailers(self, conn: Http1Connection) -> bool:
        buffer = conn.buffer
        if buffer[:1] == b"\n" or buffer[:2] == b"\r\n":
            conn.take(1 if buffer[:1] == b"\n" else 2)
            return True
        end = find_head_end(b"\n" + buffer)
        if end < 0:
            if len(buffer) > MAX_HEAD_BYTES:
                raise httpx2.RemoteProtocolError("chunked trailers too large")
            return False
        parse_trailers(conn.take(end - 1))
        return True

    async def aclose(self) -> None:
        self._abandon()
