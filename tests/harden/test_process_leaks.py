"""Process-leak harness: no process a toolkit started outlives it — after close, a server crash,
a cancelled call, a timed-out or cancelled `bash`, or the death of the host itself.

Leftovers are counted in /proc by a marker each test puts on the command lines it causes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from support.polling import wait_until
from support.processes import live_processes
from toolnexus import create_toolkit

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")

HOSTILE = Path(__file__).parents[1] / "support" / "hostile_stdio.py"


async def none_left(marker: str, timeout: float = 20.0) -> None:
    await wait_until(lambda: not live_processes(marker), timeout=timeout)


def server_config(marker: str, *extra: str) -> dict[str, object]:
    return {
        "mcpServers": {"h": {"command": [sys.executable, str(HOSTILE), marker, *extra]}},
        "builtins": False,
    }


@pytest.fixture
def marker() -> str:
    return f"tnx-leak-{uuid.uuid4().hex}"


async def test_close_kills_a_grandchild_in_a_session_of_its_own(marker: str) -> None:
    toolkit = await create_toolkit(server_config(marker))
    result = await toolkit.execute("h_spawn", {})
    assert not result.is_error, result.output
    await wait_until(lambda: int(result.output) in live_processes(marker))
    await toolkit.close()
    await none_left(marker)


async def test_a_server_that_crashes_mid_call_leaves_nothing(marker: str) -> None:
    toolkit = await create_toolkit(server_config(marker))
    try:
        result = await toolkit.execute("h_crash", {})
        assert result.is_error
        # The server died; its re-parented grandchild goes with it, before any close.
        await none_left(marker)
    finally:
        await toolkit.close()


async def test_a_cancelled_call_then_close_leaves_nothing(marker: str) -> None:
    toolkit = await create_toolkit(server_config(marker, "--stubborn"))
    await toolkit.execute("h_spawn", {})
    call = asyncio.ensure_future(toolkit.execute("h_hang", {}))
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await toolkit.close()
    await none_left(marker)


async def test_bash_timeout_kills_an_escaped_child_and_returns(marker: str) -> None:
    toolkit = await create_toolkit({"builtins": True})
    command = f"setsid {sys.executable} -c 'import time; time.sleep(60)' {marker} & echo started"
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await toolkit.execute("bash", {"command": command, "timeout": 500})
    assert loop.time() - started < 15  # generous bound on a hang (the child lives 60 s)
    assert result.is_error and "timed out" in result.output
    await none_left(marker)
    await toolkit.close()


async def test_bash_cancel_kills_an_escaped_child(marker: str) -> None:
    toolkit = await create_toolkit({"builtins": True})
    command = f"setsid {sys.executable} -c 'import time; time.sleep(60)' {marker} & wait"
    call = asyncio.ensure_future(toolkit.execute("bash", {"command": command}))
    await wait_until(lambda: live_processes(marker))
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 15)
    await none_left(marker)
    await toolkit.close()


HOST = """
import asyncio, sys
from toolnexus import create_toolkit

async def main():
    config = {"mcpServers": {"h": {"command": [sys.executable, HOSTILE, MARKER, "--stubborn"]}}}
    toolkit = await create_toolkit(config)
    await toolkit.execute("h_spawn", {})
    asyncio.ensure_future(toolkit.execute("bash", {"command": BASH}))
    await asyncio.sleep(0.3)
    print("ready", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
async def test_host_death_leaves_nothing(marker: str, how: int) -> None:
    bash = f"setsid {sys.executable} -c 'import time; time.sleep(60)' {marker} & wait"
    code = (
        HOST.replace("HOSTILE", repr(str(HOSTILE)))
        .replace("MARKER", repr(marker))
        .replace("BASH", repr(bash))
    )
    host = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    assert host.stdout is not None
    line = await asyncio.wait_for(host.stdout.readline(), 30)
    assert line.strip() == b"ready"
    # the stubborn server, its grandchild and bash's escaped child
    await wait_until(lambda: len(live_processes(marker)) >= 3)
    host.send_signal(how)
    await host.wait()
    await none_left(marker)


async def test_a_stdio_line_over_the_cap_fails_that_server_clearly(marker: str) -> None:
    config = server_config(marker)
    config["mcpServers"]["h"]["maxMessageBytes"] = 1 << 20  # type: ignore[index]
    toolkit = await create_toolkit(config)
    try:
        result = await toolkit.execute("h_flood", {"bytes": 3 << 20})
        assert result.is_error
        assert "maxMessageBytes" in result.output and "1048576" in result.output
        assert toolkit.mcp_status()["h"] == "failed"
        await none_left(marker)
    finally:
        await toolkit.close()
