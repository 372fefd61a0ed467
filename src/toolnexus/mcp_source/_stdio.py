"""The stdio transport: an MCP server as a child process speaking JSON-RPC lines.

Unlike the SDK's `stdio_client`, this one keeps what a host needs to explain a failure and to
leave nothing behind: the child's pid, its exit code, the last line of its stderr (captured,
never mixed into the protocol stream), and a teardown that kills the whole process tree.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from toolnexus._log import logger

# After stdin closes, an orderly server exits by itself; give it this long.
EXIT_GRACE = 0.5
# After SIGTERM to the process group, wait this long before SIGKILL.
TERM_GRACE = 1.0
# Once stdout ends, how long to wait for the exit code and the last stderr line.
EXIT_REPORT_WAIT = 1.0
_POLL = 0.01
_MAX_STDERR_LINE = 400


class SpawnError(OSError):
    """The server's program could not be started (the message says why)."""


@dataclass(slots=True)
class ChildState:
    """What is known about the child process; filled in as it runs."""

    pid: int | None = None
    returncode: int | None = None
    last_stderr_line: str = ""
    exited: bool = False  # ended on its own, not by our teardown
    closing: bool = False  # our teardown has started
    graceful: bool = False  # an orderly close: let it exit on stdin EOF first

    def exit_text(self) -> str:
        """`exited (code <n>)` plus `: <last stderr line>` when there is one."""
        code = "unknown" if self.returncode is None else str(self.returncode)
        tail = f": {self.last_stderr_line}" if self.last_stderr_line else ""
        return f"exited (code {code}){tail}"


TransportStreams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@asynccontextmanager
async def stdio_transport(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | None,
    state: ChildState,
    on_exit: Callable[[], None],
    label: str,
) -> AsyncIterator[TransportStreams]:
    """Spawn `command` in its own process group and bridge its stdio to message streams.

    `on_exit` is called once if the child ends by itself (before the read stream closes, so the
    exit code and last stderr line are already in `state`).
    """
    if cwd is not None and not await anyio.to_thread.run_sync(os.path.isdir, cwd):
        raise SpawnError(f'"cwd" {cwd} is not a directory')
    try:
        # Shielded: a cancellation landing mid-spawn would leave a child nobody waits for.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                list(command),
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,  # its own process group: the whole tree can be killed
            )
    except OSError as exc:
        raise SpawnError(f'cannot start "{command[0]}": {exc.strerror or exc}') from None
    state.pid = process.pid
    # No await between the spawn and the task group's try/finally, so nothing can leak it.
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    stderr_done = anyio.Event()

    async def report_exit() -> None:
        with anyio.move_on_after(EXIT_REPORT_WAIT):
            # Polled: `wait()` would also wait for pipes a grandchild may still hold open.
            while process.returncode is None:  # noqa: ASYNC110
                await anyio.sleep(_POLL)
            await stderr_done.wait()
        state.returncode = process.returncode
        if not state.closing:
            state.exited = True
            on_exit()

    async def read_stdout() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        delivering = True
        try:
            async for chunk in process.stdout:
                if not delivering:
                    continue  # the session is gone: drain so the child never blocks on a pipe
                buffer += chunk
                while delivering and (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:end]).strip()
                    del buffer[: end + 1]
                    if not line:
                        continue
                    try:
                        await read_send.send(_parse(line))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        delivering = False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            with anyio.CancelScope(shield=True):
                if not state.closing:
                    await report_exit()
            read_send.close()

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the child closed its stdin or died; the reader reports the exit

    async def read_stderr() -> None:
        assert process.stderr is not None
        pending = b""
        try:
            async for chunk in process.stderr:
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for raw in lines:
                    _note_stderr(raw)
            if pending:
                _note_stderr(pending)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            stderr_done.set()

    def _note_stderr(raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip()
        if text.strip():
            logger.debug("[toolnexus] MCP server %s stderr: %s", label, text)
            state.last_stderr_line = text.strip()[:_MAX_STDERR_LINE]

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_stdout)
            tg.start_soon(write_stdin)
            tg.start_soon(read_stderr)
            try:
                yield read_recv, write_send
            finally:
                state.closing = True
                with anyio.CancelScope(shield=True):
                    write_send.close()
                    read_recv.close()
                    await _stop_tree(process, state)
                tg.cancel_scope.cancel()
    finally:
        # Last resort when the teardown above was interrupted (e.g. the loop is shutting down).
        if process.returncode is None:
            _kill_group(process.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True), anyio.move_on_after(1.0):
            await process.aclose()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # not JSON-RPC: the session hands it to its message handler
        return exc


async def _stop_tree(process: anyio.abc.Process, state: ChildState) -> None:
    """Close stdin, let the child exit (orderly close only), then TERM/KILL its whole tree."""
    pid = process.pid
    alive = process.returncode is None
    descendants = await anyio.to_thread.run_sync(_descendants, pid) if alive else []
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if alive and not (state.graceful and await _exited(process, EXIT_GRACE)):
        _kill_group(pid, signal.SIGTERM)
        if not await _exited(process, TERM_GRACE):
            _kill_group(pid, signal.SIGKILL)
            await _exited(process, TERM_GRACE)
    # Whatever is left of the tree: group members that outlived the leader, and descendants
    # that moved to a group of their own.
    _kill_group(pid, signal.SIGKILL)
    survivors = [(p, started) for p, started in descendants if _start_time(p) == started]
    for child_pid, _ in survivors:
        with contextlib.suppress(OSError):
            os.kill(child_pid, signal.SIGKILL)
    # A killed process takes a moment to die; close() returns once none is running.
    with anyio.move_on_after(TERM_GRACE):
        while any(_running(p, started) for p, started in survivors):  # noqa: ASYNC110
            await anyio.sleep(_POLL)
    state.returncode = process.returncode


async def _exited(process: anyio.abc.Process, within: float) -> bool:
    with anyio.move_on_after(within):
        while process.returncode is None:  # noqa: ASYNC110 - see report_exit
            await anyio.sleep(_POLL)
    return process.returncode is not None


def _kill_group(pgid: int, sig: int) -> None:
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
