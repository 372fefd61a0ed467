"""Helpers of the hardening tests: a toolkit served with both profiles on 127.0.0.1, raw-socket
exchanges, and small stdlib HTTP servers playing hostile peers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolnexus.client import create_in_process_client
from toolnexus.serve import ServeHandle, ServeLimits
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool


async def answer(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "done"}


def make_toolkit() -> Toolkit:
    def echo(args: dict[str, Any], ctx: Any) -> str:
        return str(args.get("text"))

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return Toolkit(builtins=False, extra_tools=[Tool("echo", "Echo", schema, "native", echo)])


async def serve_both(
    toolkit: Toolkit, limits: ServeLimits | None = None, auth_token: str | None = None
) -> ServeHandle:
    client = create_in_process_client(model="scripted", generate=answer)
    return await toolkit.serve(
        "127.0.0.1:0",
        client=client,
        a2a={"name": "hardened"},
        mcp={},
        auth_token=auth_token,
        limits=limits,
    )


async def raw_exchange(port: int, data: bytes, *, timeout: float = 15.0) -> bytes:
    """Send `data` on a fresh connection and read until the server closes it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(-1), timeout)
    finally:
        writer.close()


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else 0


class QuietHandler(BaseHTTPRequestHandler):
    """A stdlib request handler that answers with `reply(status, content_type, body)`."""

    protocol_version = "HTTP/1.1"

    def reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def threaded_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A stdlib HTTP server on 127.0.0.1 in a daemon thread; yields its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


class ServedInThread:
    """`serve_both` on a loop of its own in a daemon thread, for synchronous tests (hypothesis)
    that block the calling thread between requests."""

    def __init__(self, limits: ServeLimits | None = None) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._toolkit = make_toolkit()
        self.handle = asyncio.run_coroutine_threadsafe(
            serve_both(self._toolkit, limits), self._loop
        ).result(30)
        self.url = self.handle.url

    def close(self) -> None:
        async def stop() -> None:
            await self.handle.stop()
            await self._toolkit.close()
            leftovers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in leftovers:
                task.cancel()
            await asyncio.gather(*leftovers, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


class EchoingHandler(QuietHandler):
    """A hostile endpoint: every answer is an error whose body repeats the URL and every request
    header (`401` when the path holds `401`, else `500`; a stream path gets the error as an SSE
    event)."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        echo = f"{self.path} " + " ".join(f"{k}={v}" for k, v in self.headers.items())
        error = {"error": {"message": "denied for " + echo}}
        if self.path.endswith("/stream/chat/completions"):
            self.reply(200, "text/event-stream", f"data: {json.dumps(error)}\n\n".encode())
        else:
            body = json.dumps(error).encode()
            self.reply(401 if "401" in self.path else 500, "application/json", body)

    do_GET = do_POST = do_DELETE = _answer
