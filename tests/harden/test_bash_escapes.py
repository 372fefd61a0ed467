"""`bash` against commands that try to outlive their limit: descendants that ignore signals,
leave the session, stop themselves, hold the output pipe, fork while they are killed, or clear
their environment. When a timed-out `bash` returns, nothing of its tree runs any more (checked
at once in /proc, not polled), and the limit holds even when something escaped."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from support.builtin_tools import tools_for
from support.polling import wait_until
from support.processes import live_processes
from toolnexus.types import Tool, ToolContext

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")

HANG_BOUND = 15.0  # generous upper bound on a hang: every child here would live 60 s


@pytest.fixture
def marker() -> str:
    return f"tnx-escape-{uuid.uuid4().hex}"


@pytest.fixture
def bash() -> Tool:
    return tools_for({"max_output_bytes": 0})["bash"]


async def timed_out(bash: Tool, command: str, timeout_ms: int) -> str:
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await bash.execute({"command": command, "timeout": timeout_ms})
    assert loop.time() - started < timeout_ms / 1000 + HANG_BOUND
    assert result.is_error
    assert result.output.startswith(f"bash: command timed out after {timeout_ms}ms\n")
    return result.output


# Ignores every signal it can, holds 256 MiB (so its exit takes a while once it is killed),
# leaves the session, keeps bash's output pipe open, and says when it is ready.
STUBBORN = textwrap.dedent(
    """
    import os, signal, sys, time
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1):
        signal.signal(s, signal.SIG_IGN)
    held = b"1" * (256 << 20)
    open(sys.argv[1], "w").close()
    print("stubborn ready", flush=True)
    time.sleep(60)
    """
)


async def test_a_stop_ends_descendants_that_ignore_signals_stop_or_leave_the_session(
    bash: Tool, marker: str, tmp_path: Path
) -> None:
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    ready = tmp_path / "ready"
    command = (
        f"setsid {sys.executable} {script} {ready} {marker} & "
        f"setsid sh -c 'kill -STOP $$; : {marker}' & "  # stopped, in a session of its own
        f"nohup sh -c 'sleep 60; : {marker}' >/dev/null 2>&1 & "
        f"while [ ! -e {ready} ]; do sleep 0.01; done; echo all started; wait"
    )
    stop = asyncio.Event()  # stopped like a timeout, once everything runs (no race with it)
    call = asyncio.ensure_future(bash.execute({"command": command}, ToolContext(stop)))
    await wait_until(lambda: len(live_processes(marker)) >= 3 and ready.exists(), timeout=30)
    stop.set()
    result = await asyncio.wait_for(call, HANG_BOUND)
    assert result.is_error and result.output.startswith("bash: command cancelled\n")
    assert "stubborn ready" in result.output
    assert live_processes(marker) == []  # at once: the kill waited for every member to be gone


async def test_a_timeout_ends_a_tree_that_forks_while_it_is_killed(bash: Tool, marker: str) -> None:
    # A loop in a session of its own that starts a detached child every 10 ms, for ever.
    command = (
        f'setsid sh -c \'while :; do setsid sh -c "sleep 60; : {marker}" & sleep 0.01; done;'
        f" : {marker}' & wait"
    )
    await timed_out(bash, command, 600)
    assert live_processes(marker) == []


async def test_a_child_with_a_cleared_environment_cannot_defeat_the_limit(
    bash: Tool, marker: str
) -> None:
    """`env -i` plus `setsid` escapes the tree (a documented limit): it survives, but holding
    the output pipe does not keep the call from returning at its limit with the output so far."""
    command = f"echo before; env -i setsid sh -c 'echo escaped; sleep 60; : {marker}' & wait"
    try:
        output = await timed_out(bash, command, 1000)
        assert "before\n" in output
    finally:
        for pid in live_processes(marker):
            os.kill(pid, signal.SIGKILL)
        await wait_until(lambda: not live_processes(marker), timeout=10)


HOST = textwrap.dedent(
    """
    import asyncio, sys
    from toolnexus.builtin import create_builtin_tools

    async def main():
        bash = next(t for t in create_builtin_tools() if t.name == "bash")
        result = await bash.execute({"command": sys.argv[1]})
        print(result.output.strip(), flush=True)

    asyncio.run(main())
    """
)


async def test_background_work_of_a_finished_command_ends_with_the_host(marker: str) -> None:
    """What a command leaves running after it finished lives on while the host runs (a server
    started for later commands), and ends when the host ends, however it ends."""
    command = f"setsid sh -c 'sleep 60; : {marker}' >/dev/null 2>&1 & echo started"
    host = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOST, command, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(host.communicate(), 60)
    assert host.returncode == 0 and out.strip() == b"started"
    await wait_until(lambda: not live_processes(marker), timeout=20)
