"""HTTP/1.1 message syntax for a client: the request head out, the response head and framing in.

Pure functions over bytes, no I/O: `_connection.py` feeds them what the socket delivers. A
response that breaks the syntax raises `httpx2.RemoteProtocolError`; a request whose method,
target or headers could smuggle a line break raises `httpx2.LocalProtocolError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

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


# What a header field means for the message's framing.
_ORDINARY, _LENGTH, _ENCODING, _CONNECTION = 0, 1, 2, 3
_FRAMING_FIELDS = {
    b"content-length": _LENGTH,
    b"transfer-encoding": _ENCODING,
    b"connection": _CONNECTION,
}
# Entries in each cache of already parsed or checked input below, at most (then it starts over).
_CACHED = 512


def _framing_kind(name: bytes) -> int:
    return _FRAMING_FIELDS.get(name.lower(), _ORDINARY) if len(name) in (10, 14, 17) else _ORDINARY


def _check(name: bytes, value: bytes) -> None:
    if _TOKEN.fullmatch(name) is None:
        raise httpx2.LocalProtocolError(f"invalid header name {name!r}")
    if _FIELD_VALUE.fullmatch(value) is None:
        # The value itself stays out of the message: it may be a credential.
        raise httpx2.LocalProtocolError(
            f"Illegal header value for {name.decode('ascii')!r}: a control character, or"
            " whitespace at either end"
        )


# A checked request head without its blank line: the request line and header block, whether
# the body is chunked, its Content-Length if given, whether the connection closes after it.
_Head = tuple[bytes, bool, int | None, bool]
# Heads already checked, by method, target and header fields: a client sends the same few
# again and again (the body's size, which varies, is best left to `request_head` to add).
_sent_heads: dict[tuple[object, ...], _Head] = {}


def _checked_head(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]) -> _Head:
    if _TOKEN.fullmatch(method) is None:
        raise httpx2.LocalProtocolError(f"invalid request method {method!r}")
    if _TARGET.fullmatch(target) is None:
        raise httpx2.LocalProtocolError(f"invalid request target {target!r}")
    head = bytearray(method)
    head += b" "
    head += target
    head += b" HTTP/1.1\r\n"
    chunked = close = False
    length: int | None = None
    for name, value in headers:
        _check(name, value)
        kind = _framing_kind(name)
        if kind == _LENGTH:
            if _CONTENT_LENGTH.fullmatch(value) is None:
                raise httpx2.LocalProtocolError(f"invalid Content-Length {value[:40]!r}")
            length = int(value)
        elif kind == _ENCODING:
            chunked = _tokens(value)[-1:] == [b"chunked"]
        elif kind == _CONNECTION:
            close = close or b"close" in _tokens(value)
        head += name
        head += b": "
        head += value
        head += b"\r\n"
    return bytes(head), chunked, length, close


def request_head(
    method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body_size: int | None = 0
) -> tuple[bytes, bool, int | None, bool]:
    """The request head for `headers`, checked, and how the body after it is framed: the head
    (ending with its blank line), whether the body is chunked, its Content-Length if the
    headers give one, and whether the request asks for the connection to close after it.

    `body_size` is the size of a body sent whole, or None for a streamed one: when the headers
    frame the body neither by length nor by chunks, a whole body gets a Content-Length (if it
    is not empty) and a streamed one `Transfer-Encoding: chunked`.
    """
    key = (method, target, *headers)
    known = _sent_heads.get(key)
    if known is None:
        known = _checked_head(method, target, headers)
        if len(_sent_heads) >= _CACHED:
            _sent_heads.clear()
        _sent_heads[key] = known
    head, chunked, length, close = known
    if length is None and not chunked:
        if body_size is None:
            return head + b"Transfer-Encoding: chunked\r\n\r\n", True, None, close
        if body_size:
            return head + b"Content-Length: %d\r\n\r\n" % body_size, False, None, close
    return head + b"\r\n", chunked, length, close


def find_head_end(buffer: bytes | bytearray, start: int = 0) -> int:
    """The index just past the blank line ending a head in `buffer`, or -1 if not there yet.

    Lines may end in CRLF or a bare LF (servers send both). `start` is where a previous
    search of the same, since grown, buffer stopped: the search resumes there.
    """
    start = max(start - 2, 0)
    # The first LF followed by CRLF or by LF ends the head (two searches in C, no loop here).
    crlf = buffer.find(b"\n\r\n", start)
    lf = buffer.find(b"\n\n", start)
    if crlf < 0:
        return -1 if lf < 0 else lf + 2
    if lf < 0 or crlf < lf:
        return crlf + 3
    return lf + 2


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


def _lines(block: bytes) -> list[bytes]:
    if block.count(b"\n") == block.count(b"\r\n"):  # CRLF throughout, as servers mostly send
        return block.split(b"\r\n")
    lines = block.split(b"\n")
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


# Header lines already parsed, with their field and its framing kind: a server sends most of
# its lines (Content-Type, Server, Connection, ...) the same in every response.
_received_lines: dict[bytes, tuple[tuple[bytes, bytes], int]] = {}


def _field_line(line: bytes, what: str) -> tuple[tuple[bytes, bytes], int]:
    match = _HEADER_LINE.fullmatch(line)
    if match is None:
        raise httpx2.RemoteProtocolError(f"malformed {what} line {line[:80]!r}")
    name = match[1]
    kind = _framing_kind(name)
    if len(_received_lines) >= _CACHED:
        _received_lines.clear()
    known = _received_lines[line] = ((name, match[2]), kind)
    return known


def _fields(lines: list[bytes], what: str) -> tuple[list[tuple[bytes, bytes]], list[int]]:
    """The fields of `lines` and, in order, the indexes of those that frame the message."""
    fields: list[tuple[bytes, bytes]] = []
    framed: list[int] = []
    known_lines = _received_lines
    for line in lines:
        known = known_lines.get(line)
        if known is not None:
            field, kind = known
            if kind:
                framed.append(len(fields))
            fields.append(field)
            continue
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
        field, kind = _field_line(line, what)
        if kind:
            framed.append(len(fields))
        fields.append(field)
    return fields, framed


_status_lines: dict[bytes, tuple[bytes, int, bytes]] = {}


def _status_line(line: bytes) -> tuple[bytes, int, bytes]:
    known = _status_lines.get(line)
    if known is not None:
        return known
    status = _STATUS_LINE.fullmatch(line)
    if status is None:
        raise httpx2.RemoteProtocolError(f"malformed status line {line[:80]!r}")
    if status[1] != b"1":
        raise httpx2.RemoteProtocolError(f"unsupported HTTP version in {line[:80]!r}")
    if len(_status_lines) >= _CACHED:
        _status_lines.clear()
    known = _status_lines[line] = (b"HTTP/1." + status[2], int(status[3]), status[4] or b"")
    return known


def parse_head(head: bytes) -> ResponseHead:
    """The status line and headers of `head` (everything up to and including the blank line)."""
    lines = _lines(head)
    version, status, reason = _status_line(lines[0])
    del lines[0]
    fields, framed = _fields(lines, "header")
    lengths: list[bytes] = []
    encodings: list[bytes] = []
    connection: list[bytes] = []
    for index in framed:
        name, value = fields[index]  # a folded value as joined
        key = name.lower()
        if key == b"content-length":
            lengths.append(value)
        elif key == b"transfer-encoding":
            encodings += _tokens(value)
        else:
            connection += _tokens(value)
    return ResponseHead(version, status, reason, fields, lengths, encodings, connection)


def parse_trailers(block: bytes) -> list[tuple[bytes, bytes]]:
    """The trailer fields of a chunked body (`block`: everything after the last chunk)."""
    return _fields(_lines(block), "trailer")[0]


def chunk_size(line: bytes) -> int:
    """The size on one chunk-size line (without its line ending); extensions are ignored."""
    match = _CHUNK_SIZE.fullmatch(line)
    if match is None:
        raise httpx2.RemoteProtocolError(f"malformed chunk size line {line[:80]!r}")
    return int(match[1], 16)


class Framing(NamedTuple):
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
    lengths = head.lengths
    if not lengths:
        return _UNTIL_CLOSE
    if len(lengths) == 1 and lengths[0].isdigit() and len(lengths[0]) <= 18:  # the usual case
        length = int(lengths[0])
        return Framing("length", length) if length else _NO_BODY
    values = {part.strip(b" \t") for value in head.lengths for part in value.split(b",")}
    if len(values) != 1:
        raise httpx2.RemoteProtocolError("conflicting Content-Length headers")
    (value,) = values
    if _CONTENT_LENGTH.fullmatch(value) is None:
        raise httpx2.RemoteProtocolError(f"invalid Content-Length {value[:40]!r}")
    length = int(value)
    return Framing("length", length) if length else _NO_BODY


def keeps_alive(head: ResponseHead) -> bool:
    """Whether the server will take another request on this connection after this response."""
    connection = head.connection
    if b"close" in connection:
        return False
    if head.version == b"HTTP/1.0":
        return b"keep-alive" in connection
    return True
