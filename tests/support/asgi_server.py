"""Run any ASGI app on a real 127.0.0.1 port inside the running event loop (tests only)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import uvicorn


class _Quiet(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def running(app: Any) -> AsyncIterator[str]:
    """Serve `app` on an ephemeral port; yield its base URL (`http://127.0.0.1:<port>`)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = _Quiet(
        uvicorn.Config(app, log_config=None, access_log=False, lifespan="off", ws="none")
    )
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        deadline = asyncio.get_running_loop().time() + 10
        while not server.started:
            if task.done() or asyncio.get_running_loop().time() > deadline:
                raise RuntimeError("test server did not start")
            await asyncio.sleep(0.005)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
