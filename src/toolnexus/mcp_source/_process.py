"""A stdio server's child process: spawning it, and killing its whole tree.

Light on purpose (no MCP SDK): the source spawns each child *before* the SDK finishes importing,
so the server's own start-up overlaps the import instead of following it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anyio.abc import Process

# After stdin closes, an orderly server exits by itself; give it this long.
EXIT_GRACE = 0.5
# After SIGTERM to the process group, wait this long before SIGKILL.
TERM_GRACE = 1.0
POLL = 0.01


class SpawnError(OSError):
    """The server's program could not be started (the message says why)."""


async def spawn(
    command: Sequence[str], *, env: Mapping[str, str] | None, cwd: str | None
) -> Process:
    """Start `command` in a session of its own (so its whole tree can be killed), with piped
    stdin/stdout/stderr and `env` merged over this process's environment.

    Cancelling the caller never leaks the child: the spawn finishes, then the child is killed.
    """
    starting = asyncio.ensure_future(_open(command, env=env, cwd=cwd))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        await asyncio.wait({starting})
        if not starting.cancelled() and starting.exception() is None:
            await discard(starting.result())
        raise


async def _open(
    command: Sequence[str], *, env: Mapping[str, str] | None, cwd: str | None
) -> Process:
    import anyio

    try:
        return await anyio.open_process(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        # `subprocess` names the directory when changing into `cwd` failed; said plainly, as
        # it would otherwise read like a missing program.
        if cwd is not None and exc.filename == cwd:
            raise SpawnError(f'"cwd" {cwd} is not a directory') from None
        raise SpawnError(f'cannot start "{command[0]}": {exc.strerror or exc}') from None


async def discard(process: Process) -> None:
    """Kill a child nobody has started talking to yet (its whole tree), close its pipes."""
    import anyio

    with anyio.CancelScope(shield=True):
        await stop_tree(process, graceful=False)
        with anyio.move_on_after(TERM_GRACE):
            await process.aclose()


async def stop_tree(process: Process, *, graceful: bool) -> None:
    """Close stdin, let the child exit by itself (`graceful` only), then TERM/KILL its whole
    tree, including descendants that moved to a session of their own. Returns once none of
    them runs."""
    import anyio

    with anyio.CancelScope(shield=True):
        pid = process.pid
        alive = process.returncode is None
        descendants = await anyio.to_thread.run_sync(_descendants, pid) if alive else []
        if process.stdin is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdin.aclose()
        if alive and not (graceful and await exited(process, EXIT_GRACE)):
            kill_group(pid, signal.SIGTERM)
            if not await exited(process, TERM_GRACE):
                kill_group(pid, signal.SIGKILL)
                await exited(process, TERM_GRACE)
        # Whatever is left of the tree: group members that outlived the leader, and descendants
        # that moved to a group of their own.
        kill_group(pid, signal.SIGKILL)
        survivors = [(p, started) for p, started in descendants if _start_time(p) == started]
        for child_pid, _ in survivors:
            with contextlib.suppress(OSError):
                os.kill(child_pid, signal.SIGKILL)
        # A killed process takes a moment to die; return once none is running.
        with anyio.move_on_after(TERM_GRACE):
            while any(_running(p, started) for p, started in survivors):  # noqa: ASYNC110
                await anyio.sleep(POLL)


async def exited(process: Process, within: float) -> bool:
    """Whether the child has exited, waiting at most `within` seconds.

    Polled: `wait()` would also wait for pipes a grandchild may still hold open.
    """
    import anyio

    with anyio.move_on_after(within):
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(POLL)
    return process.returncode is not None


def kill_group(pgid: int, sig: int) -> None:
    if sys.platform == "win32":  # pragma: no cover - POSIX process groups only
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state is [0], ppid [1])."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return data.rpartition(")")[2].split()


def _running(pid: int, started: str) -> bool:
    """Still the same process, and not a zombie waiting to be reaped."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) <= 19:
        return False
    return fields[19] == started and fields[0] not in ("Z", "X")


def _start_time(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[19] if fields and len(fields) > 19 else None


def _descendants(root: int) -> list[tuple[int, str]]:
    """Every live descendant of `root` with its start time (to recognise it later)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    started: dict[int, str] = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if not fields or len(fields) <= 19:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        started[int(entry)] = fields[19]
    found: list[tuple[int, str]] = []
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        found.append((pid, started[pid]))
        stack.extend(children.get(pid, ()))
    return found
