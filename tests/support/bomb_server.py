"""A real HTTP server (Starlette + Uvicorn in a thread) whose every answer is a gzip bomb: about
255 KB on the wire that inflates to 256 MiB, generated here when the server starts (never kept
in the repository).

`GET|POST /json/...` answers `Content-Type: application/json`, `/sse/...` answers
`text/event-stream` whose one event never ends (`data: xxxx…`). Whatever the request, the
answer is the bomb: an HTTP tool, an OpenAPI spec URL, an A2A agent card, an MCP server's
reply and a model reply all meet it. `/card/...` is a plain A2A agent card whose JSON-RPC
endpoint is `/json/rpc`: the agent's answer is the bomb.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp

from support.local_http import ServerThread

INFLATED_BYTES = 256 * 1024 * 1024
_STEP = 1024 * 1024


def gzip_bomb(first: bytes) -> list[bytes]:
    """The gzip pieces of `first` followed by `x` up to `INFLATED_BYTES` in all.

    Made in a fraction of a second: once the compressor's window is all `x`, each further MiB
    of `x` compresses (with a sync flush) to the same bytes, so that piece is repeated.
    """
    filler = b"x" * _STEP
    start = first + filler[len(first) :]
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    opening = packer.compress(start) + packer.flush(zlib.Z_SYNC_FLUSH)
    repeated = packer.compress(filler) + packer.flush(zlib.Z_SYNC_FLUSH)
    ending = packer.flush()
    count = INFLATED_BYTES // _STEP - 1
    crc = zlib.crc32(start)
    for _ in range(count):
        crc = zlib.crc32(filler, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc, INFLATED_BYTES & 0xFFFFFFFF)
    return [header, opening, *([repeated] * count), ending, trailer]


def _app() -> ASGIApp:
    bombs = {
        "json": (gzip_bomb(b'{"x":"'), "application/json"),
        "sse": (gzip_bomb(b"event: message\ndata: "), "text/event-stream"),
    }

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        request = Request(scope, receive)  # type: ignore[arg-type]
        await request.body()
        kind = request.url.path.strip("/").split("/", 1)[0]
        response: Response
        if kind == "card":  # a plain A2A 0.3 agent card whose endpoint answers with the bomb
            base = str(request.base_url).rstrip("/")
            response = JSONResponse(
                {
                    "name": "bomb",
                    "description": "answers with a gzip bomb",
                    "url": f"{base}/json/rpc",
                    "protocolVersion": "0.3.0",
                    "version": "1",
                    "capabilities": {},
                    "defaultInputModes": ["text/plain"],
                    "defaultOutputModes": ["text/plain"],
                    "skills": [{"id": "s", "name": "s", "description": "d", "tags": []}],
                }
            )
        elif kind not in bombs:
            response = Response("no such bomb", status_code=404)
        else:
            pieces, media_type = bombs[kind]

            async def body() -> AsyncIterator[bytes]:
                for piece in pieces:
                    yield piece

            response = StreamingResponse(
                body(), media_type=media_type, headers={"Content-Encoding": "gzip"}
            )
        await response(scope, receive, send)  # type: ignore[arg-type]

    return app  # type: ignore[return-value]


@contextmanager
def bomb_server() -> Iterator[str]:
    """Serve the bombs; yield the base URL."""
    server = ServerThread(_app())
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
