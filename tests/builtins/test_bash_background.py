"""What a toolkit's `bash` calls leave running in the background (`cmd &`, `nohup`, a detached
grandchild in a session of its own) runs on while the toolkit is open, for later commands to
use, and ends with `toolkit.close()`; what another toolkit's calls started, and what no `bash`
call started, is left alone."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import uuid

import pytest

from support.polling import wait_until
from support.processes import live_processes
from toolnexus import create_toolkit
from toolnexus.builtin import builtin_shell

SHELL = " ".join(builtin_shell())  # what `metadata["shell"]` shows

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")

SLEEPER = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(300)'"
QUIET = ">/dev/null 2>&1 </dev/null"


def _background(marker: str) -> str:
    """A command that returns at once, leaving three processes holding `marker` running."""
    return (
        f"{SLEEPER} {marker}-job {QUIET} & "
        f"nohup {SLEEPER} {marker}-nohup {QUIET} & "
        # A grandchild whose parent exits at once, in a session of its own.
        f"( setsid {SLEEPER} {marker}-detached {QUIET} & ); "
        "echo started"
    )


async def test_close_ends_what_the_toolkits_bash_calls_left_running_and_nothing_else() -> None:
    mine, theirs, unrelated = (f"tnx-bg-{uuid.uuid4().hex}" for _ in range(3))
    toolkit = await create_toolkit()
    other = await create_toolkit()
    outside = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(300)", unrelated
    )
    try:
        done = await toolkit.execute("bash", {"command": _background(mine)})
        assert (done.output, done.is_error) == ("started\n", False)
        done = await other.execute("bash", {"command": f"{SLEEPER} {theirs} {QUIET} & echo ok"})
        assert (done.output, done.is_error) == ("ok\n", False)
        # The commands have finished; what they started in the background runs on.
        await wait_until(lambda: len(live_processes(mine)) == 3, timeout=20)
        await wait_until(lambda: len(live_processes(theirs)) == 1, timeout=20)

        await toolkit.close()
        assert live_processes(mine) == []  # at once: close returns when none of them runs
        assert len(live_processes(theirs)) == 1
        assert len(live_processes(unrelated)) == 1

        await other.close()
        assert live_processes(theirs) == []
        assert len(live_processes(unrelated)) == 1
    finally:
        await toolkit.close()
        await other.close()
        outside.kill()
        await outside.wait()


async def test_close_ends_a_bash_command_still_running_and_its_call_returns() -> None:
    marker = f"tnx-bg-{uuid.uuid4().hex}"
    toolkit = await create_toolkit()
    call = asyncio.create_task(toolkit.execute("bash", {"command": f"{SLEEPER} {marker}"}))
    try:
        await wait_until(lambda: live_processes(marker), timeout=20)
        await toolkit.close()
        assert live_processes(marker) == []
        result = await asyncio.wait_for(call, 15)  # a generous bound on a hang
        assert result.is_error and result.metadata == {"shell": SHELL, "exitCode": 137}
    finally:
        call.cancel()
        await toolkit.close()
