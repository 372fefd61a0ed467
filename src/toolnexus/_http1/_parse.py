"""HTTP/1.1 message syntax for a client: the request head out, the response head and framing in.

Pure functions over bytes, no I/O: `_connection.py` feeds them what the socket delivers. A
response that breaks the syntax raises `httpx2.RemoteProtocolError`; a request whose method,
target or headers could smuggle a line break raises `httpx2.LocalProtocolError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx2

__all__ = [
    "MAX_HEAD_BYTES",
    "MAX_LINE_BYTES",
    "Framing",
    "ResponseHead",
    "chunk_size",
    "find_head_end",
    "framing",
    "keeps_alive",
    "parse_head",
    "parse_trailers",
    "request_framing",
    "request_head",
]

# A response head (status line and headers) or a chunked body's trailer section larger than
# this is refused: a server that never ends its headers must not fill memory.
MAX_HEAD_BYTES = 64 * 1024
# One chunk-size line (hex size and extensions).
MAX_LINE_BYTES = 4 * 1024

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# A field value we send: visible characters and obs-text, with spaces and tabs only inside.
_FIELD_VALUE = re.compile(rb"(?:[!-~\x80-\xff](?:[\t !-~\x80-\xff]*[!-~\x80-\xff])?)?")
# One we receive: anything but CR, LF and NUL (servers are lenient; so are we).
_RECEIVED_VALUE = re.compile(rb"[^\x00\r\n]*")
_TARGET = re.compile(rb"[^\x00-\x20\x7f]+")
_STATUS_LINE = re.compile(rb"HTTP/(\d)\.(\d) ([0-9]{3})(?: ([^\x00\r\n]*))?")
_HEADER_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([^\x00\r\n]*?)[ \t]*")
_CHUNK_SIZE = re.compile(rb"[ \t]*([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")
_CONTENT_LENGTH = re.compile(rb"[0-9]{1,18}")


# Header fields already checked: a client sends the same few again and again.
_checked: set[tuple[bytes, bytes]] = set()


def _check(field: tuple[bytes, bytes]) -> None:
    name, value = field
    if _TOKEN.fullmatch(name) is None:
        raise httpx2.LocalProtocolError(f"invalid header name {name!r}")
    if _FIELD_VALUE.fullmatch(value) is None:
        # The value itself stays out of the message: it may be a credential.
        raise httpx2.LocalProtocolError(
            f"Illegal header value for {name.decode('ascii')!r}: a control character, or"
            " whitespace at either end"
        )
    if len(_checked) > 512:
        _checked.clear()
    _checked.add(field)


def request_head(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]) -> bytearray:
    """The request line and header block, ending with the blank line."""
    if _TOKEN.fullmatch(method) is None:
        raise httpx2.LocalProtocolError(f"invalid request method {method!r}")
    if _TARGET.fullmatch(target) is None:
        raise httpx2.LocalProtocolError(f"invalid request target {target!r}")
    head = bytearray(method)
    head += b" "
    head += target
    head += b" HTTP/1.1\r\n"
    for field in headers:
        if field not in _checked:
            _check(field)
        name, value = field
        head += name
        head += b": "
        head += value
        head += b"\r\n"
    head += b"\r\n"
    return head


def find_head_end(buffer: bytes | bytearray, start: int = 0) -> int:
    """The index just past the blank line ending a head in `buffer`, or -1 if not there yet.

    Lines may end in CRLF or a bare LF (servers send both). `start` is where a previous
    search of the same, since grown, buffer stopped: the search resumes there.
    """
    start = max(start - 2, 0)
    while True:
        lf = buffer.find(b"\n", start)
        if lf < 0:
            return -1
        after = lf + 1
        if buffer[after : after + 1] == b"\n":
            return after + 1
        if buffer[after : after + 2] == b"\r\n":
            return after + 2
        start = after


def _tokens(value: bytes) -> list[bytes]:
    """The comma-separated tokens of a header value, lowercased."""
    return [t for t in (part.strip(b" \t").lower() for part in value.split(b",")) if t]


@dataclass(slots=True)
class ResponseHead:
    """A parsed status line and header block, with the fields that frame the message."""

    version: bytes  # b"HTTP/1.1" or b"HTTP/1.0"
    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]
    lengths: list[bytes]  # Content-Length values
    encodings: list[bytes]  # Transfer-Encoding tokens
    connection: list[bytes]  # Connection tokens

    @classmethod
    def of(
        cls, version: bytes, status: int, reason: bytes, headers: list[tuple[bytes, bytes]]
    ) -> ResponseHead:
        lengths: list[bytes] = []
        encodings: list[bytes] = []
        connection: list[bytes] = []
        for name, value in headers:
            if len(name) in (10, 14, 17):
                key = name.lower()
                if key == b"content-length":
                    lengths.append(value)
                elif key == b"transfer-encoding":
                    encodings += _tokens(value)
                elif key == b"connection":
                    connection += _tokens(value)
        return cls(version, status, reason, headers, lengths, encodings, connection)


def _lines(block: bytes) -> list[bytes]:
    if block.count(b"\n") == block.count(b"\r\n"):  # CRLF throughout, as servers mostly send
        return block.split(b"\r\n")
    lines = block.split(b"\n")
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _fields(lines: list[bytes], what: str) -> list[tuple[bytes, bytes]]:
    fields: list[tuple[bytes, bytes]] = []
    for line in lines:
        if not line:
            continue
        if line[0] in b" \t":  # obs-fold: a continuation of the previous field's value
            if not fields:
                raise httpx2.RemoteProtocolError(f"{what} starts with a continuation line")
            name, value = fields[-1]
            more = line.strip(b" \t")
            if _RECEIVED_VALUE.fullmatch(more) is None:
                raise httpx2.RemoteProtocolError(f"malformed {what} line {line[:80]!r}")
            fields[-1] = (name, value + b" " + more if value else more)
            continue
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            raise httpx2.RemoteProtocolError(f"malformed {what} line {line[:80]!r}")
        fields.append((match[1], match[2]))
    return fields


def parse_head(head: bytes) -> ResponseHead:
    """The status line and headers of `head` (everything up to and including the blank line)."""
    lines = _lines(head)
    status = _STATUS_LINE.fullmatch(lines[0])
    if status is None:
        raise httpx2.RemoteProtocolError(f"malformed status line {lines[0][:80]!r}")
    if status[1] != b"1":
        raise httpx2.RemoteProtocolError(f"unsupported HTTP version in {lines[0][:80]!r}")
    version = b"HTTP/1." + status[2]
    fields = _fields(lines[1:], "header")
    return ResponseHead.of(version, int(status[3]), status[4] or b"", fields)


def parse_trailers(block: bytes) -> list[tuple[bytes, bytes]]:
    """The trailer fields of a chunked body (`block`: everything after the last chunk)."""
    return _fields(_lines(block), "trailer")


def chunk_size(line: bytes) -> int:
    """The size on one chunk-size line (without its line ending); extensions are ignored."""
    match = _CHUNK_SIZE.fullmatch(line)
    if match is None:
        raise httpx2.RemoteProtocolError(f"malformed chunk size line {line[:80]!r}")
    return int(match[1], 16)


@dataclass(frozen=True, slots=True)
class Framing:
    """How a response body is delimited."""

    kind: str  # "none", "length", "chunked" or "close" (read until the server closes)
    length: int = 0


_NO_BODY = Framing("none")
_CHUNKED = Framing("chunked")
_UNTIL_CLOSE = Framing("close")


def framing(method: bytes, head: ResponseHead) -> Framing:
    """The body framing of a response to `method`, from its status and headers."""
    status = head.status
    if method == b"HEAD" or status < 200 or status in (204, 304):
        return _NO_BODY
    encodings = head.encodings
    if encodings:
        # Transfer-Encoding overrides Content-Length; without chunked last, the body runs
        # until the server closes the connection.
        return _CHUNKED if encodings[-1] == b"chunked" else _UNTIL_CLOSE
    if not head.lengths:
        return _UNTIL_CLOSE
    values = {part.strip(b" \t") for value in head.lengths for part in value.split(b",")}
    if len(values) != 1:
        raise httpx2.RemoteProtocolError("conflicting Content-Length headers")
    (value,) = values
    if _CONTENT_LENGTH.fullmatch(value) is None:
        raise httpx2.RemoteProtocolError(f"invalid Content-Length {value[:40]!r}")
    length = int(value)
    return Framing("length", length) if length else _NO_BODY


def request_framing(headers: list[tuple[bytes, bytes]]) -> tuple[bool, int | None, bool]:
    """From request headers: whether the body is chunked, its Content-Length if given, and
    whether the request asks for the connection to close after it."""
    chunked = False
    length: int | None = None
    close = False
    for name, value in headers:
        if len(name) in (10, 14, 17):
            key = name.lower()
            if key == b"content-length":
                if _CONTENT_LENGTH.fullmatch(value.strip(b" \t")) is None:
                    raise httpx2.LocalProtocolError(f"invalid Content-Length {value[:40]!r}")
                length = int(value)
            elif key == b"transfer-encoding":
                chunked = _tokens(value)[-1:] == [b"chunked"]
            elif key == b"connection":
                close = close or b"close" in _tokens(value)
    return chunked, length, close


def keeps_alive(head: ResponseHead) -> bool:
    """Whether the server will take another request on this connection after this response."""
    connection = head.connection
    if b"close" in connection:
        return False
    if head.version == b"HTTP/1.0":
        return b"keep-alive" in connection
    return True
