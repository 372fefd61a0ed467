"""A stdio server's child process: spawning it, and killing its whole tree (`_proctree`).

Light on purpose (no MCP SDK): the source spawns each child *before* the SDK finishes importing,
so the server's own start-up overlaps the import instead of following it.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from toolnexus._proctree import ProcessTree, kill_now, start_uncancelled
from toolnexus.errors import SpawnError as SpawnError  # re-exported: its old home

if TYPE_CHECKING:
    from anyio.abc import Process

# After stdin closes, an orderly server exits by itself; give it this long.
EXIT_GRACE = 0.5
# After SIGTERM to the whole tree, wait this long before SIGKILL.
TERM_GRACE = 1.0
POLL = 0.01

# The tree of each live child, by pid, until the child is stopped.
_trees: dict[int, ProcessTree] = {}


async def spawn(
    command: Sequence[str], *, env: Mapping[str, str] | None, cwd: str | None
) -> Process:
    """Start `command` in a session of its own (so its whole tree can be killed), with piped
    stdin/stdout/stderr and `env` merged over this process's environment.

    Cancelling the caller never leaks the child: the spawn finishes, then the child is killed.
    """
    return await start_uncancelled(_open(command, env=env, cwd=cwd), discard)


async def _open(
    command: Sequence[str], *, env: Mapping[str, str] | None, cwd: str | None
) -> Process:
    import anyio

    tree = ProcessTree()
    try:
        process = await anyio.open_process(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=tree.env(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        # `subprocess` names the directory when changing into `cwd` failed; said plainly, as
        # it would otherwise read like a missing program.
        if cwd is not None and exc.filename == cwd:
            raise SpawnError(f'"cwd" {cwd} is not a directory') from None
        raise SpawnError(f'cannot start "{command[0]}": {exc.strerror or exc}') from None
    _trees[process.pid] = tree
    return process


async def discard(process: Process) -> None:
    """Kill a child nobody has started talking to yet (its whole tree), close its pipes."""
    import anyio

    with anyio.CancelScope(shield=True):
        await stop_tree(process, graceful=False)
        with anyio.move_on_after(TERM_GRACE):
            await process.aclose()


async def stop_tree(process: Process, *, graceful: bool) -> None:
    """Close stdin, let the child exit by itself (`graceful` only), then TERM/KILL its whole
    tree, including descendants that moved to a session of their own or outlived their parent.
    Returns once none of them runs."""
    import anyio

    with anyio.CancelScope(shield=True):
        pid = process.pid
        tree = _trees.pop(pid, None)
        if process.stdin is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdin.aclose()
        alive = process.returncode is None
        if alive and graceful and await exited(process, EXIT_GRACE):
            alive = False
        if tree is None:  # pragma: no cover - every child is spawned with a tree
            kill_now(pid, signal.SIGKILL)
            return
        await tree.kill(pid, term_grace=TERM_GRACE if alive else 0.0)


def kill_tree_now(process: Process) -> None:
    """Last resort, synchronous: SIGKILL the child's group and every member of its tree."""
    tree = _trees.pop(process.pid, None)
    if tree is None:
        kill_now(process.pid, signal.SIGKILL)
    else:
        tree.signal(process.pid, signal.SIGKILL)


async def exited(process: Process, within: float) -> bool:
    """Whether the child has exited, waiting at most `within` seconds.

    Polled: `wait()` would also wait for pipes a grandchild may still hold open.
    """
    import anyio

    with anyio.move_on_after(within):
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(POLL)
    return process.returncode is not None
