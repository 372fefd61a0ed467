"""The HTTP server against slow, greedy and odd clients: every connection ends, nothing starves
an honest client, one Host/Origin rule, no non-JSON numbers out."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator

import httpx2
import pytest
import pytest_asyncio

from support.polling import wait_until
from support.serve_hardening import make_toolkit, raw_exchange, serve_both, status_of
from toolnexus.serve import ServeHandle, ServeLimits
from toolnexus.toolkit import Toolkit

LIMITS = ServeLimits(
    header_timeout=0.5, body_timeout=0.5, keep_alive_timeout=0.5, max_connections=40,
    max_buffered=1 << 20,
)  # fmt: skip
TOKEN = "harden-token"
MCP_HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def toolkit() -> AsyncIterator[Toolkit]:
    toolkit = make_toolkit()
    yield toolkit
    await toolkit.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(toolkit: Toolkit) -> AsyncIterator[ServeHandle]:
    handle = await serve_both(toolkit, LIMITS, auth_token=TOKEN)
    yield handle
    await handle.stop()


pytestmark = pytest.mark.asyncio(loop_scope="module")


def _refuse(token: str) -> object:
    raise AssertionError(f"{token} in the output")


def _finite(text: str) -> float:
    value = float(text)
    assert value not in (float("inf"), float("-inf")), text
    return value


def strict_json(text: str) -> dict[str, object]:
    """`text` as JSON that JSON itself allows: no NaN, no Infinity, no overflowing number."""
    value: dict[str, object] = json.loads(text, parse_constant=_refuse, parse_float=_finite)
    return value


async def tools_list(url: str) -> int:
    async with httpx2.AsyncClient() as http:
        response = await http.post(url + "/mcp", json=LIST, headers=MCP_HEADERS, timeout=10)
    assert "echo" in response.text
    return response.status_code


async def test_dribbling_connections_are_cut_and_do_not_starve_others(server: ServeHandle) -> None:
    writers = []
    for _ in range(30):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET / HT")
        writers.append((reader, writer))
    assert await tools_list(server.url) == 200
    for reader, writer in writers:
        # a byte now and then does not extend the deadline
        writer.write(b"T")
        try:
            answer = await asyncio.wait_for(reader.read(-1), 15)
        except ConnectionResetError:  # closed with our last byte unread: cut all the same
            answer = b""
        assert status_of(answer) in (408, 0), answer[:80]
        writer.close()


async def test_http09_request_is_answered_and_closed(server: ServeHandle) -> None:
    answer = await raw_exchange(server.port, b"GET /\r\n")
    assert status_of(answer) in (400, 408)


async def test_connections_beyond_the_cap_get_503_at_once(toolkit: Toolkit) -> None:
    # A server of its own whose idle connections are not cut meanwhile: with the module's
    # 0.5 s header timeout, on a loaded machine the first connections were cut (freeing their
    # slots) before the last ones were opened, and none of them was over the cap.
    limits = dataclasses.replace(LIMITS, header_timeout=60.0)
    server = await serve_both(toolkit, limits, auth_token=TOKEN)
    idle = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(45)]
    reads = [asyncio.ensure_future(reader.read(200)) for reader, _ in idle]
    try:
        # Only the connections over the cap are answered (the others wait for a request).
        await wait_until(lambda: sum(read.done() for read in reads) >= 5, timeout=30)
        answered = [read.result() for read in reads if read.done()]
        assert all(status_of(data) == 503 for data in answered), answered
        assert len(answered) >= 5
    finally:
        for read in reads:
            read.cancel()
        for _, writer in idle:
            writer.close()

    async def honest() -> int:
        return await tools_list(server.url)

    try:
        for _ in range(100):  # the closed connections free their slots
            try:
                assert await honest() == 200
                break
            except (AssertionError, httpx2.HTTPError):
                await asyncio.sleep(0.05)
        else:
            pytest.fail("the server did not recover after the idle connections closed")
    finally:
        await server.stop()


async def test_a_body_that_never_completes_gets_408(server: ServeHandle) -> None:
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer harden-token\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
    )
    answer = await raw_exchange(server.port, head)
    assert status_of(answer) == 408


async def test_bodies_held_together_are_bounded(toolkit: Toolkit) -> None:
    server = await serve_both(toolkit, ServeLimits(body_timeout=2, max_buffered=1 << 20), TOKEN)

    def head(size: int) -> bytes:
        return (
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer harden-token\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size
        )

    async def status(data: bytes) -> int:
        try:
            return status_of(await raw_exchange(server.port, data))
        except ConnectionResetError:  # refused while the rest was still unread
            return -1

    try:
        # Each body alone is allowed; together they exceed what the server may hold.
        statuses = await asyncio.gather(
            status(head(1_040_000) + b"x" * 1_000_000), status(head(900_000) + b"x" * 100_000)
        )
        assert 503 in statuses or -1 in statuses, statuses
        assert 408 in statuses, statuses  # the other one was held until its deadline
    finally:
        await server.stop()


async def test_idle_stateless_mcp_stream_is_405(server: ServeHandle) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.get(
            server.url + "/mcp",
            headers={"Authorization": f"Bearer {TOKEN}", "Accept": "text/event-stream"},
            timeout=10,
        )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


ROUTES = [("POST", "/mcp"), ("POST", "/"), ("GET", "/.well-known/agent-card.json")]
ALLOWED = ["127.0.0.1", "127.0.0.1:8080", "LOCALHOST", "localhost:1", "127.5.5.5", "[::1]:9"]
REFUSED = [
    "127.0.0.1:80@evil.com", "evil.com", "127.0.0.1.evil.com", "localhost:abc",
    "127.0.0.1/x", "[::2]", "0.0.0.0", "",
]  # fmt: skip


def _request(method: str, path: str, host: str, origin: str | None = None) -> bytes:
    body = json.dumps(LIST).encode() if method == "POST" else b""
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: {host}",
        f"Authorization: Bearer {TOKEN}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_one_host_rule_for_every_route(server: ServeHandle, method: str, path: str) -> None:
    for host in ALLOWED:
        answer = await raw_exchange(server.port, _request(method, path, host))
        assert status_of(answer) == 200, (host, answer[:200])
    for host in REFUSED:
        answer = await raw_exchange(server.port, _request(method, path, host))
        assert status_of(answer) in (400, 403), (host, answer[:200])


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_one_origin_rule_for_every_route(server: ServeHandle, method: str, path: str) -> None:
    for origin in ["http://127.0.0.1:5", "https://127.0.0.1", "http://LOCALHOST", "http://[::1]"]:
        answer = await raw_exchange(server.port, _request(method, path, "127.0.0.1", origin))
        assert status_of(answer) == 200, (origin, answer[:200])
    for origin in [
        "null",
        "http://evil.com",
        "http://127.0.0.1@evil.com",
        "file://",
        "ftp://127.0.0.1",
    ]:
        answer = await raw_exchange(server.port, _request(method, path, "127.0.0.1", origin))
        assert status_of(answer) == 403, (origin, answer[:200])


@pytest.mark.parametrize(
    "id_text", ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400 + ".0"]
)
@pytest.mark.parametrize("path", ["/mcp", "/"])
async def test_non_finite_ids_are_never_echoed(
    server: ServeHandle, id_text: str, path: str
) -> None:
    body = '{"jsonrpc":"2.0","id":' + id_text + ',"method":"tools/list","params":{}}'
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            server.url + path, content=body.encode(), headers=MCP_HEADERS, timeout=10
        )
    assert response.status_code < 500
    assert strict_json(response.text)["id"] is None
