"""The HTTP server: one Starlette app (guards, routing, profiles) on Uvicorn in the running loop."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import re
import resource
import socket
import struct
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from toolnexus import _otel
from toolnexus.errors import ServeError, ServeTimeout
from toolnexus.serve._a2a._endpoint import A2AEndpoint
from toolnexus.serve._addr import is_loopback
from toolnexus.serve._auth import OAuthCard, OAuthGate, TokenVerifierImpl, metadata_routes
from toolnexus.serve._health import PROBE_PATHS, health_routes
from toolnexus.serve._mcp._http import McpHttpEndpoint, SessionPolicy

__all__ = ["MAX_BODY_BYTES", "ServeHandle", "ServeLimits", "build_app", "start_server"]

MAX_BODY_BYTES = 4 * 1024 * 1024
START_TIMEOUT_S = 10.0
GRACEFUL_SHUTDOWN_S = 3


# The public agent card (a2a.md §2.1): readable without a token, whatever guards the rest.
AGENT_CARD_PATH = "/.well-known/agent-card.json"


def _default_max_connections() -> int:
    """512, or half the descriptor limit when that is lower (the rest stays for everything else
    the process opens: an authenticated client must still get in)."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):  # pragma: no cover
        return 512
    return max(8, min(512, soft // 2)) if soft > 0 else 512


@dataclass(frozen=True, slots=True)
class ServeLimits:
    """What one slow or hostile client may cost the server (seconds, bytes, connections).

    - `header_timeout`: a request's line and headers must arrive within this long of the
      connection opening (or of the previous response): `408`, then closed.
    - `body_timeout`: the whole body must arrive within this long of the headers: `408`.
    - `keep_alive_timeout`: an idle keep-alive connection is closed after this long.
    - `max_connections`: connections beyond this many are answered `503` and closed at once.
    - `max_body`: a larger body is refused with `413`.
    - `max_buffered`: bodies held by all requests together; beyond it, `503`.
    - `send_timeout`: a response the client stops reading (its writes stalled this long with
      nothing taken) is cut, and the connection closed.
    """

    header_timeout: float = 10.0
    body_timeout: float = 10.0
    keep_alive_timeout: float = 5.0
    max_connections: int = 0  # 0: the default (512, or half the descriptor limit)
    max_body: int = MAX_BODY_BYTES
    max_buffered: int = 64 * 1024 * 1024
    send_timeout: float = 10.0

    def connections(self) -> int:
        return self.max_connections if self.max_connections > 0 else _default_max_connections()


# -- the one Host/Origin rule ---------------------------------------------------------------------

_HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9.-]+))(?::[0-9]{1,5})?")
_ORIGIN = re.compile(r"(?i:https?)://(?P<host>[^/?#@]+)")


def _loopback_authority(authority: str) -> bool:
    """Whether `host[:port]` (the whole value, nothing else) names this machine."""
    match = _HOST.fullmatch(authority)
    if match is None:
        return False
    name = match.group("v6") or match.group("name")
    return name is not None and is_loopback(name)


def local_request(host: str | None, origin: str | None) -> bool:
    """Whether a request's `Host` and `Origin` pass the DNS-rebinding rule (`_local_request`);
    remembered for short values, since a client sends the same pair on every request."""
    if (host is None or len(host) <= _MEMO_MAX) and (origin is None or len(origin) <= _MEMO_MAX):
        return _memo_local_request(host, origin)
    return _local_request(host, origin)


_MEMO_MAX = 255


def _local_request(host: str | None, origin: str | None) -> bool:
    """The DNS-rebinding rule of every route on a loopback bind: `Host` is exactly a loopback
    authority — `localhost` (any case), an address in 127.0.0.0/8 or `[::1]`, with an optional
    numeric port, and nothing else (no userinfo, no path) — and `Origin`, when sent, is an
    `http://` or `https://` origin with such an authority (`null` is refused)."""
    if not host or not _loopback_authority(host):
        return False
    if origin is None:
        return True
    match = _ORIGIN.fullmatch(origin.strip())
    return match is not None and _loopback_authority(match.group("host"))


_memo_local_request = functools.lru_cache(maxsize=256)(_local_request)


# -- JSON that is not JSON ----------------------------------------------------------------------

# Cheap screen for what Python's JSON reader accepts but JSON forbids or cannot represent:
# `NaN`/`Infinity` tokens and numbers too large for a float (which read as infinity).
_SUSPECT_NUMBERS = re.compile(rb"NaN|Infinity|[0-9][eE][+-]?[0-9]{3}|[0-9]{300}")


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:20]} is too large for a JSON number")
    return value


def non_finite_reason(body: bytes | bytearray) -> str | None:
    """Why `body` would make a non-finite number, or `None` (also for bodies that are not JSON
    at all: the route reports those as usual)."""
    if _SUSPECT_NUMBERS.search(body) is None:
        return None
    try:
        json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float)
    except ValueError as exc:
        text = str(exc)
        if "JSON number" in text:
            return text.split(": line")[0]
    except RecursionError:
        return None
    return None


def _parse_error(reason: str) -> Response:
    error = {"code": -32700, "message": f"Parse error: {reason}"}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}, separators=(",", ":"))
    return Response(body, status_code=400, media_type="application/json")


class _Guard:
    """Every request passes these gates, in order: DNS-rebinding (loopback binds only, see
    `local_request`: 403), bearer auth (401; not for the public agent card), the body cap
    (413), the body read deadline (408), the bound on bodies held by all requests together
    (503), and no non-finite numbers (400)."""

    def __init__(
        self, app: ASGIApp, *, loopback: bool, auth_token: str | None, limits: ServeLimits
    ) -> None:
        self.app = app
        self.loopback = loopback
        self.token = auth_token.encode("utf-8") if auth_token is not None else None
        self.limits = limits
        self.max_body = limits.max_body
        self.buffered = 0  # body bytes held by all requests in flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.loopback and not local_request(headers.get("host"), headers.get("origin")):
            response: Response = PlainTextResponse("forbidden", status_code=403)
            await response(scope, receive, send)
            return
        if (
            self.token is not None
            and scope["path"] not in PROBE_PATHS
            and scope["path"] != AGENT_CARD_PATH  # public: it says how to authenticate
            and not self._authorized(headers.get("authorization"))
        ):
            response = PlainTextResponse(
                "unauthorized", status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await self._too_large(scope, receive, send)
            return
        held = 0
        try:
            # Read the whole body (bounded in size and time, and in what all requests hold
            # together) before the app sees any of it, so a bad one is refused cleanly.
            body = bytearray()
            trailing: list[Message] = []
            refusal: Response | None = None
            try:
                async with asyncio.timeout(self.limits.body_timeout):
                    while True:
                        message = await receive()
                        if message["type"] != "http.request":
                            trailing.append(message)
                            break
                        chunk = message.get("body", b"")
                        if len(body) + len(chunk) > self.max_body:
                            refusal = PlainTextResponse("request body too large", status_code=413)
                            break
                        if self.buffered + len(chunk) > self.limits.max_buffered:
                            refusal = PlainTextResponse(
                                "server busy", status_code=503, headers={"Retry-After": "1"}
                            )
                            break
                        self.buffered += len(chunk)
                        held += len(chunk)
                        body.extend(chunk)
                        if not message.get("more_body", False):
                            break
            except TimeoutError:
                refusal = PlainTextResponse("request timeout", status_code=408)
            # The A2A endpoint (`POST /`) answers these itself: HTTP 200 with a JSON-RPC
            # parse error, as its contract says.
            if refusal is None and scope["method"] == "POST" and scope["path"] != "/":
                reason = non_finite_reason(body)
                if reason is not None:
                    refusal = _parse_error(reason)
            if refusal is not None:
                refusal.headers["Connection"] = "close"
                await refusal(scope, receive, send)
                return
            replay: list[Message] = [
                {"type": "http.request", "body": bytes(body), "more_body": False}
            ]
            replay.extend(trailing)
            del body

            async def replayed() -> Message:
                return replay.pop(0) if replay else await receive()

            await self.app(scope, replayed, send)
        finally:
            self.buffered -= held

    def _authorized(self, header: str | None) -> bool:
        assert self.token is not None
        if header is None:
            return False
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode("utf-8"), self.token)

    @staticmethod
    async def _too_large(scope: Scope, receive: Receive, send: Send) -> None:
        response = PlainTextResponse("request body too large", status_code=413)
        await response(scope, receive, send)


async def _not_found(request: Request, exc: Exception) -> Response:
    return PlainTextResponse("not found", status_code=404)


# The SDK's own Host/Origin check stays off: the guard applies the one rule to every route.
_NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def build_app(
    *,
    mcp_server: Any | None,
    a2a: A2AEndpoint | None,
    card: bytes | OAuthCard | None,
    host: str,
    auth_token: str | None,
    limits: ServeLimits | None = None,
    oauth: TokenVerifierImpl | None = None,
    mcp_sessions: SessionPolicy | None = None,
) -> Starlette:
    """The Starlette app: `/mcp` (MCP profile), the card and `POST /` (A2A profile), else 404.

    `host` is the bind host: on a loopback bind the DNS-rebinding guard is on. With `oauth`
    the app is an OAuth-protected resource (`serve/_auth.py`), the static token still accepted.
    `mcp_sessions` bounds the MCP profile's sessions; `None` serves it stateless.
    """
    limits = limits or ServeLimits()
    routes: list[BaseRoute] = []
    manager: McpHttpEndpoint | None = None
    if mcp_server is not None:
        manager = McpHttpEndpoint(
            mcp_server,
            security_settings=_NO_SDK_HOST_CHECK,
            max_body=limits.max_body,
            sessions=mcp_sessions,
        )
        routes.append(Route("/mcp", endpoint=manager))
    if a2a is not None and card is not None:
        card_source = card

        async def agent_card(request: Request) -> Response:
            body = card_source if isinstance(card_source, bytes) else await card_source()
            return Response(body, media_type="application/json")

        routes.append(Route(AGENT_CARD_PATH, agent_card, methods=["GET"]))
        routes.append(Route("/", a2a.route, methods=["POST"]))

    stores = [a2a.store, getattr(a2a.client, "conversation_store", None)] if a2a else []
    routes.extend(health_routes([s for s in stores if s is not None]))
    middleware = [
        Middleware(
            _Guard,
            loopback=is_loopback(host),
            auth_token=None if oauth is not None else auth_token,
            limits=limits,
        )
    ]
    if oauth is not None:
        discovery = metadata_routes(oauth.auth, oauth.resources)
        routes.extend(discovery)
        open_paths = {*PROBE_PATHS, *(r.path for r in discovery), AGENT_CARD_PATH}
        middleware.append(
            Middleware(
                OAuthGate,
                verifier=oauth,
                static_token=auth_token,
                open_paths=open_paths,
                mcp_resource=oauth.resource if mcp_server is not None else None,
            )
        )
    middleware.append(Middleware(_otel.ServerSpans))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if oauth is not None:
                stack.push_async_callback(oauth.aclose)
            if manager is not None:
                await stack.enter_async_context(manager.run())
            yield

    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={404: _not_found, 405: _not_found},
        lifespan=lifespan,
    )
    app.router.redirect_slashes = False
    return app


_REFUSAL = (
    b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s"
)


# The ioctl that reads a socket's unsent bytes (`SIOCOUTQ`, the same number as `TIOCOUTQ`).
_OUTQ: int | None = None
if sys.platform == "linux":
    import fcntl
    import termios

    _OUTQ = termios.TIOCOUTQ


def _raw_response(status: int, reason: bytes, body: bytes) -> bytes:
    return _REFUSAL % (status, reason, len(body), body)


class _BoundedH11(H11Protocol):
    """Uvicorn's h11 protocol with three more limits: connections beyond the cap are answered
    `503` and closed at once (their descriptor is freed before anything waits); a request's
    line and headers must be complete within `header_timeout` of the connection opening or of
    the previous response (`408`, closed) — however the bytes dribble in; and a response whose
    writes stall for `send_timeout` (the client reads nothing) is cut: the connection is
    aborted, which also frees the task writing it."""

    limits: ServeLimits  # set on the per-server subclass

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = _HeadWithBody(transport)  # type: ignore[assignment]
        self._header_timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None
        self._unsent = 0
        if len(self.connections) > self.limits.connections():
            transport.write(_raw_response(503, b"Service Unavailable", b"server busy"))
            transport.close()
            return
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self.limits.header_timeout, self._header_late)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.our_state is h11.IDLE:
            self.transport.write(_raw_response(408, b"Request Timeout", b"request timeout"))
        self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the request line and headers are in
            self._disarm_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._disarm_header_timer()
            self._arm_header_timer()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_timer is None:
            self._unsent = self._pending_bytes()
            self._send_timer = self.loop.call_later(self.limits.send_timeout, self._send_check)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._disarm_send_timer()

    def _disarm_send_timer(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _pending_bytes(self) -> int:
        """Bytes written but not yet taken by the client: the transport's buffer plus what the
        kernel still holds for the socket (Linux tells; elsewhere only the buffer counts)."""
        pending = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        if sock is not None and _OUTQ is not None:
            with contextlib.suppress(OSError, ValueError):
                pending += struct.unpack("i", fcntl.ioctl(sock.fileno(), _OUTQ, b"\0" * 4))[0]
        return pending

    def _send_check(self) -> None:
        # While writing is paused the application waits and adds nothing, so fewer pending
        # bytes mean the client took some: a slow reader gets another period, a still one none.
        pending = self._pending_bytes()
        if pending < self._unsent:
            self._unsent = pending
            self._send_timer = self.loop.call_later(self.limits.send_timeout, self._send_check)
            return
        self._send_timer = None
        # Reset, not closed: a plain close leaves the kernel trying to deliver what is queued
        # (megabytes, for minutes) to a client that takes nothing; a zero linger drops it.
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        self._disarm_send_timer()
        super().connection_lost(exc)


# The head of a `200` response with a non-empty fixed-length body (uvicorn writes the head
# with lowercase header names, and the body right after it).
_HEAD_OF_A_BODY = re.compile(rb"HTTP/1\.1 200 [^\r]*\r\n(?:[^\r]*\r\n)*?content-length: [1-9]")


class _HeadWithBody:
    """A connection's transport that holds the head of a response with a fixed-length body
    until the next write (its body), so both leave in one `send`: the client wakes once to read
    them, and no pause of this process can fall between them. Anything else is written at once;
    closing writes what is held first."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
        elif _HEAD_OF_A_BODY.match(data):
            self._held = data
        elif data:
            self._transport.write(data)

    def writelines(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held)

    def write_eof(self) -> None:
        self._release()
        self._transport.write_eof()

    def close(self) -> None:
        self._release()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _EmbeddedServer(uvicorn.Server):
    """Uvicorn that leaves signal handling to the host application it runs inside."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ServeHandle:
    """A running server: `url` (with the real port), `await stop()` / `await close()`."""

    def __init__(
        self,
        url: str,
        host: str,
        port: int,
        server: uvicorn.Server,
        task: asyncio.Task[None],
        a2a: A2AEndpoint | None,
    ) -> None:
        self.url = url
        self.host = host
        self.port = port
        self._server = server
        self._task = task
        self._a2a = a2a
        self._stopping: asyncio.Future[None] | None = None

    async def stop(self) -> None:
        """Stop listening, cancel background A2A work and release the port. Idempotent."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopping)

    async def _stop(self) -> None:
        self._server.should_exit = True
        if self._a2a is not None:
            await self._a2a.aclose()
        with contextlib.suppress(Exception):
            await self._task

    close = stop

    @property
    def running(self) -> bool:
        return not self._task.done()

    async def __aenter__(self) -> ServeHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<ServeHandle {self.url} {state}>"


async def start_server(
    app: ASGIApp,
    sock: Any,
    *,
    url: str,
    host: str,
    port: int,
    a2a: A2AEndpoint | None,
    limits: ServeLimits | None = None,
) -> ServeHandle:
    """Run `app` with Uvicorn on the bound `sock` as a task of the running loop."""
    limits = limits or ServeLimits()
    protocol = type("BoundedH11", (_BoundedH11,), {"limits": limits})
    keep_alive: Any = limits.keep_alive_timeout  # typed `int` by uvicorn; any number works
    config = uvicorn.Config(
        app,
        http=protocol,
        timeout_keep_alive=keep_alive,
        lifespan="on",
        ws="none",
        log_config=None,
        access_log=False,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    server = _EmbeddedServer(config)

    async def run() -> None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit:  # uvicorn exits the process on a failed startup; we must not
            raise ServeError(f"the server at {url} failed to start") from None
        finally:
            sock.close()

    loop = asyncio.get_running_loop()
    task = loop.create_task(run(), name=f"toolnexus serve {url}")
    deadline = loop.time() + START_TIMEOUT_S
    while not server.started:
        if task.done():
            task.result()  # raises the startup failure
            raise ServeError(f"the server at {url} stopped while starting")
        if loop.time() > deadline:
            server.should_exit = True
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise ServeTimeout(f"the server at {url} did not start within {START_TIMEOUT_S:g}s")
        await asyncio.sleep(0.005)
    return ServeHandle(url, host, port, server, task, a2a)
