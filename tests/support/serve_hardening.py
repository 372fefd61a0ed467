"""A toolkit served with both profiles on 127.0.0.1, and raw-socket helpers, for the hardening
tests of the HTTP server."""

from __future__ import annotations

import asyncio
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
    return Toolkit(extra_tools=[Tool("echo", "Echo", schema, "native", echo)])


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
