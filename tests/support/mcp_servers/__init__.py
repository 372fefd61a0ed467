"""MCP test servers (standalone scripts) and small helpers to start them.

- `basic_server.py`: the official SDK's `MCPServer` with a tool for every behaviour under test;
  stdio by default, `--http 0` (streamable HTTP), `--sse 0` (legacy SSE only), `--token T`.
- `paged_server.py`: the SDK's low-level `Server` with a paginated tool list.
- `sdk_eras.py`: the SDK's `MCPServer` in either protocol era or both (`--era`), over stdio or
  `--http 0`, with input-request, progress, logging, resource, prompt and fidelity tools.
- `slow_start_stdio.py`: stdlib-only, starts in milliseconds: start delays, hangs, odd tool
  listings and process life-cycle tools, for tests that need a process but not the SDK.

Each runs as `python <script> [args]`; see the script docstrings.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
BASIC = HERE / "basic_server.py"
PAGED = HERE / "paged_server.py"
SLOW_START = HERE / "slow_start_stdio.py"
ERAS = HERE / "sdk_eras.py"


def command(script: Path, *args: str) -> list[str]:
    """The argv that runs `script` with this interpreter."""
    return [sys.executable, str(script), *args]


class ThreadedHttpServer:
    """An ASGI app served by uvicorn on 127.0.0.1 (ephemeral port) in a daemon thread.

    Cheaper than a child process when the test process has the SDK imported already.
    """

    def __init__(self, app: Any, port: int = 0) -> None:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self.port: int = sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[sock])),
            name=f"mcp-test-http-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("threaded MCP test server did not start")
            time.sleep(0.01)

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        """Stop at once: open event streams are cut, not waited for."""
        self._server.should_exit = True
        self._server.force_exit = True
        self._thread.join(timeout=10)


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def descendants(pid: int) -> list[int]:
    """Live descendants of `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                ppid = int(fh.read().rpartition(b")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    stack = list(children.get(pid, ()))
    while stack:
        child = stack.pop()
        if alive(child):
            found.append(child)
        stack.extend(children.get(child, ()))
    return found
