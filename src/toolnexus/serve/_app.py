"""The HTTP server: one Starlette app (guards, routing, profiles) on Uvicorn in the running loop."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolnexus.serve._a2a import A2AEndpoint
from toolnexus.serve._addr import is_loopback

__all__ = ["MAX_BODY_BYTES", "ServeHandle", "build_app", "start_server"]

MAX_BODY_BYTES = 4 * 1024 * 1024
START_TIMEOUT_S = 10.0
GRACEFUL_SHUTDOWN_S = 3


def _host_name(host_header: str) -> str:
    """The name part of a `Host` header value (`[::1]:80` → `::1`, `a.b:80` → `a.b`)."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rpartition(":")[0] if ":" in host_header else host_header


class _Guard:
    """Every request passes three gates, in order: DNS-rebinding (loopback binds only: `Host` and
    `Origin` must name this machine, else 403), bearer auth (401) and the body cap (413)."""

    def __init__(
        self, app: ASGIApp, *, loopback: bool, auth_token: str | None, max_body: int
    ) -> None:
        self.app = app
        self.loopback = loopback
        self.token = auth_token.encode("utf-8") if auth_token is not None else None
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.loopback and not self._local(headers):
            response: Response = PlainTextResponse("forbidden", status_code=403)
            await response(scope, receive, send)
            return
        if self.token is not None and not self._authorized(headers.get("authorization")):
            response = PlainTextResponse(
                "unauthorized", status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await self._too_large(scope, receive, send)
            return
        # Read the whole body (bounded) before the app sees any of it, so an oversized stream is
        # refused cleanly instead of half-consumed.
        body = bytearray()
        trailing: list[Message] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                trailing.append(message)
                break
            body.extend(message.get("body", b""))
            if len(body) > self.max_body:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]
        replay.extend(trailing)

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)

    @staticmethod
    def _local(headers: Headers) -> bool:
        host = headers.get("host")
        if not host or not is_loopback(_host_name(host)):
            return False
        origin = headers.get("origin")
        if origin is None:
            return True
        try:
            name = urlsplit(origin).hostname
        except ValueError:
            return False
        return name is not None and is_loopback(name)

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


def _mcp_security(host: str) -> TransportSecuritySettings:
    """The SDK's own Host/Origin check for `/mcp`, in line with the app-wide guard (which runs
    first and answers 403)."""
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = ["127.0.0.1", "localhost", "[::1]"]
    bound = f"[{host}]" if ":" in host else host
    if bound not in names:
        names.append(bound)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[
            *(f"http://{n}" for n in names),
            *(f"http://{n}:*" for n in names),
        ],
    )


def build_app(
    *,
    mcp_server: Any | None,
    a2a: A2AEndpoint | None,
    card: bytes | None,
    host: str,
    auth_token: str | None,
    max_body: int = MAX_BODY_BYTES,
) -> Starlette:
    """The Starlette app: `/mcp` (MCP profile), the card and `POST /` (A2A profile), else 404.

    `host` is the bind host: on a loopback bind the DNS-rebinding guard is on.
    """
    routes: list[BaseRoute] = []
    manager: StreamableHTTPSessionManager | None = None
    if mcp_server is not None:
        # Stateless: a fresh transport per request and nothing kept between requests.
        manager = StreamableHTTPSessionManager(
            app=mcp_server,
            stateless=True,
            security_settings=_mcp_security(host),
            max_request_body_size=max_body,
        )
        routes.append(Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)))
    if a2a is not None and card is not None:
        card_bytes = card

        async def agent_card(request: Request) -> Response:
            return Response(card_bytes, media_type="application/json")

        async def json_rpc(request: Request) -> Response:
            answer = await a2a.handle(await request.body())
            return Response(answer, media_type="application/json")

        routes.append(Route("/.well-known/agent-card.json", agent_card, methods=["GET"]))
        routes.append(Route("/", json_rpc, methods=["POST"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if manager is None:
            yield
            return
        async with manager.run():
            yield

    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(_Guard, loopback=is_loopback(host), auth_token=auth_token, max_body=max_body)
        ],
        exception_handlers={404: _not_found, 405: _not_found},
        lifespan=lifespan,
    )
    app.router.redirect_slashes = False
    return app


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
) -> ServeHandle:
    """Run `app` with Uvicorn on the bound `sock` as a task of the running loop."""
    config = uvicorn.Config(
        app,
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
            raise RuntimeError(f"the server at {url} failed to start") from None
        finally:
            sock.close()

    loop = asyncio.get_running_loop()
    task = loop.create_task(run(), name=f"toolnexus serve {url}")
    deadline = loop.time() + START_TIMEOUT_S
    while not server.started:
        if task.done():
            task.result()  # raises the startup failure
            raise RuntimeError(f"the server at {url} stopped while starting")
        if loop.time() > deadline:
            server.should_exit = True
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise TimeoutError(f"the server at {url} did not start within {START_TIMEOUT_S:g}s")
        await asyncio.sleep(0.005)
    return ServeHandle(url, host, port, server, task, a2a)
