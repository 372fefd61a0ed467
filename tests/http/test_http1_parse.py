"""The HTTP/1.1 wire of `Http1Transport`, property-tested: any well-formed answer, split anywhere,
reads back as sent; the head scanner agrees with a whole-buffer search however bytes arrive."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolnexus._http1 import Http1Transport
from toolnexus._http1._parse import find_head_end, parse_head, request_head

SETTINGS = settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

names = st.from_regex(r"X-[A-Za-z0-9-]{1,12}", fullmatch=True)
values = st.from_regex(r"[!-~]([ !-~]{0,30}[!-~])?", fullmatch=True)
headers = st.lists(st.tuples(names, values), max_size=6)
bodies = st.binary(max_size=3000)


@st.composite
def answers(draw: st.DrawFn) -> tuple[bytes, int, list[tuple[str, str]], bytes]:
    """A serialized response (status, extra headers, body) framed by length, chunks or close."""
    status = draw(st.sampled_from([200, 201, 202, 400, 404, 500, 503]))
    extra = draw(headers)
    body = draw(bodies)
    kind = draw(st.sampled_from(["length", "chunked", "close"]))
    eol = draw(st.sampled_from([b"\r\n", b"\n"]))
    lines = [b"HTTP/1.1 %d %b" % (status, draw(st.sampled_from([b"OK", b"Whatever", b""])))]
    lines += [f"{k}: {v}".encode() for k, v in extra]
    if kind == "length":
        lines.append(b"Content-Length: %d" % len(body))
        payload = body
    elif kind == "chunked":
        lines.append(b"Transfer-Encoding: chunked")
        sizes = draw(st.lists(st.integers(1, 700), max_size=8))
        payload, rest = b"", body
        for size in [*sizes, len(rest)]:
            piece, rest = rest[:size], rest[size:]
            if piece:
                ext = draw(st.sampled_from([b"", b";a=b", b" ; x"]))
                payload += b"%x%b\r\n%b\r\n" % (len(piece), ext, piece)
        trailers = draw(st.lists(st.tuples(names, values), max_size=2))
        payload += b"0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in trailers) + b"\r\n"
    else:
        lines.append(b"Connection: close")
        payload = body
    return eol.join(lines) + eol + eol + payload, status, extra, body


class _Splitter:
    """One loop and one raw server for every example: each connection writes the next wire
    given, cut at the given offsets, then closes."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.script: tuple[bytes, list[int]] = (b"", [])
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0)
        )
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/"
        self.http = httpx2.AsyncClient(transport=Http1Transport(), timeout=5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        wire, cuts = self.script
        await reader.readuntil(b"\r\n\r\n")
        start = 0
        for cut in [*sorted(set(cuts)), len(wire)]:
            writer.write(wire[start:cut])
            start = cut
            await writer.drain()
            await asyncio.sleep(0)  # let the client see each piece on its own
        writer.close()

    def fetch(self, wire: bytes, cuts: list[int]) -> httpx2.Response:
        self.script = (wire, cuts)
        # A new connection per answer: every example's framing starts on a clean wire.
        return self.loop.run_until_complete(
            self.http.get(self.url, headers={"Connection": "close"})
        )

    def close(self) -> None:
        self.loop.run_until_complete(self.http.aclose())
        self.server.close()
        self.loop.run_until_complete(self.server.wait_closed())
        self.loop.close()


@pytest.fixture(scope="module")
def splitter() -> Iterator[_Splitter]:
    splitter = _Splitter()
    yield splitter
    splitter.close()


@SETTINGS
@given(answer=answers(), data=st.data())
def test_any_well_formed_answer_split_anywhere_reads_back_as_sent(
    splitter: _Splitter,
    answer: tuple[bytes, int, list[tuple[str, str]], bytes],
    data: st.DataObject,
) -> None:
    wire, status, extra, body = answer
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=12))
    response = splitter.fetch(wire, cuts)
    assert response.status_code == status
    assert response.content == body
    got = [(k, v) for k, v in response.headers.multi_items() if k.startswith("x-")]
    assert got == [(k.lower(), v) for k, v in extra]


@SETTINGS
@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=20))
def test_the_incremental_head_scan_agrees_with_one_scan_of_the_whole(
    data: bytes, cuts: list[int]
) -> None:
    whole = find_head_end(data)
    buffer = bytearray()
    scanned = 0
    found = -1
    start = 0
    for cut in [*sorted(c for c in cuts if c <= len(data)), len(data)]:
        buffer += data[start:cut]
        start = cut
        found = find_head_end(buffer, scanned)
        if found >= 0:
            break
        scanned = len(buffer)
    assert found == whole


@SETTINGS
@given(st.binary(max_size=120))
def test_arbitrary_bytes_parse_or_raise_remote_protocol_error(head: bytes) -> None:
    try:
        parsed = parse_head(head)
    except httpx2.RemoteProtocolError:
        return
    assert 0 <= parsed.status <= 999
    assert parsed.version in (b"HTTP/1.0", b"HTTP/1.1")


def test_folded_header_lines_are_joined() -> None:
    parsed = parse_head(b"HTTP/1.1 200 OK\r\nX-A: one\r\n  two\r\nX-B:\tb \r\n\r\n")
    assert parsed.headers == [(b"X-A", b"one two"), (b"X-B", b"b")]
    assert (parsed.status, parsed.reason) == (200, b"OK")


@pytest.mark.parametrize(
    ("method", "target", "header"),
    [
        (b"GE T", b"/", (b"A", b"b")),
        (b"GET", b"/a b", (b"A", b"b")),
        (b"GET", b"/", (b"A B", b"b")),
        (b"GET", b"/", (b"A", b"b\r\nC: d")),
        (b"GET", b"/", (b"A", b"b\x00")),
    ],
)
def test_a_request_head_that_could_smuggle_a_line_is_refused(
    method: bytes, target: bytes, header: tuple[bytes, bytes]
) -> None:
    with pytest.raises(httpx2.LocalProtocolError):
        request_head(method, target, [header])
