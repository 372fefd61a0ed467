"""The whole assembly order (core.md §6.2) with every source real at once.

Two stdio MCP servers (one name collides with the other's after `sanitize`), a skills folder,
the built-ins (one shadowed by a host tool, one turned off by the config file), two A2A agents
(one given, one from the config's `agents` block) and host tools, plus `disable_tools` across
sources.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from support.a2a_peer import Peer
from support.asgi_server import running
from support.mcp_servers import SLOW_START, command
from toolnexus import Tool, Toolkit, agent, create_toolkit

EXAMPLE_SKILL = Path(__file__).resolve().parents[2] / "examples" / "skills" / "hello-world"
CARD = "/.well-known/agent-card.json"


def host_tool(name: str) -> Tool:
    return Tool(name, f"host {name}", None, "custom", lambda args, ctx: f"host {name}")


def suffix(original: str) -> str:
    return hashlib.sha256(original.encode()).hexdigest()[:8]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def assembled(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[Toolkit, list[str]]]:
    root = tmp_path_factory.mktemp("assembly")
    shutil.copytree(EXAMPLE_SKILL, root / "skills" / "hello-world")
    given, configured = Peer(name="Given"), Peer(name="Peer Agent!")
    async with running(given.app) as given_url, running(configured.app) as configured_url:
        config = root / "mcp.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "s.v": {"command": command(SLOW_START, "--tools", "2")},
                        "s_v": {"command": command(SLOW_START)},
                        "off": {"command": "never-run", "disabled": True},
                    },
                    "builtins": {"tools": {"webfetch": False}},
                    "agents": {"peer": {"card": configured_url + CARD, "pollEvery": 10}},
                }
            )
        )
        records: list[logging.LogRecord] = []
        handler = logging.Handler()
        handler.emit = records.append  # type: ignore[method-assign]
        logger = logging.getLogger("toolnexus")
        logger.addHandler(handler)
        try:
            tk = await create_toolkit(
                mcp_config=str(config),
                skills_dir=str(root / "skills"),
                agents=[agent(given_url + CARD, poll_every=10)],
                extra_tools=[
                    host_tool("bash"),  # shadows the built-in
                    host_tool("skill"),  # the skill source was first
                    host_tool("Given_plain"),  # the agent was first
                    host_tool("mine"),
                    host_tool("gone"),
                ],
                disable_tools=["s_v_ping1", "glob", "Given_named_only", "gone", "not-a-tool"],
            )
        finally:
            logger.removeHandler(handler)
        async with tk:
            yield tk, [r.getMessage() for r in records]


async def test_every_source_in_contract_order(assembled: tuple[Toolkit, list[str]]) -> None:
    tk, _ = assembled
    renamed = f"s_v_ping0_{suffix('s_v_ping0')}"
    assert [(t.name, t.source) for t in tk.tools()] == [
        # MCP: servers in config order, each server's tools in listing order
        ("s_v_ping0", "mcp"),
        (renamed, "mcp"),
        # the skill tool
        ("skill", "skill"),
        # built-ins in their fixed order, minus the shadowed, the switched-off and the disabled
        ("read", "builtin"),
        ("write", "builtin"),
        ("edit", "builtin"),
        ("grep", "builtin"),
        ("question", "builtin"),
        ("apply_patch", "builtin"),
        ("todowrite", "builtin"),
        # A2A: the given agents, then the config block; skills in card order
        ("Given_do_it", "a2a"),
        ("Given_plain", "a2a"),
        ("Peer_Agent__do_it", "a2a"),
        ("Peer_Agent__plain", "a2a"),
        ("Peer_Agent__named_only", "a2a"),
        # host tools, in the given order
        ("bash", "custom"),
        ("mine", "custom"),
    ]
    assert tk.mcp_status() == {"s.v": "connected", "s_v": "connected", "off": "disabled"}
    assert tk.mcp_servers()["s.v"].tool_count == 2  # s_v_ping1 exists, disable_tools hid it


async def test_duplicates_and_collisions_are_logged(assembled: tuple[Toolkit, list[str]]) -> None:
    _, logged = assembled
    renamed = f"s_v_ping0_{suffix('s_v_ping0')}"
    assert '[toolnexus] duplicate tool name "skill" — keeping first' in logged
    assert '[toolnexus] duplicate tool name "Given_plain" — keeping first' in logged
    assert (
        f'[toolnexus] tool "s_v_ping0" collides with "s.v_ping0" as "s_v_ping0" — exposed as '
        f'"{renamed}"'
    ) in logged
    assert not any("bash" in m for m in logged)  # shadowing a built-in is not a duplicate


async def test_each_name_routes_to_its_own_source(assembled: tuple[Toolkit, list[str]]) -> None:
    tk, _ = assembled
    renamed = f"s_v_ping0_{suffix('s_v_ping0')}"
    assert (await tk.execute(renamed)).output == "pong"
    assert ((await tk.execute("s_v_ping0")).metadata or {})["server"] == "s.v"
    assert ((await tk.execute(renamed)).metadata or {})["server"] == "s_v"
    loaded = await tk.execute("skill", {"name": "hello-world"})
    assert loaded.output.startswith('<skill_content name="hello-world">')
    assert (await tk.execute("bash", {"command": "echo hi"})).output == "host bash"
    assert (await tk.execute("Given_plain", {"task": "immediate"})).is_error is False
    for gone in ("s_v_ping1", "glob", "webfetch", "Given_named_only", "gone"):
        assert (await tk.execute(gone)).output.startswith(f"Unknown tool: {gone}")
