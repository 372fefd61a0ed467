"""`bash`: real subprocesses: output, exit codes, workdir/workspace, caps, timeout and cancel."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from support.builtin_tools import tools_for
from toolnexus.builtin import builtin_shell
from toolnexus.types import Tool, ToolContext

SHELL = " ".join(builtin_shell())  # what `metadata["shell"]` shows

DEADLINE = 10.0


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


async def all_gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        await asyncio.sleep(0.02)
    return False


async def read_pids(path: Path, count: int) -> list[int]:
    """Poll `path` until the command wrote `count` pids into it."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if path.exists():
            lines = path.read_text().split()
            if len(lines) >= count:
                return [int(x) for x in lines[:count]]
        await asyncio.sleep(0.02)
    raise AssertionError(f"the command never wrote {count} pids to {path}")


# Two background sleepers and the shell itself, all writing their pids to a file.
SPAWN = "sleep 300 & echo $! > {f}; sleep 300 & echo $! >> {f}; echo $$ >> {f}; wait"


@pytest.fixture
def bash(tools: dict[str, Tool]) -> Tool:
    return tools["bash"]


async def test_exit_zero_combined_output_in_order(bash: Tool) -> None:
    result = await bash.execute({"command": "echo one; echo two >&2; echo three"})
    assert result.output == "one\ntwo\nthree\n"
    assert not result.is_error
    assert result.metadata == {"shell": SHELL, "exitCode": 0}


async def test_nonzero_exit_is_an_error_with_the_code(bash: Tool) -> None:
    result = await bash.execute({"command": "echo failing >&2; exit 7"})
    assert result.is_error
    assert result.output == "failing\n\nbash: command exited with code 7"
    assert result.metadata == {"shell": SHELL, "exitCode": 7}


async def test_killed_by_signal_reports_shell_style_code(bash: Tool) -> None:
    result = await bash.execute({"command": "kill -9 $$"})
    assert result.is_error
    assert result.metadata == {"shell": SHELL, "exitCode": 137}


async def test_empty_command_is_required(bash: Tool) -> None:
    for args in ({"command": ""}, {}):
        result = await bash.execute(args)
        assert result.is_error
        assert result.output == "bash: command is required"


async def test_runs_in_the_workspace_and_workdir(ws: Path, bash: Tool) -> None:
    (ws / "sub").mkdir()
    assert (await bash.execute({"command": "pwd"})).output == f"{ws}\n"
    result = await bash.execute({"command": "pwd", "workdir": "sub"})
    assert result.output == f"{ws / 'sub'}\n"


async def test_workdir_outside_the_workspace_is_refused(ws: Path, bash: Tool) -> None:
    result = await bash.execute({"command": "pwd", "workdir": ".."})
    assert result.is_error
    assert result.output == "bash: path outside the workspace: .."
    (ws / "link").symlink_to(ws.parent / "outside")
    result = await bash.execute({"command": "pwd", "workdir": "link"})
    assert result.output == "bash: path outside the workspace: link"


async def test_missing_workdir(bash: Tool) -> None:
    result = await bash.execute({"command": "pwd", "workdir": "nope"})
    assert result.is_error
    assert result.output == "bash: workdir is not a directory: nope"


async def test_without_workspace_runs_in_the_process_cwd() -> None:
    result = await tools_for()["bash"].execute({"command": "pwd"})
    assert result.output == f"{os.getcwd()}\n"


async def test_stdin_is_closed(bash: Tool) -> None:
    result = await bash.execute({"command": "cat; echo done"})
    assert result.output == "done\n"


async def test_output_cap_with_marker(ws: Path) -> None:
    bash = tools_for({"workspace": str(ws), "max_output_bytes": 1000})["bash"]
    result = await bash.execute({"command": "yes ab | head -c 100000"})
    head, marker = result.output.rsplit("\n", 1)
    assert head == ("ab\n" * 334)[:1000].rstrip("\n")
    assert marker == (
        "[truncated: 1000 bytes of 97.7 KB shown; "
        "redirect the output to a file and read it with offset/limit]"
    )
    assert result.metadata == {"shell": SHELL, "exitCode": 0}


async def test_cap_cuts_on_a_character_boundary(ws: Path) -> None:
    bash = tools_for({"workspace": str(ws), "max_output_bytes": 5})["bash"]
    result = await bash.execute({"command": "printf 'ééééé'"})  # 10 bytes
    assert result.output.startswith("éé\n[truncated: 4 bytes of 10 bytes shown;")


async def test_no_cap_when_zero(ws: Path) -> None:
    bash = tools_for({"workspace": str(ws), "max_output_bytes": 0})["bash"]
    result = await bash.execute({"command": "head -c 200000 /dev/zero | tr '\\0' x"})
    assert result.output == "x" * 200000


async def test_timeout_kills_the_whole_process_group(ws: Path, bash: Tool) -> None:
    result = await bash.execute(
        {"command": "echo partial; " + SPAWN.format(f="pids"), "timeout": 300}
    )
    assert result.is_error
    assert result.output == "bash: command timed out after 300ms\npartial\n"
    pids = [int(x) for x in (ws / "pids").read_text().split()]
    assert len(pids) == 3
    assert await all_gone(pids)


async def test_ctx_timeout_bounds_the_command(bash: Tool) -> None:
    result = await bash.execute({"command": "sleep 30"}, ToolContext(timeout=0.05))
    assert result.output.startswith("bash: command timed out after 50ms")
    result = await bash.execute({"command": "sleep 30"}, ToolContext(timeout=0.0041))
    assert result.output.startswith("bash: command timed out after 4.1ms")  # not 4.1000000000000005
    # the model's own, smaller limit wins
    result = await bash.execute({"command": "sleep 30", "timeout": 40}, ToolContext(timeout=5))
    assert result.output.startswith("bash: command timed out after 40ms")


async def test_cancellation_kills_the_group_and_propagates(ws: Path, bash: Tool) -> None:
    task = asyncio.create_task(bash.execute({"command": SPAWN.format(f="pids")}))
    pids = await read_pids(ws / "pids", 3)
    assert all(alive(p) for p in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await all_gone(pids)


async def test_signal_stops_the_command(ws: Path, bash: Tool) -> None:
    signal = asyncio.Event()
    task = asyncio.create_task(
        bash.execute({"command": "echo so far; " + SPAWN.format(f="pids")}, ToolContext(signal))
    )
    pids = await read_pids(ws / "pids", 3)
    signal.set()
    result = await task
    assert result.is_error
    assert result.output == "bash: command cancelled\nso far\n"
    assert await all_gone(pids)


async def test_does_not_block_the_event_loop(bash: Tool) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(ticker())
    try:
        await bash.execute({"command": "sleep 0.2"})
    finally:
        ticking.cancel()
    assert ticks > 1


async def test_concurrent_commands(bash: Tool) -> None:
    results = await asyncio.gather(*(bash.execute({"command": f"echo {i}"}) for i in range(8)))
    assert [r.output for r in results] == [f"{i}\n" for i in range(8)]
