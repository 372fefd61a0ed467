"""Child process trees: every process a toolnexus child starts is tagged, found and killed.

A child (a stdio MCP server, a `bash` command) starts in a session of its own with the variable
`TOOLNEXUS_PROCESS_TREE=<host>.<n>` in its environment (appended, `:`-separated, to a tag the
host itself inherited, so trees nest). Its descendants inherit the variable,
so they are found in `/proc` even after they moved to a session of their own (`setsid`) and were
re-parented when their parent died: nothing has to be tracked while they run.

If the host itself dies (any signal, `SIGKILL` included), a watchdog process started with the
first child notices the end of its pipe from the host and kills every tree the host had left.

What remains (documented in docs/processes.md): a descendant that starts a program with a
cleared environment (`env -i ...`) *and* leaves the session; platforms without `/proc`, where
only the process group is killed; and a watchdog killed together with the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

__all__ = ["TREE_VARIABLE", "ProcessTree", "kill_now", "start_uncancelled"]

T = TypeVar("T")

TREE_VARIABLE = "TOOLNEXUS_PROCESS_TREE"
POLL_SECONDS = 0.01
# Killing is repeated while members remain (a member may fork while it is being killed).
_KILL_ROUNDS = 200

_state_lock = threading.Lock()
_host: tuple[int, str] | None = None  # (pid, token): a forked host gets a token of its own
_counter = itertools.count(1)
_watchdog: subprocess.Popen[bytes] | None = None

# The watchdog: waits for the end of its stdin (the host's death or exit), then kills every
# process tagged with the host's token, repeating until none is left.
_WATCHDOG = r"""
import os, signal, sys, time
name = (sys.argv[1] + "=").encode()
prefix = (sys.argv[2] + ".").encode()
try:
    while sys.stdin.buffer.read(65536):
        pass
except BaseException:
    pass
def tagged():
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/environ" % entry, "rb") as fh:
                    for v in fh.read().split(b"\0"):
                        if v.startswith(name) and any(
                            t.startswith(prefix) for t in v[len(name):].split(b":")
                        ):
                            found.append(int(entry))
            except OSError:
                pass
    return found
for _ in range(200):
    pids = tagged()
    if not pids:
        break
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.01)
"""


def _host_token() -> str:
    global _host, _watchdog
    with _state_lock:
        if _host is None or _host[0] != os.getpid():
            _host = (os.getpid(), f"{os.getpid()}-{secrets.token_hex(4)}")
            _watchdog = None
        return _host[1]


def _ensure_watchdog(token: str) -> None:
    """Start the host's watchdog once (Linux only: it needs `/proc`)."""
    global _watchdog
    if not os.path.isdir("/proc"):
        return
    with _state_lock:
        if _watchdog is not None:
            return
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            # Started through a shell that leaves it running in the background, so it is no
            # child of the host (nobody counting the host's children sees it, nobody has to
            # reap it), in a session of its own (a signal to the host's group misses it). The
            # pipe's write end stays open here until this process ends.
            shell = ["/bin/sh", "-c", 'exec 3<&0; "$0" "$@" <&3 3<&- &']
            launcher = subprocess.Popen(
                [*shell, sys.executable, "-E", "-s", "-S", "-c", _WATCHDOG, TREE_VARIABLE, token],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            launcher.wait(5)
            _watchdog = launcher


class ProcessTree:
    """The tag of one child's tree: `env()` to start the child with, `kill()` to end it all."""

    __slots__ = ("_signalled", "tag")

    def __init__(self) -> None:
        token = _host_token()
        _ensure_watchdog(token)
        self.tag = f"{token}.{next(_counter)}"
        # Members signalled so far, by pid, with their start time (a pid is reused once its
        # process is reaped; the start time tells the two apart).
        self._signalled: dict[int, str] = {}

    def env(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        """This process's environment, `overrides` merged over it, plus the tree's tag."""
        env = {**os.environ, **(overrides or {})}
        inherited = env.get(TREE_VARIABLE)
        env[TREE_VARIABLE] = f"{inherited}:{self.tag}" if inherited else self.tag
        return env

    def members(self) -> list[int]:
        """Pids of the live processes of this tree (zombies excluded). Blocking: reads /proc.

        A member that has begun to exit may be missing: its environment reads empty while it
        still runs (see `signal`, which keeps track of those it signalled)."""
        return _tagged(self.tag.encode())

    def signal(self, leader: int, sig: int) -> list[int]:
        """Send `sig` to the leader's process group and to every tagged member; the members
        signalled."""
        kill_now(leader, sig)
        pids = self.members()
        for pid in pids:
            started = _start_time(pid)
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
            if started is not None:
                self._signalled[pid] = started
        return pids

    async def kill(self, leader: int, *, term_grace: float = 0.0) -> None:
        """Kill the whole tree: SIGTERM first when `term_grace` > 0 (waiting at most that long
        for it to end), then SIGKILL until no member is left. Never blocks the event loop."""
        if term_grace > 0:
            await asyncio.to_thread(self.signal, leader, signal.SIGTERM)
            if await self._gone(leader, term_grace):
                return
        await asyncio.to_thread(self._kill_all, leader)

    async def _gone(self, leader: int, within: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            if not await asyncio.to_thread(self._alive, leader):
                return True
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(POLL_SECONDS)

    def _alive(self, leader: int) -> bool:
        return _group_alive(leader) or bool(self.members()) or self._exiting()

    def _exiting(self) -> bool:
        """Whether a member signalled earlier still runs. A process that has begun to exit has
        already released its memory, environment included, so `members()` no longer finds it,
        yet it runs on until its exit completes (long, for a large process on a loaded host)."""
        self._signalled = {
            pid: started for pid, started in self._signalled.items() if _runs(pid, started)
        }
        return bool(self._signalled)

    def _kill_all(self, leader: int) -> None:
        for _ in range(_KILL_ROUNDS):
            found = self.signal(leader, signal.SIGKILL)
            if not found and not _group_alive(leader) and not self._exiting():
                return
            threading.Event().wait(POLL_SECONDS)

    def __repr__(self) -> str:
        return f"<ProcessTree {self.tag}>"


async def start_uncancelled(start: Awaitable[T], discard: Callable[[T], Awaitable[None]]) -> T:
    """Await `start` (spawning a child); if the caller is cancelled meanwhile, the spawn still
    finishes and `discard(child)` runs before the cancellation goes on: nothing leaks."""
    starting = asyncio.ensure_future(start)
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        await asyncio.wait({starting})
        if not starting.cancelled() and starting.exception() is None:
            await discard(starting.result())
        raise


def kill_now(leader: int, sig: int = signal.SIGKILL) -> None:
    """Signal the process group led by `leader`, at once (for last-resort cleanup paths)."""
    if sys.platform == "win32":  # pragma: no cover - POSIX process groups only
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, sig)


def _group_alive(leader: int) -> bool:
    try:
        os.killpg(leader, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # Signal 0 also reaches zombies: only a group member that still runs counts.
    return any(_running(pid) for pid in _group_members(leader))


def _group_members(pgid: int) -> list[int]:
    found = []
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields is not None and len(fields) > 2 and fields[2] == str(pgid):
            found.append(pid)
    return found


def _pids() -> list[int]:
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state [0], ppid [1], pgrp [2])."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return data.rpartition(")")[2].split()


def _start_time(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot), or `None` once it is gone."""
    fields = _stat_fields(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def _runs(pid: int, started: str) -> bool:
    """Whether the process that started at `started` still runs as `pid` (not a zombie)."""
    fields = _stat_fields(pid)
    return (
        fields is not None
        and len(fields) > 19
        and fields[19] == started
        and fields[0] not in ("Z", "X")
    )


def _running(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and bool(fields) and fields[0] not in ("Z", "X")


_PREFIX = f"{TREE_VARIABLE}=".encode()


def _tagged(tag: bytes) -> list[int]:
    found = []
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        # A zombie's environment reads empty, so it is never counted.
        if tag not in environ:
            continue
        for variable in environ.split(b"\0"):
            if variable.startswith(_PREFIX) and tag in variable[len(_PREFIX) :].split(b":"):
                found.append(pid)
                break
    return found
