"""The transport under the client's own `httpx2.AsyncClient`: httpcore2 over asyncio's sockets.

HTTP itself stays with the httpx2 stack: the client builds and sends requests, httpcore2 pools
connections and keeps them alive, h11 reads and writes HTTP/1.1, and callers see httpx2's
exceptions and decoders. What this module replaces is the socket layer under it. httpcore2's
default network backend wraps every read and write in anyio (a cancel scope with a deadline
per call, stream wrappers, attribute tables): about a quarter of the CPU an LLM request cost.
`AsyncioBackend` does the same job with one asyncio protocol per connection and a timer per
wait, through httpcore2's public extension point `AsyncConnectionPool(network_backend=...)`.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import httpcore2
import httpx2

__all__ = ["AsyncioBackend", "AsyncioTransport"]

# Unread bytes a connection buffers before it stops reading from the socket: the consumer of a
# stream sets the pace (back-pressure), and memory stays bounded.
_HIGH_WATER = 256 * 1024
_LOW_WATER = 64 * 1024
# How long a connect tries one address family before racing the next (RFC 8305; anyio's value).
_HAPPY_EYEBALLS_DELAY = 0.25


class _Connection(asyncio.Protocol):
    """One socket's state, fed by the event loop: received bytes, end of stream, flow control."""

    __slots__ = (
        "buffer",
        "closed",
        "drained",
        "error",
        "reading_paused",
        "transport",
        "waiter",
        "writing_paused",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.closed = False  # the peer sent EOF or the connection is gone
        self.error: Exception | None = None  # why the connection was lost, when not cleanly
        self.waiter: asyncio.Future[None] | None = None  # a read waiting for data
        self.drained: asyncio.Future[None] | None = None  # a write waiting for the buffer
        self.reading_paused = False
        self.writing_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _HIGH_WATER and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()
        _wake(self.waiter)

    def eof_received(self) -> bool:
        self.closed = True
        _wake(self.waiter)
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.error = exc
        _wake(self.waiter)
        _wake(self.drained)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        _wake(self.drained)


def _wake(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


async def _wait(future: asyncio.Future[None], timeout: float | None) -> None:
    """Await `future`, failing it with `TimeoutError` after `timeout` seconds (one timer)."""
    if timeout is None:
        await future
        return
    timer = asyncio.get_running_loop().call_later(timeout, _expire, future)
    try:
        await future
    finally:
        timer.cancel()


def _socket_readable(transport: asyncio.BaseTransport) -> bool:
    """Whether the socket has bytes (or an EOF) the loop has not delivered yet."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


class AsyncioStream(httpcore2.AsyncNetworkStream):
    """A connected socket (plain or TLS) as httpcore2 reads and writes it."""

    def __init__(self, transport: asyncio.Transport, connection: _Connection) -> None:
        self._transport = transport
        self._connection = connection

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        conn = self._connection
        if not conn.buffer and not conn.closed:
            conn.waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(conn.waiter, timeout)
            except TimeoutError:
                raise httpcore2.ReadTimeout("timed out waiting for the server") from None
            finally:
                conn.waiter = None
        buffer = conn.buffer
        if buffer:
            if len(buffer) <= max_bytes:
                data = bytes(buffer)
                buffer.clear()
            else:
                data = bytes(buffer[:max_bytes])
                del buffer[:max_bytes]
            if conn.reading_paused and len(buffer) <= _LOW_WATER and not conn.closed:
                conn.reading_paused = False
                self._transport.resume_reading()
            return data
        if conn.error is not None:
            raise httpcore2.ReadError(str(conn.error) or type(conn.error).__name__)
        return b""  # the server closed the connection: h11 decides what that means

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        conn = self._connection
        if conn.closed or self._transport.is_closing():
            reason = conn.error or "the connection is closed"
            raise httpcore2.WriteError(str(reason))
        self._transport.write(buffer)
        if conn.writing_paused:
            conn.drained = asyncio.get_running_loop().create_future()
            try:
                await _wait(conn.drained, timeout)
            except TimeoutError:
                raise httpcore2.WriteTimeout("timed out sending to the server") from None
            finally:
                conn.drained = None
            if conn.error is not None:
                raise httpcore2.WriteError(str(conn.error))

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport, self._connection, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError:
            self._transport.close()
            raise httpcore2.ConnectTimeout("timed out during the TLS handshake") from None
        except (OSError, ssl.SSLError) as exc:
            self._transport.close()
            raise httpcore2.ConnectError(str(exc)) from exc
        assert transport is not None
        assert isinstance(transport, asyncio.Transport)
        self._connection.transport = transport
        return AsyncioStream(transport, self._connection)

    def get_extra_info(self, info: str) -> Any:
        transport = self._transport
        if info == "is_readable":
            conn = self._connection
            return conn.closed or bool(conn.buffer) or _socket_readable(transport)
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        return None


class AsyncioBackend(httpcore2.AsyncNetworkBackend):
    """Opens TCP connections with the running loop's `create_connection`."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, connection = await loop.create_connection(
                    _Connection,
                    host,
                    port,
                    local_addr=(local_address, 0) if local_address else None,
                    happy_eyeballs_delay=_HAPPY_EYEBALLS_DELAY,
                )
        except TimeoutError:
            raise httpcore2.ConnectTimeout(f"timed out connecting to {host}:{port}") from None
        except OSError as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return AsyncioStream(transport, connection)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


# httpcore2's exceptions and the httpx2 ones callers catch, as httpx2's own transport maps them
# (looked up along the raised type's MRO, so the most specific one wins).
_ERRORS: dict[type[Exception], type[httpx2.HTTPError]] = {
    httpcore2.ConnectTimeout: httpx2.ConnectTimeout,
    httpcore2.ReadTimeout: httpx2.ReadTimeout,
    httpcore2.WriteTimeout: httpx2.WriteTimeout,
    httpcore2.PoolTimeout: httpx2.PoolTimeout,
    httpcore2.TimeoutException: httpx2.TimeoutException,
    httpcore2.ConnectError: httpx2.ConnectError,
    httpcore2.ReadError: httpx2.ReadError,
    httpcore2.WriteError: httpx2.WriteError,
    httpcore2.NetworkError: httpx2.NetworkError,
    httpcore2.ProxyError: httpx2.ProxyError,
    httpcore2.UnsupportedProtocol: httpx2.UnsupportedProtocol,
    httpcore2.LocalProtocolError: httpx2.LocalProtocolError,
    httpcore2.RemoteProtocolError: httpx2.RemoteProtocolError,
    httpcore2.ProtocolError: httpx2.ProtocolError,
}


def _httpx_error(exc: Exception) -> Exception | None:
    """The httpx2 exception for one of httpcore2's; `None` for any other exception."""
    for kind in type(exc).__mro__:
        mapped = _ERRORS.get(kind)
        if mapped is not None:
            return mapped(str(exc))
    return None


class _ResponseBody(httpx2.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._stream:
                yield part
        except Exception as exc:
            error = _httpx_error(exc)
            if error is None:
                raise
            raise error from exc

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        except Exception as exc:
            error = _httpx_error(exc)
            if error is None:
                raise
            raise error from exc


class AsyncioTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport: HTTP/1.1 keep-alive through httpcore2's pool on `AsyncioBackend`.

    What `httpx2.AsyncHTTPTransport` does without a proxy, minus anyio under every socket
    read and write. Pass it as `httpx2.AsyncClient(transport=AsyncioTransport(...))`; failures
    raise the httpx2 exception of the same name, as with httpx2's own transport.
    """

    def __init__(
        self, ssl_context: ssl.SSLContext | Callable[[], ssl.SSLContext], limits: httpx2.Limits
    ) -> None:
        # One pool per scheme, each made on its first request: an endpoint on plain HTTP (a
        # local model server) never loads the CA bundle (megabytes, tens of milliseconds).
        self._ssl_context = ssl_context
        self._limits = limits
        self._pools: dict[bytes, httpcore2.AsyncConnectionPool] = {}

    def _pool(self, scheme: bytes) -> httpcore2.AsyncConnectionPool:
        pool = self._pools.get(scheme)
        if pool is None:
            tls: ssl.SSLContext | None = None
            if scheme == b"https":
                tls = (
                    self._ssl_context
                    if isinstance(self._ssl_context, ssl.SSLContext)
                    else (self._ssl_context())
                )
            limits = self._limits
            pool = self._pools[scheme] = httpcore2.AsyncConnectionPool(
                ssl_context=tls,
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
                network_backend=AsyncioBackend(),
            )
        return pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            response = await self._pool(url.raw_scheme).handle_async_request(core_request)
        except Exception as exc:
            error = _httpx_error(exc)
            if error is None:
                raise
            raise error from exc
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseBody(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()
