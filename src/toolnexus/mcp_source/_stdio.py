"""The stdio transport: an MCP server as a child process speaking JSON-RPC lines.

Unlike the SDK's `stdio_client`, this one keeps what a host needs to explain a failure and to
leave nothing behind: the child's pid, its exit code, the last line of its stderr (captured,
never mixed into the protocol stream), and a teardown that kills the whole process tree. The
child is spawned beforehand (`_process.spawn`), so its start-up overlaps the SDK import.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.abc
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from toolnexus._log import logger
from toolnexus.mcp_source._config import DEFAULT_MAX_MESSAGE_BYTES
from toolnexus.mcp_source._process import TERM_GRACE, exited, kill_tree_now, stop_tree

# Once stdout ends, how long to wait for the exit code and the last stderr line.
EXIT_REPORT_WAIT = 1.0
_MAX_STDERR_LINE = 400


@dataclass(slots=True)
class ChildState:
    """What is known about the child process; filled in as it runs."""

    pid: int | None = None
    returncode: int | None = None
    last_stderr_line: str = ""
    exited: bool = False  # ended on its own, not by our teardown
    closing: bool = False  # our teardown has started
    graceful: bool = False  # an orderly close: let it exit on stdin EOF first
    failure: str = ""  # why we ended the child ourselves (e.g. an oversized message)

    def exit_text(self) -> str:
        """`exited (code <n>)` plus `: <last stderr line>` when there is one, or the reason we
        stopped it."""
        if self.failure:
            return self.failure
        code = "unknown" if self.returncode is None else str(self.returncode)
        tail = f": {self.last_stderr_line}" if self.last_stderr_line else ""
        return f"exited (code {code}){tail}"


TransportStreams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@asynccontextmanager
async def stdio_transport(
    process: anyio.abc.Process,
    *,
    state: ChildState,
    on_exit: Callable[[], None],
    label: str,
    max_message: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> AsyncIterator[TransportStreams]:
    """Bridge a spawned child's stdio to message streams; on exit, kill its whole tree.

    The transport owns `process` from the call on. `on_exit` is called once if the child ends
    by itself (before the read stream closes, so the exit code and last stderr line are
    already in `state`). A message (line) longer than `max_message` bytes ends the child: the
    server fails with that reason instead of making the host hold the line.
    """
    state.pid = process.pid
    # No await between here and the task group's try/finally, so nothing can leak the child.
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    stderr_done = anyio.Event()

    async def report_exit() -> None:
        with anyio.move_on_after(EXIT_REPORT_WAIT):
            await exited(process, EXIT_REPORT_WAIT)
            await stderr_done.wait()
        state.returncode = process.returncode
        if not state.closing:
            state.exited = True
            on_exit()

    async def read_stdout() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        scanned = 0  # bytes of `buffer` known to hold no newline
        delivering = True
        try:
            async for chunk in process.stdout:
                if not delivering:
                    continue  # the session is gone: drain so the child never blocks on a pipe
                buffer += chunk
                while delivering and (end := buffer.find(b"\n", scanned)) >= 0:
                    if end > max_message:
                        break
                    line = bytes(buffer[:end]).strip()
                    del buffer[: end + 1]
                    scanned = 0
                    if not line:
                        continue
                    try:
                        await read_send.send(_parse(line))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        delivering = False
                else:
                    scanned = len(buffer)
                if delivering and (scanned > max_message or end > max_message):
                    state.failure = (
                        f"sent a message over the {max_message}-byte limit "
                        '(raise "maxMessageBytes" if it is legitimate)'
                    )
                    buffer.clear()
                    delivering = False
                    kill_tree_now(process)
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
                    await stop_tree(process, graceful=state.graceful)
                    state.returncode = process.returncode
                tg.cancel_scope.cancel()
    finally:
        # Last resort when the teardown above was interrupted (e.g. the loop is shutting down).
        if process.returncode is None:
            kill_tree_now(process)
        with anyio.CancelScope(shield=True), anyio.move_on_after(TERM_GRACE):
            await process.aclose()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # not JSON-RPC: the session hands it to its message handler
        return exc
