"""The interop matrix: the same requests through `Http1Transport` and through httpx2's own
transport, against real HTTP servers started here and against hostile canned answers.

Real servers: uvicorn and hypercorn (both serving one Starlette app), an aiohttp server,
Python's `http.server` speaking HTTP/1.0, and nginx (from Debian's packages) proxying to
uvicorn. Each case compares what a user of `httpx2.AsyncClient` observes (status, the headers
that matter, the decoded body) and must come out the same on both transports. Hostile answers
(close-delimited and chunked bodies, 1xx, folded headers, oversized heads, bodies longer or
shorter than their Content-Length, a `Connection: close` in the middle of a pool) must give the
same result as httpx2's transport or a clear `httpx2.HTTPError`: never a hang, never a body
taken from the wrong answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.server
import shutil
import socket
import subprocess
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from support.asgi_server import running
from support.polling import wait_until
from support.requires import missing
from toolnexus._http1 import Http1Transport

PATTERN = b"0123456789abcdef"


def payload(n: int) -> bytes:
    return (PATTERN * (n // len(PATTERN) + 1))[:n]


# One app, four servers


async def _text(request: Request) -> Response:
    return Response(payload(int(request.query_params["n"])), media_type="text/plain")


async def _gzip(request: Request) -> Response:
    body = gzip.compress(payload(int(request.query_params["n"])))
    return Response(body, media_type="text/plain", headers={"Content-Encoding": "gzip"})


async def _stream(request: Request) -> Response:
    n = int(request.query_params["n"])

    async def pieces() -> AsyncIterator[bytes]:
        data = payload(n)
        for i in range(0, n, 7001):
            yield data[i : i + 7001]

    return StreamingResponse(pieces(), media_type="text/plain")


async def _echo(request: Request) -> Response:
    body = await request.body()
    return Response(
        body, media_type="application/octet-stream", headers={"X-Length": f"{len(body)}"}
    )


async def _no_content(request: Request) -> Response:
    return Response(status_code=204)


ROUTES = [
    Route("/text", _text, methods=["GET", "HEAD"]),
    Route("/gzip", _gzip),
    Route("/stream", _stream),
    Route("/echo", _echo, methods=["POST", "PUT"]),
    Route("/status/204", _no_content),
]
APP = Starlette(routes=ROUTES)


@contextlib.asynccontextmanager
async def hypercorn_server() -> AsyncIterator[str]:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    port = _free_port()
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    stop = asyncio.Event()
    task = asyncio.ensure_future(serve(APP, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
    try:
        await _listening(port, task)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        await task


@contextlib.asynccontextmanager
async def aiohttp_server() -> AsyncIterator[str]:
    from aiohttp import web

    async def text(request: web.Request) -> web.StreamResponse:
        return web.Response(body=payload(int(request.query["n"])), content_type="text/plain")

    async def gz(request: web.Request) -> web.StreamResponse:
        body = gzip.compress(payload(int(request.query["n"])))
        return web.Response(
            body=body, content_type="text/plain", headers={"Content-Encoding": "gzip"}
        )

    async def stream(request: web.Request) -> web.StreamResponse:
        n = int(request.query["n"])
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        data = payload(n)
        for i in range(0, n, 7001):
            await response.write(data[i : i + 7001])
        await response.write_eof()
        return response

    async def echo(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        return web.Response(
            body=body,
            content_type="application/octet-stream",
            headers={"X-Length": f"{len(body)}"},
        )

    async def no_content(request: web.Request) -> web.StreamResponse:
        return web.Response(status=204)

    app = web.Application()
    app.router.add_get("/text", text)  # aiohttp answers HEAD on a GET route itself
    app.router.add_get("/gzip", gz)
    app.router.add_get("/stream", stream)
    app.router.add_post("/echo", echo)
    app.router.add_put("/echo", echo)
    app.router.add_get("/status/204", no_content)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = _free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


class _Http10Handler(http.server.BaseHTTPRequestHandler):
    """The same routes in HTTP/1.0: every answer closes its connection; `/stream` has no length."""

    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # the suite's output stays quiet
        pass

    def _n(self) -> int:
        return int(parse_qs(urlsplit(self.path).query)["n"][0])

    def _send(self, body: bytes, *, length: bool = True, **headers: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", headers.pop("content_type", "text/plain"))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        route = urlsplit(self.path).path
        if route == "/text":
            self._send(payload(self._n()))
        elif route == "/gzip":
            self._send(gzip.compress(payload(self._n())), Content_Encoding="gzip")
        elif route == "/stream":
            self._send(payload(self._n()), length=False)  # delimited by the close
        elif route == "/status/204":
            self.send_response(204)
            self.end_headers()
        else:
            self.send_error(404)

    do_HEAD = do_GET

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._send(body, content_type="application/octet-stream", X_Length=str(len(body)))

    do_PUT = do_POST


@contextlib.contextmanager
def http10_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Http10Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass {upstream};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_request_buffering off;
        }}
    }}
}}
"""


def _nginx() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).exists()), None
    )


@contextlib.asynccontextmanager
async def nginx_server(upstream: str, root: Path) -> AsyncIterator[str]:
    binary = _nginx()
    if binary is None:
        missing("nginx", "apt-get install -y nginx; .ci/run does")
    port = _free_port()
    conf = root / "nginx.conf"
    conf.write_text(NGINX_CONF.format(root=root, port=port, upstream=upstream))
    proc = subprocess.Popen(
        [binary, "-p", str(root), "-c", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        await _listening(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _listening(port: int, owner: asyncio.Future[Any] | subprocess.Popen[bytes]) -> None:
    async def up() -> bool:
        if owner.done() if isinstance(owner, asyncio.Future) else owner.poll() is not None:
            raise RuntimeError(f"the server on port {port} ended before it listened")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return False
        writer.close()
        return True

    await wait_until(up, timeout=15)


@contextlib.asynccontextmanager
async def server(kind: str, tmp: Path) -> AsyncIterator[str]:
    if kind == "uvicorn":
        async with running(APP) as url:
            yield url
    elif kind == "hypercorn":
        async with hypercorn_server() as url:
            yield url
    elif kind == "aiohttp":
        async with aiohttp_server() as url:
            yield url
    elif kind == "http.server (HTTP/1.0)":
        with http10_server() as url:
            yield url
    else:
        async with running(APP) as upstream, nginx_server(upstream, tmp) as url:
            yield url


# The requests, and what a user sees of their answers


@dataclass(frozen=True)
class Seen:
    status: int
    content_type: str | None
    body: bytes
    length: str | None  # X-Length: what an echo received


async def _streamed(data: bytes) -> AsyncIterator[bytes]:
    for i in range(0, len(data), 4096):
        yield data[i : i + 4096]


ECHO_BODY = payload(150_000)
Case = tuple[str, str, bytes | None, bool]  # method, path, body, stream the body
CASES: list[Case] = [
    ("GET", "/text?n=10", None, False),
    ("GET", "/text?n=1500000", None, False),
    ("GET", "/gzip?n=300000", None, False),
    ("GET", "/stream?n=250000", None, False),
    ("HEAD", "/text?n=5000", None, False),
    ("GET", "/status/204", None, False),
    ("POST", "/echo", ECHO_BODY, False),
    ("PUT", "/echo", b"", False),
    ("POST", "/echo", ECHO_BODY, True),
]


def _applies(kind: str, case: Case) -> bool:
    # An HTTP/1.0 server cannot take a chunked (length-less) request body.
    return not (kind.startswith("http.server") and case[3])


async def _send(client: httpx2.AsyncClient, base: str, case: Case) -> Seen:
    method, path, body, stream = case
    content: Any = _streamed(body) if stream and body is not None else body
    response = await client.request(method, base + path, content=content)
    return Seen(
        response.status_code,
        response.headers.get("content-type"),
        response.content,
        response.headers.get("x-length"),
    )


def _ours() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=Http1Transport(), timeout=10.0)


def _theirs() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(), timeout=10.0)


SERVERS = ["uvicorn", "hypercorn", "aiohttp", "http.server (HTTP/1.0)", "nginx"]


@pytest.mark.parametrize("kind", SERVERS)
async def test_every_request_comes_out_the_same_on_both_transports(
    kind: str, tmp_path: Path
) -> None:
    async with server(kind, tmp_path) as base, _ours() as ours, _theirs() as theirs:
        cases = [case for case in CASES if _applies(kind, case)]
        for case in cases:
            expected = await _send(theirs, base, case)
            assert expected.status in (200, 204), (kind, case, expected.status)
            async with asyncio.timeout(20):
                assert await _send(ours, base, case) == expected, (kind, case[:2])
        # Again, one after another on kept connections, then all at once.
        async with asyncio.timeout(60):
            sequential = [await _send(ours, base, case) for case in cases * 2]
            together = await asyncio.gather(*(_send(ours, base, case) for case in cases))
        assert sequential == [await _send(theirs, base, case) for case in cases * 2]
        assert list(together) == sequential[: len(cases)]


# Hostile canned answers


Exchange = Callable[[httpx2.AsyncClient, str], Awaitable[list[tuple[int, bytes]]]]


@dataclass
class Canned:
    """A raw server that answers the n-th request on each connection with `answers[n]`, then
    closes when `close_after` answers were given on that connection (or the list ran out)."""

    answers: list[bytes]
    close_after: int | None = None
    connections: int = 0
    handlers: set[asyncio.Task[None]] = field(default_factory=set)
    writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        self.writers.add(writer)
        self.connections += 1
        served = 0
        try:
            while served < len(self.answers):
                if not await _read_request(reader):
                    return
                writer.write(self.answers[served])
                await writer.drain()
                served += 1
                if self.close_after is not None and served >= self.close_after:
                    return
            # Out of answers: hold the connection until the client goes (a kept connection).
            await reader.read()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        """Close every connection still open and wait for their handlers to end."""
        for writer in self.writers:
            writer.close()
        if self.handlers:
            await asyncio.wait(self.handlers, timeout=5)


async def _read_request(reader: asyncio.StreamReader) -> bool:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return False
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":", 1)[1]))
    return True


@contextlib.asynccontextmanager
async def canned(
    answers: list[bytes], close_after: int | None = None
) -> AsyncIterator[tuple[Canned, str]]:
    state = Canned(answers, close_after)
    listener = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield state, f"http://127.0.0.1:{port}"
    finally:
        listener.close()
        await state.close()
        await listener.wait_closed()


def _ok(body: bytes, *headers: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(body)
    return head + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body


Outcome = tuple[str, object]


async def _outcome(
    make: Callable[[], httpx2.AsyncClient],
    answers: list[bytes],
    requests: int,
    close_after: int | None,
) -> tuple[list[Outcome], int]:
    """Each request's outcome on one client (`("ok", (status, body, folded header))` or
    `("error", kind)`), and how many connections the server saw."""
    outcomes: list[Outcome] = []
    async with canned(answers, close_after) as (state, url), make() as client:
        for _ in range(requests):
            try:
                async with asyncio.timeout(10):
                    response = await client.get(url)
                outcomes.append(
                    (
                        "ok",
                        (response.status_code, response.content, response.headers.get("x-folded")),
                    )
                )
            except httpx2.HTTPError as exc:
                outcomes.append(("error", type(exc).__name__))
    return outcomes, state.connections


@dataclass(frozen=True)
class Hostile:
    answers: list[bytes]  # on each connection, in order
    requests: int
    right: list[
        Outcome
    ]  # what a correct client reads: ("ok", (status, body, X-Folded)) or an error
    close_after: int | None = None  # answers before the server closes the connection


def _fine(body: bytes, folded: str | None = None) -> Outcome:
    return ("ok", (200, body, folded))


WRONG: Outcome = ("error", "any")
HOSTILE: dict[str, Hostile] = {
    "close-delimited body": Hostile(
        [b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + payload(70_000)],
        2,
        [_fine(payload(70_000))] * 2,
        close_after=1,
    ),
    "chunked with extensions and trailers": Hostile(
        [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'5;name=value;quoted="a b"\r\nhello\r\n6 ; ext\r\n world\r\n'
            b"0\r\nX-Trailer: yes\r\nX-Other: 2\r\n\r\n"
        ]
        * 3,
        3,
        [_fine(b"hello world")] * 3,
    ),
    "1xx before the final answer": Hostile(
        [
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
            + _ok(b"final")
        ]
        * 2,
        2,
        [_fine(b"final")] * 2,
    ),
    "Connection: close in the middle of a pool": Hostile(
        [_ok(b"one"), _ok(b"two", b"Connection: close")],
        4,
        [_fine(b"one"), _fine(b"two")] * 2,
    ),
    "a folded header": Hostile(
        [_ok(b"ok", b"X-Folded: first\r\n  second")] * 2, 2, [_fine(b"ok", "first second")] * 2
    ),
    "an oversized head": Hostile([_ok(b"ok", b"X-Big: " + b"a" * 200_000)], 1, [WRONG]),
    "body longer than its Content-Length": Hostile(
        [_ok(b"ok") + b"EXTRA-BYTES-THAT-ARE-NO-ANSWER", _ok(b"second")],
        2,
        # The stray bytes make the connection unfit to reuse: the second request goes on a new
        # one (whose first answer is "ok" again), or fails; never reads "EXTRA…" as its answer.
        [_fine(b"ok"), _fine(b"ok")],
    ),
    "body shorter than its Content-Length": Hostile(
        [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"], 1, [WRONG], close_after=1
    ),
    "two different Content-Lengths": Hostile(
        [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nokabc"],
        1,
        [WRONG],
        close_after=1,
    ),
    "bare LF line endings": Hostile(
        [b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok"] * 2, 2, [_fine(b"ok")] * 2
    ),
}


def _agrees(outcome: Outcome, right: Outcome) -> bool:
    return outcome == right or (outcome[0] == right[0] == "error" and right[1] == "any")


@pytest.mark.parametrize("name", list(HOSTILE))
async def test_a_hostile_answer_gets_the_same_result_or_a_clear_error(name: str) -> None:
    case = HOSTILE[name]
    theirs, _ = await _outcome(_theirs, case.answers, case.requests, case.close_after)
    ours, connections = await _outcome(_ours, case.answers, case.requests, case.close_after)
    for mine, expected, right in zip(ours, theirs, case.right, strict=True):
        # Ours reads what httpx2's transport reads, or what a correct client reads (where h11 is
        # stricter than RFC 9112), or fails clearly where httpx2 also fails: never another body.
        assert mine == expected or _agrees(mine, right), (name, ours, theirs)
        if mine[0] == "ok":
            assert _agrees(mine, right), (name, ours)
    assert connections <= case.requests, (name, connections)
