"""`Http1Transport` under `httpx2.AsyncClient`, against real servers on loopback.

Raw asyncio servers script the wire byte by byte (split bodies, dropped idle connections,
malformed answers, silence); uvicorn/Starlette stands in for a real HTTP stack; TLS uses a
CA and certificate made for the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import json
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from support.asgi_server import running
from support.polling import wait_until
from support.tls import make_certificates
from toolnexus._http1 import Http1Transport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Raw"], Awaitable[None]]


@dataclass
class Raw:
    """What a raw server saw: connections accepted, requests read, closes from the client."""

    url: str = ""
    connections: int = 0
    requests: list[tuple[bytes, bytes]] = field(default_factory=list)
    client_closes: int = 0
    state: dict[str, object] = field(default_factory=dict)


async def read_request(reader: asyncio.StreamReader, raw: Raw) -> tuple[bytes, bytes] | None:
    """One request (head, decoded body), or None when the client closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        raw.client_closes += 1
        return None
    lines = head.decode("latin-1").split("\r\n")
    fields = {
        k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)
    }
    body = b""
    if fields.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if not size:
                await reader.readuntil(b"\r\n")
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    elif "content-length" in fields:
        body = await reader.readexactly(int(fields["content-length"]))
    raw.requests.append((head, body))
    return head, body


@contextlib.asynccontextmanager
async def raw_server(handler: Handler, **kwargs: object) -> AsyncIterator[Raw]:
    raw = Raw()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raw.connections += 1
        try:
            await handler(reader, writer, raw)
        except (ConnectionError, asyncio.IncompleteReadError):
            raw.client_closes += 1  # the client closed or reset the connection mid-exchange
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0, **kwargs)  # type: ignore[arg-type]
    port = server.sockets[0].getsockname()[1]
    raw.url = f"{'https' if 'ssl' in kwargs else 'http'}://127.0.0.1:{port}"
    try:
        yield raw
    finally:
        server.close()
        await server.wait_closed()


def answer(body: bytes = b"ok", *extra: bytes, status: bytes = b"200 OK") -> bytes:
    head = b"HTTP/1.1 " + status + b"\r\nContent-Length: %d\r\n" % len(body)
    return head + b"".join(x + b"\r\n" for x in extra) + b"\r\n" + body


def serve_each(reply: Callable[[bytes, bytes], bytes], split: int = 0) -> Handler:
    """A keep-alive server answering every request with `reply(head, body)`, written `split`
    bytes at a time (0: in one write)."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        while (request := await read_request(reader, raw)) is not None:
            data = reply(*request)
            step = split or len(data)
            for i in range(0, len(data), step):
                writer.write(data[i : i + step])
                await writer.drain()

    return handler


def client(transport: Http1Transport | None = None, **timeouts: float) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=transport or Http1Transport(),
        timeout=httpx2.Timeout(5.0, **timeouts) if timeouts else httpx2.Timeout(5.0),
    )


# framing of response bodies


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Checksum: abc\r\n\r\n"
)


async def test_a_content_length_body_split_at_every_byte() -> None:
    body = json.dumps({"text": "é" * 40}).encode()
    handler = serve_each(lambda h, b: answer(body, b"X-A: 1"), split=1)
    async with raw_server(handler) as raw, client() as http:
        for _ in range(2):
            response = await http.get(raw.url + "/x")
            assert response.status_code == 200
            assert response.content == body
            assert response.headers["x-a"] == "1"
            assert response.http_version == "HTTP/1.1"
    assert raw.connections == 1


async def test_a_chunked_body_with_extensions_and_trailers_split_at_every_byte() -> None:
    async with raw_server(serve_each(lambda h, b: CHUNKED, split=1)) as raw, client() as http:
        assert (await http.get(raw.url)).content == b"hello 0123456789"
        assert (await http.get(raw.url)).content == b"hello 0123456789"
    assert raw.connections == 1  # the trailers were read, the connection kept


async def test_a_body_without_length_runs_until_the_server_closes() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await read_request(reader, raw)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, ")
        await writer.drain()
        writer.write(b"part two")

    async with raw_server(handler) as raw, client() as http:
        assert (await http.get(raw.url)).content == b"part one, part two"
        assert (await http.get(raw.url)).content == b"part one, part two"
    assert raw.connections == 2


async def test_head_1xx_204_and_304_answers_have_no_body() -> None:
    def reply(head: bytes, body: bytes) -> bytes:
        path = head.split(b" ")[1]
        if head.startswith(b"HEAD"):
            return b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
        if path == b"/204":
            return b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
        if path == b"/304":
            return b"HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n"
        return (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
            + answer(b"final")
        )

    async with raw_server(serve_each(reply, split=3)) as raw, client() as http:
        head = await http.head(raw.url)
        assert head.status_code == 200
        assert head.content == b""
        assert head.headers["content-length"] == "1000"
        assert (await http.get(raw.url + "/204")).status_code == 204
        assert (await http.get(raw.url + "/304")).status_code == 304
        final = await http.get(raw.url + "/1xx")
        assert (final.status_code, final.content) == (200, b"final")
    assert raw.connections == 1


@pytest.mark.parametrize(
    "reply",
    [
        answer(b"bye", b"Connection: close"),
        b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nbye",
    ],
    ids=["connection-close", "http-1.0"],
)
async def test_a_server_that_closes_after_the_answer_gets_a_new_connection(reply: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await read_request(reader, raw)
        writer.write(reply)

    async with raw_server(handler) as raw, client() as http:
        for _ in range(3):
            assert (await http.get(raw.url)).content == b"bye"
    assert raw.connections == 3


async def test_an_http_1_0_server_that_offers_keep_alive_keeps_its_connection() -> None:
    reply = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nhi"
    async with raw_server(serve_each(lambda h, b: reply)) as raw, client() as http:
        for _ in range(3):
            response = await http.get(raw.url)
            assert (response.content, response.http_version) == (b"hi", "HTTP/1.0")
    assert raw.connections == 1


async def test_a_request_asking_to_close_is_not_kept() -> None:
    async with raw_server(serve_each(lambda h, b: answer())) as raw, client() as http:
        for _ in range(2):
            await http.get(raw.url, headers={"Connection": "close"})
        await wait_until(lambda: raw.client_closes == 2)
    assert raw.connections == 2


# request bodies


async def test_request_bodies_of_known_length_and_streamed() -> None:
    async def parts() -> AsyncIterator[bytes]:
        for piece in (b"one ", b"", b"two ", b"three"):
            yield piece

    async with raw_server(serve_each(lambda h, b: answer(b))) as raw, client() as http:
        assert (await http.post(raw.url, content=b"known")).content == b"known"
        assert (await http.post(raw.url, content=parts())).content == b"one two three"
        assert (await http.post(raw.url, json={"a": 1})).json() == {"a": 1}
    (known_head, _), (streamed_head, _), _ = raw.requests
    assert b"Content-Length: 5" in known_head
    assert b"Transfer-Encoding: chunked" in streamed_head


async def test_a_header_that_would_break_the_head_is_refused_before_sending() -> None:
    async with raw_server(serve_each(lambda h, b: answer())) as raw, client() as http:
        request = http.build_request("GET", raw.url)
        request.headers["X-Evil"] = "a\r\nInjected: yes"
        with pytest.raises(httpx2.LocalProtocolError):
            await http.send(request)
        assert (await http.get(raw.url)).status_code == 200
    assert all(b"Injected" not in head for head, _ in raw.requests)


# idle connections the server dropped


@pytest.mark.parametrize("how", ["eof", "reset"])
async def test_a_request_on_a_connection_dropped_while_idle_is_sent_again(how: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await read_request(reader, raw)
        writer.write(answer(b"first" if raw.connections == 1 else b"again"))
        await writer.drain()
        if raw.connections == 1:  # drop the first connection once the client has it idle
            await wait_until(lambda: raw.state.get("idle"))
            if how == "reset":
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.close()
            raw.state["dropped"] = True
            return
        while await read_request(reader, raw) is not None:
            writer.write(answer(b"again"))

    async with raw_server(handler) as raw, client() as http:
        assert (await http.get(raw.url)).content == b"first"
        raw.state["idle"] = True
        await wait_until(lambda: raw.state.get("dropped"))
        assert (await http.post(raw.url, content=b"x")).content == b"again"
    assert raw.connections == 2


def _drop_second_request(how: str) -> Handler:
    """A server whose first connection answers once, then reads the next request and drops
    the connection without a byte of answer (as a server closing an idle connection would)."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        first = raw.connections == 1
        while await read_request(reader, raw) is not None:
            if first and len(raw.requests) == 2:
                if how == "reset":
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            writer.write(answer(b"first" if first else b"again"))

    return handler


@pytest.mark.parametrize("how", ["eof", "reset"])
async def test_a_request_the_server_dropped_unanswered_on_a_reused_connection_is_retried(
    how: str,
) -> None:
    async with raw_server(_drop_second_request(how)) as raw, client() as http:
        assert (await http.get(raw.url)).content == b"first"
        assert (await http.post(raw.url, content=b"x")).content == b"again"
        assert (await http.get(raw.url)).content == b"again"
    assert raw.connections == 2
    assert [body for _, body in raw.requests] == [b"", b"x", b"x", b""]


async def test_a_streamed_body_is_not_sent_twice() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b"once"

    async with raw_server(_drop_second_request("eof")) as raw, client() as http:
        await http.get(raw.url)
        with pytest.raises(httpx2.RemoteProtocolError):
            await http.post(raw.url, content=body())
    assert raw.connections == 1


async def test_a_fresh_connection_dropped_unanswered_is_not_retried() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await read_request(reader, raw)

    async with raw_server(handler) as raw, client() as http:
        with pytest.raises(httpx2.RemoteProtocolError):
            await http.get(raw.url)
    assert raw.connections == 1


# malformed answers


@pytest.mark.parametrize(
    "reply",
    [
        b"HTP/1.1 200 OK\r\n\r\n",
        b"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded-first: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc",
        b"HTTP/1.1 200 O",
        b"",
    ],
    ids=[
        "status-line",
        "version",
        "status-code",
        "header-line",
        "leading-fold",
        "conflicting-length",
        "negative-length",
        "chunk-size",
        "chunk-overrun",
        "huge-head",
        "short-body",
        "short-chunk",
        "cut-head",
        "no-answer",
    ],
)
async def test_a_malformed_or_cut_answer_is_a_remote_protocol_error(reply: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await read_request(reader, raw)
        writer.write(reply)
        await writer.drain()

    async with raw_server(handler) as raw, client() as http:
        with pytest.raises(httpx2.RemoteProtocolError):
            await http.get(raw.url)
        raw.state["second"] = True
        with pytest.raises(httpx2.RemoteProtocolError):  # a new connection, same answer
            await http.get(raw.url)
    assert raw.connections == 2


async def test_a_connection_reset_mid_body_is_a_read_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await read_request(reader, raw)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        await writer.drain()
        await wait_until(lambda: raw.state.get("reading"))
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async with (
        raw_server(handler) as raw,
        client() as http,
        http.stream("GET", raw.url) as response,
    ):
        chunks = response.aiter_raw()
        assert await anext(chunks) == b"partial"
        raw.state["reading"] = True
        with pytest.raises(httpx2.ReadError):
            await anext(chunks)


# errors and timeouts


async def test_a_refused_connection_is_a_connect_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    async with client() as http:
        with pytest.raises(httpx2.ConnectError):
            await http.get(f"http://127.0.0.1:{port}/")


async def test_a_silent_server_is_a_read_timeout_and_the_connection_is_not_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await read_request(reader, raw)
        if raw.connections == 1:
            await reader.read()  # never answer
        else:
            writer.write(answer(b"late"))
            await writer.drain()

    async with raw_server(handler) as raw, client(read=0.2) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.get(raw.url)
        assert (await http.get(raw.url)).content == b"late"
    assert raw.connections == 2


async def test_each_request_on_a_kept_connection_gets_its_own_read_timeout() -> None:
    # The connection keeps one read timer across requests: a later, shorter budget must still
    # fire on time, and a later wait without any budget must not be cut by an earlier one's.
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        while await read_request(reader, raw) is not None:
            path = raw.requests[-1][0].split(b" ")[1]
            if path == b"/silent":
                await reader.read()  # never answer
                return
            if path == b"/slow":
                await asyncio.sleep(0.3)  # past the budget of the request before
            writer.write(answer(path))
            await writer.drain()

    loop = asyncio.get_running_loop()
    async with raw_server(handler) as raw, client() as http:
        quick = httpx2.Timeout(5.0, read=0.05)
        assert (await http.get(raw.url + "/fast", timeout=quick)).content == b"/fast"
        unbounded = httpx2.Timeout(5.0, read=None)
        assert (await http.get(raw.url + "/slow", timeout=unbounded)).content == b"/slow"
        long = httpx2.Timeout(5.0, read=60)
        assert (await http.get(raw.url + "/fast", timeout=long)).content == b"/fast"
        assert raw.connections == 1
        started = loop.time()
        with pytest.raises(httpx2.ReadTimeout):
            await http.get(raw.url + "/silent", timeout=httpx2.Timeout(5.0, read=0.2))
        assert loop.time() - started < 30  # the 60 s timer of the request before did not rule


async def test_a_prepared_request_without_content_length_is_framed_by_the_transport() -> None:
    async with raw_server(serve_each(lambda h, b: answer(b))) as raw, client() as http:
        for body in (b"first", b"second, longer"):
            request = httpx2.Request("POST", raw.url, stream=httpx2.ByteStream(body))
            response = await http.send(request)
            assert response.content == body
    assert [head.count(b"Content-Length: ") for head, _ in raw.requests] == [1, 1]
    assert b"Content-Length: 14\r\n" in raw.requests[1][0]


async def test_a_server_that_stops_reading_is_a_write_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await wait_until(lambda: raw.state.get("done"), timeout=30)

    async def endless() -> AsyncIterator[bytes]:
        while True:
            yield b"x" * 1_000_000

    async with raw_server(handler) as raw, client(write=0.3) as http:
        with pytest.raises(httpx2.WriteTimeout):
            await http.post(raw.url, content=endless())
        raw.state["done"] = True


async def test_an_answer_before_the_whole_body_is_read_out_and_its_connection_dropped() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        if raw.connections == 1:
            await reader.readuntil(b"\r\n\r\n")  # the head only: the body is refused
            writer.write(answer(b"too large", status=b"413 Content Too Large"))
            await writer.drain()
            await wait_until(lambda: raw.state.get("done"), timeout=30)
            return
        while await read_request(reader, raw) is not None:
            writer.write(answer(b"fresh"))

    async def endless() -> AsyncIterator[bytes]:
        while True:
            yield b"x" * 1_000_000

    async with raw_server(handler) as raw, client(write=0.3) as http:
        refused = await http.post(raw.url, content=endless())
        assert (refused.status_code, refused.content) == (413, b"too large")
        assert (await http.get(raw.url)).content == b"fresh"
        raw.state["done"] = True
    assert raw.connections == 2


async def test_a_tls_handshake_that_never_comes_is_a_connect_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await reader.read()

    async with raw_server(handler) as raw, client(connect=0.3) as http:
        with pytest.raises(httpx2.ConnectTimeout):
            await http.get(raw.url.replace("http:", "https:"))


# the pool


async def test_the_pool_never_opens_more_than_max_connections() -> None:
    in_flight = 0
    peak = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        nonlocal in_flight, peak
        while await read_request(reader, raw) is not None:
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0)
            in_flight -= 1
            writer.write(answer())

    limits = httpx2.Limits(max_connections=2, max_keepalive_connections=2)
    async with raw_server(handler) as raw, client(Http1Transport(limits=limits)) as http:
        results = await asyncio.gather(*(http.get(raw.url) for _ in range(12)))
    assert [r.status_code for r in results] == [200] * 12
    assert raw.connections == 2
    assert peak <= 2


async def test_a_request_waits_for_a_free_connection_until_the_pool_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        while await read_request(reader, raw) is not None:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab")
            await writer.drain()
            await wait_until(lambda: raw.state.get("finish"))
            writer.write(b"cd")

    limits = httpx2.Limits(max_connections=1)
    async with raw_server(handler) as raw, client(Http1Transport(limits=limits), pool=0.2) as http:
        async with http.stream("GET", raw.url) as held:
            with pytest.raises(httpx2.PoolTimeout):
                await http.get(raw.url)
            waiting = asyncio.ensure_future(http.get(raw.url))
            await wait_until(lambda: len(raw.requests) == 1)
            raw.state["finish"] = True
            assert await held.aread() == b"abcd"
        assert (await waiting).content == b"abcd"
    assert raw.connections == 1


async def test_a_streamed_response_dropped_unread_gives_its_connection_back() -> None:
    # httpx keeps the place of a response nobody closes until the pool times out; ours is
    # given back (its connection closed) once the response is garbage-collected.
    handler = serve_each(lambda h, b: answer(b"x" * 100_000))
    limits = httpx2.Limits(max_connections=1)
    async with raw_server(handler) as raw, client(Http1Transport(limits=limits), pool=5) as http:
        held = await http.send(http.build_request("GET", raw.url), stream=True)
        with pytest.raises(httpx2.PoolTimeout, match="waiting for a connection from the pool"):
            await http.get(raw.url, timeout=httpx2.Timeout(5.0, pool=0.2))
        del held
        gc.collect()
        response = await http.get(raw.url)
        assert response.content == b"x" * 100_000
        assert (await http.get(raw.url)).content == b"x" * 100_000
    assert raw.connections == 2  # the dropped one closed, the next one kept


async def test_idle_connections_beyond_the_keep_alive_count_are_closed() -> None:
    gate = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        while await read_request(reader, raw) is not None:
            await gate.wait()
            writer.write(answer())

    limits = httpx2.Limits(max_connections=10, max_keepalive_connections=1)
    async with raw_server(handler) as raw, client(Http1Transport(limits=limits)) as http:
        pending = [asyncio.ensure_future(http.get(raw.url)) for _ in range(3)]
        await wait_until(lambda: len(raw.requests) == 3)
        gate.set()
        await asyncio.gather(*pending)
        await wait_until(lambda: raw.client_closes == 2)
        await http.get(raw.url)
    assert raw.connections == 3


async def test_an_expired_idle_connection_is_not_reused() -> None:
    async with raw_server(serve_each(lambda h, b: answer())) as raw:
        transport = Http1Transport(limits=httpx2.Limits(keepalive_expiry=0))
        async with client(transport) as http:
            await http.get(raw.url)
            await http.get(raw.url)
        await wait_until(lambda: raw.client_closes == 2)
    assert raw.connections == 2


async def test_a_cancelled_request_closes_its_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        while await read_request(reader, raw) is not None:
            if raw.connections == 1:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
                await writer.drain()
            else:
                writer.write(answer(b"fresh"))

    async with raw_server(handler) as raw, client() as http:
        task = asyncio.ensure_future(http.get(raw.url))
        await wait_until(lambda: len(raw.requests) == 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_until(lambda: raw.client_closes == 1)
        assert (await http.get(raw.url)).content == b"fresh"
    assert raw.connections == 2


async def test_a_response_closed_unread_closes_its_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        while await read_request(reader, raw) is not None:
            if raw.connections == 1:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            else:
                writer.write(answer(b"whole"))

    async with raw_server(handler) as raw, client() as http:
        async with http.stream("GET", raw.url) as response:
            assert await anext(response.aiter_raw()) == b"abc"
        await wait_until(lambda: raw.client_closes == 1)
        assert (await http.get(raw.url)).content == b"whole"
    assert raw.connections == 2


async def test_a_slow_reader_holds_back_a_large_streamed_body() -> None:
    size = 64 * 1024 * 1024

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: Raw) -> None:
        await read_request(reader, raw)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        piece = b"y" * 65536
        sent = 0
        while sent < size:
            writer.write(piece)
            sent += len(piece)
            raw.state["sent"] = sent
            await writer.drain()

    async with (
        raw_server(handler) as raw,
        client() as http,
        http.stream("GET", raw.url) as response,
    ):
        chunks = response.aiter_raw()
        received = len(await anext(chunks))
        # Turns of the loop enough for it to move the whole body into memory if nothing held
        # it back: the paused socket keeps what the server can send to its buffers.
        for _ in range(2000):
            await asyncio.sleep(0)
        assert raw.state["sent"] < size // 4
        async for chunk in chunks:
            received += len(chunk)
    assert received == size


async def test_a_closed_transport_refuses_requests() -> None:
    async with raw_server(serve_each(lambda h, b: answer())) as raw:
        transport = Http1Transport()
        http = client(transport)
        await http.get(raw.url)
        await transport.aclose()
        with pytest.raises(httpx2.ConnectError):
            await http.get(raw.url)
        await http.aclose()


async def test_localhost_connects_whichever_address_family_listens() -> None:
    async with raw_server(serve_each(lambda h, b: answer(b"v4"))) as raw, client() as http:
        url = raw.url.replace("127.0.0.1", "localhost")
        assert (await http.get(url)).content == b"v4"


# a real HTTP stack: uvicorn and Starlette


async def _echo(request: Request) -> Response:
    return JSONResponse(
        {"method": request.method, "body": (await request.body()).decode(), "q": request.url.query}
    )


async def _events(request: Request) -> Response:
    async def gen() -> AsyncIterator[bytes]:
        for i in range(3):
            yield f"data: {i}\n\n".encode()

    return StreamingResponse(gen(), media_type="text/event-stream")


async def _gzipped(request: Request) -> Response:
    return Response(gzip.compress(b"squeezed" * 100), headers={"Content-Encoding": "gzip"})


APP = Starlette(
    routes=[
        Route("/echo", _echo, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        Route("/events", _events),
        Route("/gzip", _gzipped),
    ]
)


async def test_against_uvicorn_and_starlette() -> None:
    async def upload() -> AsyncIterator[bytes]:
        for piece in (b"stream", b"ed"):
            yield piece

    async with running(APP) as url, client() as http:
        got = await http.post(url + "/echo?a=1", json={"k": "v"})
        assert got.json() == {"method": "POST", "body": '{"k":"v"}', "q": "a=1"}
        assert (await http.put(url + "/echo", content=upload())).json()["body"] == "streamed"
        assert (await http.delete(url + "/echo")).json()["method"] == "DELETE"
        async with http.stream("GET", url + "/events") as events:
            lines = [line async for line in events.aiter_lines() if line]
        assert lines == ["data: 0", "data: 1", "data: 2"]
        assert (await http.get(url + "/gzip")).content == b"squeezed" * 100
        assert (await http.get(url + "/missing")).status_code == 404


# TLS


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("http1-tls")
    make_certificates(folder)
    return folder


async def test_tls_with_sni_and_the_given_context_made_on_first_use(certificates: Path) -> None:
    from support.tls import TestCertificates

    certs = TestCertificates(
        certificates / "ca.pem", certificates / "server.pem", certificates / "server.key"
    )
    server_context = certs.server_context()
    names: list[str | None] = []
    server_context.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment,return-value]
    made: list[ssl.SSLContext] = []

    def context() -> ssl.SSLContext:
        made.append(ssl.create_default_context(cafile=str(certs.ca_file)))
        return made[-1]

    async with raw_server(serve_each(lambda h, b: answer(b"secure")), ssl=server_context) as raw:
        transport = Http1Transport(context)
        async with client(transport) as http:
            plain = raw.url.replace("https:", "http:")
            with pytest.raises(httpx2.RemoteProtocolError):  # TLS bytes are no HTTP answer
                await http.get(plain)
            assert made == []  # a plain-HTTP request never builds the context
            url = raw.url.replace("127.0.0.1", "localhost")
            assert (await http.get(url)).content == b"secure"
            assert (await http.get(url)).content == b"secure"
            assert (await http.get(raw.url)).content == b"secure"
        assert len(made) == 1
        assert names[-2:] == ["localhost", None]  # no SNI for an IP address
        async with client(Http1Transport(ssl.create_default_context())) as untrusting:
            with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await untrusting.get(url)
