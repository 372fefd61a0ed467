"""Life cycle: close kills process trees (checked in /proc), whole-load cancellation, inventory."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from support.mcp_servers import SLOW_START, ThreadedHttpServer, alive, command, descendants
from toolnexus.mcp_source import (
    McpSource,
    ToolInfo,
    list_mcp_tools,
    load_mcp,
    load_mcp_with_context,
)


def children() -> set[int]:
    return set(descendants(os.getpid()))


async def wait_until_spawned(known: set[int], count: int) -> set[int]:
    deadline = time.monotonic() + 30
    while len(fresh := children() - known) < count:
        assert time.monotonic() < deadline, "servers were not spawned"
        await asyncio.sleep(0.01)
    return fresh


def tool(source: McpSource, name: str):  # type: ignore[no-untyped-def]
    return next(t for t in source.tools if t.name == name)


async def test_close_from_another_task_kills_the_whole_tree() -> None:
    before = children()
    source = await load_mcp({"srv": {"command": command(SLOW_START, "--life-tools")}})
    server_pid = int((await tool(source, "srv_pid").execute()).output)
    in_group = int((await tool(source, "srv_spawn_child").execute()).output)
    detached = int((await tool(source, "srv_spawn_child").execute({"detach": True})).output)
    assert alive(server_pid) and alive(in_group) and alive(detached)
    assert {server_pid, in_group, detached} <= children() - before

    await asyncio.create_task(source.close())  # not the task that loaded it

    assert not alive(server_pid)
    assert not alive(in_group)
    assert not alive(detached)
    assert not children() - before
    await source.close()  # idempotent
    assert source.status == {"srv": "connected"}  # status describes the load, not the close
    result = await tool(source, "srv_echo").execute({"text": "late"})
    assert (result.output, result.is_error) == ('MCP server "srv" is closed', True)


def resident_mib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            line = next(line for line in fh if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0
    return int(line.split()[1]) >> 10


async def test_close_returns_only_once_an_exiting_member_is_gone() -> None:
    """A killed process releases its memory, environment included, before it is gone; the
    larger it is, the longer it still runs with an environment that reads empty. Close waits
    for it all the same."""
    source = await load_mcp({"srv": {"command": command(SLOW_START, "--life-tools")}})
    spawn = tool(source, "srv_spawn_child")
    big = [int((await spawn.execute({"detach": True, "hold_mb": 256})).output) for _ in range(2)]
    deadline = time.monotonic() + 30
    while not all(resident_mib(pid) >= 256 for pid in big):
        assert time.monotonic() < deadline, "the grandchildren never filled their memory"
        await asyncio.sleep(0.01)

    await source.close()

    assert not any(alive(pid) for pid in big)


async def test_close_during_a_call_ends_the_call(
    http_servers: dict[str, ThreadedHttpServer],
) -> None:
    source = await load_mcp({"r": {"url": http_servers["http"].url()}})
    call = asyncio.create_task(tool(source, "r_slow").execute({"seconds": 30}))
    await asyncio.sleep(0.1)  # let the request go out (the outcome is the same either way)
    await source.close()
    result = await asyncio.wait_for(call, 10)
    assert result.is_error is True
    assert result.output in (
        'MCP server "r" was closed during the call',
        'MCP server "r" is closed',
    )


async def test_cancel_before_the_load_starts_nothing() -> None:
    before = children()
    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(asyncio.CancelledError):
        await load_mcp_with_context({"a": {"command": command(SLOW_START)}}, cancel=cancel)
    assert not children() - before


async def test_cancel_during_the_load_closes_everything() -> None:
    before = children()
    cancel = asyncio.Event()
    config = {
        "quick": {"command": command(SLOW_START)},
        "slow1": {"command": command(SLOW_START, "--delay", "60")},
        "slow2": {"command": command(SLOW_START, "--delay", "60")},
    }
    load = asyncio.create_task(load_mcp_with_context(config, cancel=cancel))
    spawned = await wait_until_spawned(before, 3)
    cancel.set()
    with pytest.raises(asyncio.CancelledError):
        await load
    assert not any(alive(pid) for pid in spawned)
    assert not children() - before


async def test_cancelling_the_loading_task_closes_everything() -> None:
    before = children()
    load = asyncio.create_task(
        load_mcp({"slow": {"command": command(SLOW_START, "--delay", "60")}})
    )
    spawned = await wait_until_spawned(before, 1)
    load.cancel()
    with pytest.raises(asyncio.CancelledError):
        await load
    assert not any(alive(pid) for pid in spawned)


async def test_inventory_lists_unfiltered_and_leaves_nothing_running(
    http_servers: dict[str, ThreadedHttpServer], caplog: pytest.LogCaptureFixture
) -> None:
    before = children()
    inventory = await list_mcp_tools(
        {
            "mcpServers": {
                "remote": {"url": http_servers["http"].url(), "tools": {"echo": True}},
                "local": {
                    "command": command(SLOW_START, "--tools", "2"),
                    "tools": {"ping0": False},
                },
                "off": {"url": "http://127.0.0.1:1/mcp", "enabled": False},
                "bad": {"command": 5},
                "odd": {"command": command(SLOW_START, "--odd-schemas")},
            }
        }
    )
    assert inventory.status == {
        "remote": "connected",
        "local": "connected",
        "off": "disabled",
        "bad": "failed",
        "odd": "connected",
    }
    assert list(inventory.tools) == ["remote", "local", "odd"]
    schema = {"type": "object", "properties": {}}
    assert inventory.tools["local"] == [
        ToolInfo("ping0", "Answer pong.", schema),
        ToolInfo("ping1", "Answer pong.", schema),
    ]
    odd = {t.name: t for t in inventory.tools["odd"]}
    assert odd["bare"] == ToolInfo("bare", "", schema)
    assert odd["typeless"].input_schema == {"properties": {"q": {"type": "string"}}}
    assert (
        '[toolnexus] MCP server "odd" tool "not_a_schema": inputSchema is not a JSON object; '
        'using {"type":"object","properties":{}}' in caplog.text
    )
    remote = {t.name: t for t in inventory.tools["remote"]}
    assert len(remote) > 10 and "echo" in remote and "add" in remote  # filter not applied
    assert remote["echo"].description == "Echo the text back."
    assert remote["echo"].input_schema["required"] == ["text"]
    assert not children() - before


COLD_CANCEL = """
import asyncio, os, sys, time
sys.path.insert(0, TESTS)
from support.mcp_servers import SLOW_START, alive, command, descendants
from toolnexus.mcp_source import load_mcp_with_context

async def main():
    cancel = asyncio.Event()
    marks = MARKS
    server = command(SLOW_START, "--barrier", marks, "--delay", "60")
    load = asyncio.create_task(load_mcp_with_context({"slow": {"command": server}}, cancel=cancel))
    deadline = time.monotonic() + 30
    while not os.listdir(marks):  # the child runs: its spawn is done, the load awaits the SDK
        assert time.monotonic() < deadline, "the server was not spawned"
        await asyncio.sleep(0.005)
    assert "mcp.client.session" not in sys.modules, "the SDK import was already done"
    spawned = descendants(os.getpid())
    cancel.set()
    try:
        await load
    except asyncio.CancelledError:
        print("cancelled", "alive" if any(alive(p) for p in spawned) else "none alive")

asyncio.run(main())
sys.stdout.flush()
os._exit(0)  # the SDK import thread may still be running
"""


async def test_cancel_while_the_sdk_is_still_importing_kills_the_spawned_child(
    tmp_path: Path,
) -> None:
    # Stdio children are spawned before the SDK import finishes; a fresh interpreter is the
    # only place where the load can be cancelled in between.
    code = COLD_CANCEL.replace("TESTS", repr(str(Path(__file__).parents[1]))).replace(
        "MARKS", repr(str(tmp_path))
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert (process.returncode, out.decode().strip()) == (0, "cancelled none alive")
