"""Child process trees: every process a toolnexus child starts is tagged, found and killed.

A child (a stdio MCP server, a `bash` command) starts in a session of its own with the variable
`TOOLNEXUS_PROCESS_TREE=<host>.<n>` in its environment (appended, `:`-separated, to a tag the
host itself inherited, so trees nest). Its descendants inherit the variable,
so they are found in `/proc` even after they moved to a session of their own (`setsid`) and were
re-parented when their parent died: nothing has to be tracked while they run.

A tree may sit inside a wider one (`ProcessTree(inside=...)`): its members carry both tags, so
killing the wider tree ends it too. A toolkit gathers its `bash` calls that way (`owned_tree`),
and `end_owned` on its close kills whatever they left running in the background.

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
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

__all__ = [
    "TREE_VARIABLE",
    "ProcessTree",
    "end_owned",
    "kill_now",
    "owned_tree",
    "start_uncancelled",
]

T = TypeVar("T")

TREE_VARIABLE = "TOOLNEXUS_PROCESS_TREE"
POLL_SECONDS = 0.01
# Killing is repeated while members remain (a member may fork while it is being killed), for at
# most this long: a member stopped in the kernel (uninterruptible I/O) may never go.
KILL_SECONDS = 5.0
_ZOMBIE = ("Z", "X")

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
deadline = time.monotonic() + float(sys.argv[3])
while time.monotonic() < deadline:
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
                [
                    *shell,
                    sys.executable,
                    *("-E", "-s", "-S", "-c", _WATCHDOG),
                    *(TREE_VARIABLE, token, str(KILL_SECONDS)),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            launcher.wait(5)
            _watchdog = launcher


class ProcessTree:
    """The tag of one child's tree: `env()` to start the child with, `kill()` to end it all.

    With `inside`, the members carry that wider tree's tag too (and end when it is killed)."""

    __slots__ = ("_inside", "_signalled", "tag")

    def __init__(self, *, inside: ProcessTree | None = None) -> None:
        token = _host_token()
        _ensure_watchdog(token)
        self.tag = f"{token}.{next(_counter)}"
        self._inside = inside
        # Members signalled so far, by pid, with their start time (a pid is reused once its
        # process is reaped; the start time tells the two apart).
        self._signalled: dict[int, str] = {}

    def env(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        """This process's environment, `overrides` merged over it, plus the tree's tag."""
        env = {**os.environ, **(overrides or {})}
        tags = [env.get(TREE_VARIABLE), self._inside and self._inside.tag, self.tag]
        env[TREE_VARIABLE] = ":".join(t for t in tags if t)
        return env

    def signal(self, leader: int | None, sig: int) -> dict[int, str]:
        """Send `sig` to the leader's process group (if any) and to every live member; the
        members signalled, pid -> start time. Blocking: reads /proc."""
        if leader is not None:
            kill_now(leader, sig)
        members = self._members(leader)
        for pid, started in members.items():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
            self._signalled[pid] = started
        return members

    async def kill(self, leader: int | None, *, term_grace: float = 0.0) -> None:
        """Kill the whole tree: SIGTERM first when `term_grace` > 0 (waiting at most that long
        for it to end), then SIGKILL until no member is left (for at most `KILL_SECONDS`).
        `leader` is the child whose process group goes too. Never blocks the event loop."""
        if term_grace > 0:
            await asyncio.to_thread(self.signal, leader, signal.SIGTERM)
            if await self._gone(leader, term_grace):
                return
        await asyncio.to_thread(self._kill_all, leader)

    async def _gone(self, leader: int | None, within: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            if not await asyncio.to_thread(self._alive, leader):
                return True
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(POLL_SECONDS)

    def _alive(self, leader: int | None) -> bool:
        members = self._members(leader)
        return self._exiting(members) or bool(members)

    def _members(self, leader: int | None) -> dict[int, str]:
        """The live members, pid -> start time, from one pass over /proc: each process carrying
        the tag, and each in the leader's process group (zombies excluded). A member that has
        begun to exit may be missing: its environment reads empty while it still runs (see
        `_exiting`)."""
        group = str(leader) if leader is not None and _group_exists(leader) else None
        tag = self.tag.encode()
        found: dict[int, str] = {}
        for pid in _pids():
            tagged = _carries(pid, tag)
            if not tagged and group is None:
                continue
            fields = _stat_fields(pid)
            if fields is None or len(fields) <= 19 or fields[0] in _ZOMBIE:
                continue
            if tagged or fields[2] == group:
                found[pid] = fields[19]
        return found

    def _exiting(self, members: Mapping[int, str]) -> bool:
        """Whether a member signalled earlier still runs though this round's `members` lacks
        it (only those are looked at again). A process that has begun to exit has already
        released its memory, environment included, so it is no longer found by its tag, yet it
        runs on until its exit completes (long, for a large process on a loaded host)."""
        self._signalled = {
            pid: started
            for pid, started in self._signalled.items()
            if pid in members or _runs(pid, started)
        }
        return len(self._signalled) > len(members.keys() & self._signalled.keys())

    def _kill_all(self, leader: int | None) -> None:
        deadline = time.monotonic() + KILL_SECONDS
        while True:
            members = self.signal(leader, signal.SIGKILL)
            if not members and not self._exiting(members):
                return
            if time.monotonic() >= deadline:
                return
            threading.Event().wait(POLL_SECONDS)

    def __repr__(self) -> str:
        return f"<ProcessTree {self.tag}>"


# The tree of each owner (a toolkit) that started children inside one, until it is ended.
_owned: weakref.WeakKeyDictionary[object, ProcessTree] = weakref.WeakKeyDictionary()
_owned_lock = threading.Lock()


def owned_tree(owner: object) -> ProcessTree:
    """The wider tree the children started on behalf of `owner` go inside (made on first use):
    `end_owned(owner)` kills whatever of them still runs."""
    tree = _owned.get(owner)
    if tree is None:
        with _owned_lock:
            tree = _owned.get(owner) or _owned.setdefault(owner, ProcessTree())
    return tree


async def end_owned(owner: object) -> None:
    """Kill every process still running that was started inside `owner`'s tree, descendants
    included; nothing when `owner` started none. Returns once none of them runs."""
    with _owned_lock:
        tree = _owned.pop(owner, None)
    if tree is not None:
        await tree.kill(None)


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


def _group_exists(leader: int) -> bool:
    """Whether a process group `leader` exists (zombies included: `_members` looks closer)."""
    try:
        os.killpg(leader, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


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


def _runs(pid: int, started: str) -> bool:
    """Whether the process that started at `started` still runs as `pid` (not a zombie)."""
    fields = _stat_fields(pid)
    return (
        fields is not None
        and len(fields) > 19
        and fields[19] == started
        and fields[0] not in _ZOMBIE
    )


_PREFIX = f"{TREE_VARIABLE}=".encode()


def _carries(pid: int, tag: bytes) -> bool:
    """Whether process `pid` has `tag` among the tags of its environment (a zombie's
    environment reads empty: never)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            environ = fh.read()
    except OSError:
        return False
    return tag in environ and any(
        variable.startswith(_PREFIX) and tag in variable[len(_PREFIX) :].split(b":")
        for variable in environ.split(b"\0")
    )
