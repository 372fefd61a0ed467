"""MCP through `create_toolkit(mcp_config=...)`: status, server states, order, execute, refresh."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from support.mcp_servers import BASIC, SLOW_START, ThreadedHttpServer, command
from toolnexus import Toolkit, create_toolkit, create_toolkit_sync
from toolnexus.mcp_source import McpServerState


@pytest.fixture(scope="module")
async def toolkit(
    http_servers: dict[str, ThreadedHttpServer], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Toolkit]:
    path = tmp_path_factory.mktemp("tk") / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {"command": command(BASIC)},
                    "web.search": {
                        "url": http_servers["http"].url(),
                        "tools": {"echo": True, "add": True, "ghost": True},
                    },
                    "off": {"command": "never-run", "enabled": False},
                    "broken": {"command": 5},
                },
                "builtins": {"tools": {"bash": False}},
            }
        )
    )
    tk = await create_toolkit(mcp_config=str(path), disable_tools=["local_pid"])
    yield tk
    await tk.close()


async def test_status_and_server_states(toolkit: Toolkit) -> None:
    assert toolkit.mcp_status() == {
        "local": "connected",
        "web.search": "connected",
        "off": "disabled",
        "broken": "failed",
    }
    servers = toolkit.mcp_servers()
    web = servers["web.search"]
    assert (web.status, web.error, web.transport, web.tool_count) == (
        "connected",
        None,
        "streamable-http",
        2,
    )
    assert web.protocol == "2026-07-28"
    assert servers["broken"] == McpServerState(
        "failed", '"command" must be a list of strings or a string, not 5', None, 0
    )
    assert servers["local"].transport == "stdio"


async def test_mcp_tools_come_first_in_config_order(toolkit: Toolkit) -> None:
    names = [t.name for t in toolkit.tools()]
    first_non_mcp = next(i for i, t in enumerate(toolkit.tools()) if t.source != "mcp")
    mcp_names = names[:first_non_mcp]
    assert mcp_names[0] == "local_echo"
    # allowlist, listing order; then the resource reader the servers share
    assert mcp_names[-3:] == ["web_search_echo", "web_search_add", "mcp_read_resource"]
    assert "local_pid" not in names  # disable_tools applies to final names
    assert "bash" not in names and "read" in names  # the sibling `builtins` block was honoured
    assert not any(n.startswith(("off_", "broken_", "builtins_")) for n in names)
    web = toolkit.get("web_search_echo")
    assert web is not None and web.original_name == "web.search_echo"


async def test_execute_through_the_toolkit(toolkit: Toolkit) -> None:
    result = await toolkit.execute("web_search_add", {"a": 20, "b": 22})
    assert (result.output, result.is_error) == ("42", False)
    assert result.metadata is not None
    assert (result.metadata["server"], result.metadata["structured"]) == (
        "web.search",
        {"sum": 42, "ok": "é"},
    )
    image = await toolkit.execute("local_image", {})
    assert image.output.endswith("[image: image/png, 48213 bytes]")


async def test_arguments_are_checked_against_the_server_schema(toolkit: Toolkit) -> None:
    result = await toolkit.execute("local_echo", {"text": 5})
    assert result.is_error is True
    assert "text" in result.output and (result.metadata or {}).get("server") is None


async def test_list_changed_refreshes_the_toolkit(toolkit: Toolkit) -> None:
    assert toolkit.get("local_fresh") is None
    declared = len(toolkit.to_openai())
    result = await toolkit.execute("local_add_tool", {"name": "fresh"})
    assert result.output == "added fresh"
    deadline = time.monotonic() + 10
    while toolkit.get("local_fresh") is None:
        assert time.monotonic() < deadline, "tools/list_changed did not refresh the toolkit"
        await asyncio.sleep(0.01)
    assert (await toolkit.execute("local_fresh", {})).output == "I am fresh"
    names = [t.name for t in toolkit.tools()]
    # still among the MCP tools (first, server by server), not appended after the others
    assert names.index("local_fresh") < names.index("web_search_echo")
    assert len(toolkit.to_openai()) == declared + 1
    assert (
        toolkit.mcp_servers()["local"].tool_count
        == len([t for t in toolkit.tools() if t.name.startswith("local_")]) + 1
    )  # + local_pid, dropped by disable_tools


async def test_cancel_aborts_create_toolkit(tmp_path: Path) -> None:
    cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, cancel.set)
    with pytest.raises(asyncio.CancelledError):
        await create_toolkit(
            mcp_config={"slow": {"command": command(SLOW_START, "--delay", "60")}}, cancel=cancel
        )


async def test_a_toolkit_without_mcp_config_has_no_mcp_state() -> None:
    tk = await create_toolkit(builtins=False)
    assert (tk.mcp_status(), tk.mcp_servers(), tk.tools()) == ({}, {}, [])
    await tk.close()


def test_a_sync_toolkit_runs_and_closes_its_servers() -> None:
    tk = create_toolkit_sync(
        mcp_config={"pinger": {"command": command(SLOW_START)}}, builtins=False
    )
    try:
        assert tk.mcp_status() == {"pinger": "connected"}
        assert tk.execute_sync("pinger_ping0").output == "pong"
        server = tk.mcp_servers()["pinger"]
        assert (server.transport, server.tool_count) == ("stdio", 1)
    finally:
        tk.close_sync()
    assert tk.execute_sync("pinger_ping0").output == 'MCP server "pinger" is closed'
