"""The stdio transport: an MCP server as a child process speaking JSON-RPC lines.

Unlike the SDK's `stdio_client`, this one keeps what a host needs to explain a failure and to
leave nothing behind: the child's pid, its exit code, the last line of its stderr (captured,
never mixed into the protocol stream), and a teardown that kills the whole process tree. The
child is spawned beforehand (`_process.spawn`), so its start-up overlaps the SDK import.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Self

import anyio
import anyio.abc
import mcp_types
from mcp.client._transport import ReadStream, WriteStream
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


TransportStreams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]


class _Writer:
    """The session's write stream: each message goes onto the child's stdin from the task that
    sends it, with no writer task (and its two task switches per message) in between. A pipe
    write is synchronous up to the kernel buffer, so concurrent senders never interleave."""

    def __init__(self, stdin: anyio.abc.ByteSendStream) -> None:
        self._stdin = stdin
        self._closed = False
        self._broken = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        try:
            await self._stdin.send(data + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The child closed its stdin or died: this message is lost, as a caller waiting
            # for its answer learns when the reader reports the exit; later sends fail at once.
            self._broken = True

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _Reader:
    """The session's read stream: the messages of the child's stdout, read and parsed in the
    task that receives them (the session's receive loop), with no reader task in between.

    At the end of stdout, `on_end` runs (the exit is recorded) before the stream ends. Once the
    session closes the stream, `on_abandon` drains stdout so the child never blocks on a full
    pipe. A line longer than `max_message` bytes ends the child."""

    def __init__(
        self,
        stdout: anyio.abc.ByteReceiveStream,
        *,
        state: ChildState,
        process: anyio.abc.Process,
        max_message: int,
        on_end: Callable[[], Awaitable[None]],
        on_abandon: Callable[[], object],
    ) -> None:
        self._stdout = stdout
        self._state = state
        self._process = process
        self._max_message = max_message
        self._on_end = on_end
        self._on_abandon = on_abandon
        self._buffer = bytearray()
        self._scanned = 0  # bytes of `_buffer` known to hold no newline
        self._ready: deque[SessionMessage | Exception] = deque()
        self._discarding = False  # after an oversized message: the child is being killed
        self._ended = False
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        ready = self._ready
        while not ready:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended:
                raise anyio.EndOfStream
            try:
                chunk = await self._stdout.receive()
            except (
                anyio.EndOfStream,
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
                OSError,
            ):
                await self._end()
                continue
            self._take(chunk)
        return ready.popleft()

    def _take(self, chunk: bytes) -> None:
        if self._discarding:
            return
        buffer = self._buffer
        buffer += chunk
        limit = self._max_message
        while (end := buffer.find(b"\n", self._scanned)) >= 0:
            if end > limit:
                break
            line = bytes(buffer[:end]).strip()
            del buffer[: end + 1]
            self._scanned = 0
            if line:
                self._ready.append(_parse(line))
        else:
            self._scanned = len(buffer)
        if self._scanned > limit or end > limit:
            self._state.failure = (
                f"sent a message over the {limit}-byte limit "
                '(raise "maxMessageBytes" if it is legitimate)'
            )
            buffer.clear()
            self._discarding = True
            kill_tree_now(self._process)

    async def _end(self) -> None:
        self._ended = True
        with anyio.CancelScope(shield=True):
            await self._on_end()

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def __aiter__(self) -> Self:
        return self

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._ready.clear()
            if not self._ended:
                self._on_abandon()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


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
    by itself (before the read stream ends, so the exit code and last stderr line are already
    in `state`). A message (line) longer than `max_message` bytes ends the child: the server
    fails with that reason instead of making the host hold the line.
    """
    state.pid = process.pid
    # No await between here and the task group's try/finally, so nothing can leak the child.
    assert process.stdin is not None and process.stdout is not None
    stdout = process.stdout
    stderr_done = anyio.Event()
    stdout_done = False

    async def report_exit() -> None:
        nonlocal stdout_done
        stdout_done = True
        if state.closing:
            return
        with anyio.move_on_after(EXIT_REPORT_WAIT):
            await exited(process, EXIT_REPORT_WAIT)
            await stderr_done.wait()
        state.returncode = process.returncode
        if not state.closing:
            state.exited = True
            on_exit()

    async def drain() -> None:
        # The session is gone: read on so the child never blocks on a full pipe.
        try:
            async for _chunk in stdout:
                pass
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        except RuntimeError:  # a read still pending elsewhere (a session torn down abruptly)
            logger.debug("[toolnexus] MCP server %s: stdout not drained", label)
        finally:
            with anyio.CancelScope(shield=True):
                if not stdout_done:
                    await report_exit()

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
            tg.start_soon(read_stderr)
            reader = _Reader(
                stdout,
                state=state,
                process=process,
                max_message=max_message,
                on_end=report_exit,
                on_abandon=lambda: tg.start_soon(drain),
            )
            writer = _Writer(process.stdin)
            try:
                yield reader, writer
            finally:
                state.closing = True
                with anyio.CancelScope(shield=True):
                    await writer.aclose()
                    await reader.aclose()
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
