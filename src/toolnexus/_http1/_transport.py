"""`Http1Transport`: an httpx2 transport with its own HTTP/1.1 connection pool on asyncio.

Connections are kept per origin (scheme, host, port) within `httpx2.Limits`: at most
`max_connections` open in all (a request beyond waits, for the pool timeout), at most
`max_keepalive_connections` idle, each idle one for at most `keepalive_expiry` seconds.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from collections.abc import Callable
from typing import Any

import httpx2

from toolnexus._http1._connection import (
    Http1Connection,
    ResponseBody,
    _StaleConnection,
    exchange,
    wait,
)
from toolnexus._http1._parse import request_head
from toolnexus._tls import ssl_context

__all__ = ["Http1Transport"]

# How long a connect tries one address before racing the next (RFC 8305's recommendation).
_HAPPY_EYEBALLS_DELAY = 0.25
_DEFAULT_PORTS = {b"http": 80, b"https": 443}
_NO_TIMEOUTS: dict[str, Any] = {}

Origin = tuple[bytes, bytes, int]


class Http1Transport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive, straight on asyncio sockets: no anyio, httpcore or h11 under it.

    Pass it as `httpx2.AsyncClient(transport=Http1Transport(...))`. `ssl_context` is a context
    or a function making one, called on the first `https` request (a plain-HTTP user never
    loads the CA bundle). Failures raise httpx2's exceptions, as its own transport does.
    A request sent on a kept-alive connection that the server had closed meanwhile is sent
    again, once, on a new connection when its body can be replayed.
    """

    def __init__(
        self,
        ssl_context: ssl.SSLContext | Callable[[], ssl.SSLContext] | None = None,
        limits: httpx2.Limits | None = None,
    ) -> None:
        limits = limits if limits is not None else httpx2.Limits()
        self._ssl_context = ssl_context
        self._max_connections = limits.max_connections
        self._max_idle = limits.max_keepalive_connections
        self._expiry = limits.keepalive_expiry
        self._idle: dict[Origin, list[Http1Connection]] = {}
        self._idle_count = 0
        self._open = 0  # connections open or opening, idle ones included
        self._busy: set[Http1Connection] = set()
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False

    # the pool

    def _tls(self) -> ssl.SSLContext:
        context = self._ssl_context
        if context is None:
            context = ssl_context()  # the process's one context, not a new one per pool
        elif not isinstance(context, ssl.SSLContext):
            context = context()
        self._ssl_context = context
        return context

    def _evict_idle(self) -> bool:
        """Close the longest-idle connection (any origin) to make room; False if none is idle."""
        oldest: list[Http1Connection] | None = None
        for idle in self._idle.values():
            if idle and (oldest is None or (idle[0].expires_at or 0) < (oldest[0].expires_at or 0)):
                oldest = idle
        if oldest is None:
            return False
        self._idle_count -= 1
        self._drop(oldest.pop(0))
        return True

    def _drop(self, conn: Http1Connection) -> None:
        conn.close()
        self._open -= 1
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _release(self, conn: Http1Connection, reusable: bool) -> None:
        """Take back a connection whose exchange is over: idle if it may carry more."""
        self._busy.discard(conn)
        if (
            not reusable
            or self._closed
            or (self._max_idle is not None and self._idle_count >= self._max_idle)
        ):
            self._drop(conn)
            return
        if self._expiry is not None:
            conn.expires_at = time.monotonic() + self._expiry
        self._idle.setdefault(conn.origin, []).append(conn)
        self._idle_count += 1
        self._wake_one()

    def _reuse(self, origin: Origin, fresh: bool) -> Http1Connection | None:
        """An idle connection to `origin` (unless `fresh`), now busy; `None` when one must be
        opened or waited for. The first step of every acquire, taken without a coroutine."""
        if self._closed:
            raise httpx2.ConnectError("the transport is closed")
        idle = None if fresh else self._idle.get(origin)
        if not idle:
            return None
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            self._idle_count -= 1
            if conn.usable and (conn.expires_at is None or conn.expires_at > now):
                conn.expires_at = None
                self._busy.add(conn)
                return conn
            self._drop(conn)
        return None

    async def _acquire(
        self, origin: Origin, timeouts: dict[str, Any], fresh: bool
    ) -> Http1Connection:
        """A connection to `origin` when `_reuse` found none: a new one within the limit, else
        the next one given back (for at most the pool timeout)."""
        deadline: float | None = None
        while True:
            limit = self._max_connections
            if limit is None or self._open < limit or self._evict_idle():
                self._open += 1
                try:
                    conn = await self._connect(origin, timeouts.get("connect"))
                except BaseException:
                    self._open -= 1
                    self._wake_one()
                    raise
                self._busy.add(conn)
                return conn
            pool_timeout = timeouts.get("pool")
            loop = asyncio.get_running_loop()
            if pool_timeout is not None and deadline is None:
                deadline = loop.time() + pool_timeout
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                await wait(waiter, None if deadline is None else max(deadline - loop.time(), 0))
            except TimeoutError:
                raise httpx2.PoolTimeout(
                    "timed out waiting for a connection from the pool"
                ) from None
            except BaseException:
                if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                    self._wake_one()  # woken, then cancelled: pass the turn on
                raise
            finally:
                if not waiter.done():
                    waiter.cancel()
            reused = self._reuse(origin, fresh)
            if reused is not None:
                return reused

    async def _connect(self, origin: Origin, timeout: float | None) -> Http1Connection:
        scheme, host, port = origin
        name = host.decode("ascii")
        context = self._tls() if scheme == b"https" else None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(
                    lambda: Http1Connection(origin),
                    name,
                    port,
                    ssl=context,
                    server_hostname=name if context is not None else None,
                    happy_eyeballs_delay=_HAPPY_EYEBALLS_DELAY,
                )
        except TimeoutError:
            raise httpx2.ConnectTimeout(f"timed out connecting to {name}:{port}") from None
        except OSError as exc:  # refused, unreachable, DNS, TLS (ssl.SSLError is an OSError)
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return conn

    # httpx2.AsyncBaseTransport

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        scheme = url.raw_scheme
        default_port = _DEFAULT_PORTS.get(scheme)
        if default_port is None:
            raise httpx2.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}")
        if not url.raw_host:
            raise httpx2.UnsupportedProtocol("the URL has no host")
        origin = (scheme, url.raw_host, url.port or default_port)
        method = request.method.encode("ascii")
        stream = request.stream
        body: bytes | httpx2.AsyncByteStream
        if isinstance(stream, httpx2.ByteStream):
            body = b"".join(stream)
            size: int | None = len(body)
        elif isinstance(stream, httpx2.AsyncByteStream):
            body = stream
            size = None
        else:
            raise httpx2.LocalProtocolError("an async transport needs an async request body")
        head, chunked, length, close = request_head(method, url.raw_path, request.headers.raw, size)
        timeouts = request.extensions.get("timeout") or _NO_TIMEOUTS
        replayable = isinstance(body, bytes)
        fresh = False
        while True:
            conn = self._reuse(origin, fresh)
            if conn is None:
                conn = await self._acquire(origin, timeouts, fresh)
            try:
                response, framing = await exchange(
                    conn, method, head, body, chunked, length, timeouts
                )
            except _StaleConnection as exc:
                self._release(conn, False)
                if fresh or not replayable:
                    raise exc.error from None
                fresh = True
                continue
            except BaseException:
                self._release(conn, False)
                raise
            break
        stream_out = ResponseBody(
            conn, response, framing, not close, self._release, timeouts.get("read")
        )
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=stream_out,
            extensions={"http_version": response.version, "reason_phrase": response.reason},
        )

    async def aclose(self) -> None:
        """Close every connection; requests made afterwards fail with `httpx2.ConnectError`."""
        self._closed = True
        idle, self._idle, self._idle_count = self._idle, {}, 0
        for conns in idle.values():
            for conn in conns:
                self._drop(conn)
        for conn in list(self._busy):
            conn.close()
        while self._waiters:
            self._wake_one()
