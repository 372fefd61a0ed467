"""MCP Tasks as a client against FastMCP 4.1 with `fastmcp-tasks` (installed from PyPI into a
venv of its own, `.venv-fastmcp-tasks`: it pins `fastmcp-slim` and cannot share toolnexus's
env), its server run as a subprocess: a task-only tool completes, an optional one answers, and
a caller that avoids tasks is refused the task-only tool."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from support.db_servers import free_port
from support.polling import wait_until
from support.requires import missing
from toolnexus.mcp_source import McpSource, load_mcp_with_context

PYTHON = os.environ.get("TOOLNEXUS_FASTMCP_TASKS_PYTHON", "")
SERVER = Path(__file__).resolve().parents[1] / "support" / "fastmcp_tasks" / "server.py"
BOOT_S = 90.0  # importing FastMCP and docket on a loaded machine


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def fastmcp_url() -> Iterator[str]:
    if not PYTHON:
        missing(
            "FastMCP with fastmcp-tasks (TOOLNEXUS_FASTMCP_TASKS_PYTHON)",
            "make test builds .venv-fastmcp-tasks",
        )
    port = free_port()
    proc = subprocess.Popen(
        [PYTHON, str(SERVER), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=30)


@pytest.fixture
async def fastmcp(fastmcp_url: str) -> AsyncIterator[McpSource]:
    port = int(fastmcp_url.rsplit(":", 1)[1].split("/")[0])
    await wait_until(lambda: _listening(port), timeout=BOOT_S, check_every=0.1)
    source = await load_mcp_with_context({"f": {"url": fastmcp_url}})
    yield source
    await source.close()


async def test_a_fastmcp_task_only_tool_completes(fastmcp: McpSource) -> None:
    assert fastmcp.status == {"f": "connected"}
    tools = {t.name: t for t in fastmcp.tools}
    crunched = await tools["f_crunch"].execute({"n": 4})
    assert (crunched.output, crunched.is_error) == ("crunched 4", False)
    maybe = await tools["f_maybe"].execute({"text": "hi"})
    assert (maybe.output, maybe.is_error) == ("maybe hi", False)


async def test_avoiding_tasks_leaves_the_task_only_tool_refused(fastmcp_url: str) -> None:
    source = await load_mcp_with_context({"f": {"url": fastmcp_url, "tasks": "avoid"}})
    try:
        tools = {t.name: t for t in source.tools}
        refused = await tools["f_crunch"].execute({"n": 1})
        assert refused.is_error
        maybe = await tools["f_maybe"].execute({"text": "plain"})
        assert (maybe.output, maybe.is_error) == ("maybe plain", False)
    finally:
        await source.close()
