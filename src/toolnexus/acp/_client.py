"""One ACP agent child process and its warm session, as a `generate(request)` model.

The connection runs on an event loop of its own, in a daemon thread: `load_acp` and `close` are
plain calls (the published surface is synchronous), and `generate` is a coroutine that awaits
the turn from whatever loop the caller runs (cancelling it sends `session/cancel`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from toolnexus._aio import as_async
from toolnexus._extras import extra_hint
from toolnexus._log import warn
from toolnexus._proctree import ProcessTree
from toolnexus.errors import ConfigError, SpawnError, ToolnexusError

__all__ = [
    "ACPClient",
    "ACPError",
    "ACPOptions",
    "ACPPermissionRequest",
    "ACPPermissionTimeoutError",
    "load_acp",
]

T = TypeVar("T")

# One JSON-RPC line may be at most this long (the SDK's reader refuses longer ones).
_LINE_LIMIT = 16 * 1024 * 1024
# How long a cancelled turn waits for the agent's `cancelled` reply before the tree is killed.
_CANCEL_GRACE = 2.0
_TERM_GRACE = 0.5


class ACPError(ToolnexusError, RuntimeError):
    """An ACP agent failed: a JSON-RPC error reply, an agent that exited, refused or flooded."""


class ACPPermissionTimeoutError(ACPError, TimeoutError):
    """A turn got no `session/prompt` reply within `ACPOptions.permission_timeout`; the agent's
    processes were ended."""


@dataclass(frozen=True)
class ACPPermissionRequest:
    """What an agent asks leave for (`session/request_permission`), given to the host's policy.

    `options` maps each option id to its kind (`allow_once`, `allow_always`, `reject_once`,
    `reject_always`), in the agent's order."""

    session_id: str
    tool_call_id: str
    title: str
    options: Mapping[str, str]


PermissionPolicy = Callable[[ACPPermissionRequest], "str | Awaitable[str | None] | None"]


@dataclass
class ACPOptions:
    """Configuration of one ACP session.

    `permission_timeout` bounds each turn (seconds). `permission` is the host's policy: it
    returns the option id to answer with, or `None` to refuse; without one every request is
    refused, and each refusal's reason is logged and kept in `ACPClient.refusals`.
    `cwd` is made absolute (agents reject a relative one)."""

    command: str
    args: list[str] = field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] | None = None
    protocol_version: int = 1
    permission_timeout: float = 5.0
    mode: str | None = None
    permission: PermissionPolicy | None = None
    start_timeout: float = 30.0
    max_reply_chars: int = 4_000_000


class _Turn:
    """The message chunks of the turn in progress, bounded."""

    def __init__(self, limit: int) -> None:
        self.chunks: list[str] = []
        self.size = 0
        self.limit = limit
        self.overflow = asyncio.Event()
        self.refused: list[str] = []

    def add(self, text: str) -> None:
        self.size += len(text)
        if self.size > self.limit:
            self.overflow.set()
        else:
            self.chunks.append(text)


class _Host:
    """The client side the SDK calls: session updates and permission requests."""

    def __init__(
        self,
        current: Callable[[], tuple[_Turn | None, str]],
        answer_permission: Callable[[list[Any], str, Any], Awaitable[Any]],
    ) -> None:
        self._current = current  # the turn in progress (if any) and the session it belongs to
        self._answer_permission = answer_permission

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        turn, current_session = self._current()
        if turn is None or session_id != current_session:
            return
        # Only the agent's message forms the reply: thoughts, plans and tool narration never do.
        if getattr(update, "session_update", None) != "agent_message_chunk":
            return
        text = getattr(update.content, "text", None)
        if isinstance(text, str):
            turn.add(text)

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> Any:
        return await self._answer_permission(options, session_id, tool_call)

    def on_connect(self, conn: Any) -> None:
        pass


class ACPClient:
    """One warm ACP session: one child process tree, one `session_id`, many turns.

    Made by `load_acp`. `generate` is what `create_in_process_client(generate=...)` takes."""

    def __init__(self, opts: ACPOptions) -> None:
        self.options = opts
        self.session_id = ""
        #: Why each permission request was refused, oldest first.
        self.refusals: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="toolnexus-acp")
        self._thread.daemon = True
        self._thread.start()
        self._process: asyncio.subprocess.Process | None = None
        self._tree = ProcessTree()
        self._conn: Any = None
        self._turn: _Turn | None = None
        self._lock: asyncio.Lock | None = None
        self._ended: str | None = None  # why the session can take no more turns
        self._sent: list[Any] = []  # the messages the session already holds
        self._running: dict[object, asyncio.Task[Any]] = {}  # turns by their caller's ticket
        self._cwd = os.path.abspath(opts.cwd or os.getcwd())
        self._policy = as_async(opts.permission) if opts.permission is not None else None

    def __repr__(self) -> str:
        state = "alive" if self.is_alive() else "ended"
        return f"<ACPClient {self.options.command!r} session={self.session_id!r} {state}>"

    # -- the host's side (any thread, any loop) ------------------------------------------------

    def _handshake(self) -> ACPClient:
        """Open the session, blocking until it is ready; the client is closed again when the
        handshake fails."""
        try:
            asyncio.run_coroutine_threadsafe(self._connect(), self._loop).result()
        except BaseException:
            self.close()
            raise
        return self

    def _submit(self, coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        """One `session/prompt` on the warm session: `{"content": reply}`, the reply being the
        agent's message chunks only. Cancelling the await sends `session/cancel`."""
        if self._loop.is_closed():
            raise ACPError("the ACP session has ended (closed)")
        ticket = object()
        turn = self._submit(self._prompt(request, ticket))
        try:
            return await asyncio.shield(turn)
        except asyncio.CancelledError:
            # Wait until the agent answered `session/cancel` (or was ended) before giving up.
            with contextlib.suppress(BaseException):
                await asyncio.shield(self._submit(self._interrupt(ticket)))
            raise

    def is_alive(self) -> bool:
        """True while the child process runs and the session takes turns."""
        return (
            self._ended is None and self._process is not None and self._process.returncode is None
        )

    def close(self) -> None:
        """End the child's whole process tree and the connection's thread. Idempotent."""
        if not self._thread.is_alive():
            return
        if threading.current_thread() is self._thread:
            raise ACPError("ACPClient.close() cannot be called from the session's own thread")
        future = asyncio.run_coroutine_threadsafe(self._close(), self._loop)
        with contextlib.suppress(Exception):
            future.result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def aclose(self) -> None:
        """`close()` without blocking the caller's event loop."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> ACPClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ACPClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the session's loop ------------------------------------------------------------------

    async def _connect(self) -> None:
        import acp

        opts = self.options
        cwd = self._cwd
        try:
            self._process = await asyncio.create_subprocess_exec(
                opts.command,
                *opts.args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self._tree.env(opts.env),
                cwd=cwd,
                start_new_session=True,
                limit=_LINE_LIMIT,
            )
        except OSError as exc:
            if exc.filename == cwd:
                raise SpawnError(f'"cwd" {cwd} is not a directory') from None
            raise SpawnError(f'cannot start "{opts.command}": {exc.strerror or exc}') from None
        assert self._process.stdin is not None and self._process.stdout is not None
        self._lock = asyncio.Lock()
        self._conn = acp.connect_to_agent(
            cast(
                "acp.Client",
                _Host(lambda: (self._turn, self.session_id), self._answer_permission),
            ),
            self._process.stdin,
            self._process.stdout,
        )
        try:
            async with asyncio.timeout(opts.start_timeout):
                await self._call(
                    "initialize",
                    self._conn.initialize(
                        protocol_version=opts.protocol_version,
                        client_capabilities=acp.schema.ClientCapabilities(),
                        client_info=acp.schema.Implementation(name="toolnexus", version=_version()),
                    ),
                )
                session = await self._call(
                    "session/new", self._conn.new_session(cwd=cwd, mcp_servers=[])
                )
                self.session_id = session.session_id
                if opts.mode is not None:
                    await self._call(
                        "session/set_mode",
                        self._conn.set_session_mode(session_id=self.session_id, mode_id=opts.mode),
                    )
        except TimeoutError:
            await self._shutdown("start timed out")
            raise ACPPermissionTimeoutError(
                f'the ACP agent "{opts.command}" did not complete its handshake within '
                f"{opts.start_timeout:g}s; its processes were ended"
            ) from None
        except BaseException:
            await self._shutdown("start failed")
            raise

    async def _call(self, method: str, call: Awaitable[T]) -> T:
        """An SDK request, its failures said as `ACPError`s naming the method."""
        import acp

        try:
            return await call
        except acp.RequestError as exc:
            raise ACPError(
                f"the ACP agent answered {method} with error {exc.code}: {exc}"
            ) from None
        except ConnectionError:
            code = await self._exit_code()
            raise ACPError(
                f'the ACP agent "{self.options.command}" exited (status {code}) '
                f"before answering {method}"
            ) from None

    async def _exit_code(self) -> int | None:
        assert self._process is not None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_TERM_GRACE):
                return await self._process.wait()
        return self._process.returncode

    async def _close(self) -> None:
        await self._shutdown("closed")
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    async def _interrupt(self, ticket: object) -> None:
        task = self._running.get(ticket)
        if task is not None:
            task.cancel()
            await asyncio.wait({task})

    async def _prompt(self, request: dict[str, Any], ticket: object) -> dict[str, Any]:
        task = asyncio.current_task()
        assert task is not None
        self._running[ticket] = task
        try:
            return await self._prompt_locked(request)
        finally:
            del self._running[ticket]

    async def _prompt_locked(self, request: dict[str, Any]) -> dict[str, Any]:
        import acp

        assert self._lock is not None
        async with self._lock:
            if self._ended is not None:
                raise ACPError(f"the ACP session has ended ({self._ended})")
            messages = list(request.get("messages") or ())
            text = _render(messages, self._sent)
            turn = self._turn = _Turn(self.options.max_reply_chars)
            prompt = asyncio.ensure_future(
                self._call(
                    "session/prompt",
                    self._conn.prompt(session_id=self.session_id, prompt=[acp.text_block(text)]),
                )
            )
            overflow = asyncio.ensure_future(turn.overflow.wait())
            try:
                done, _ = await asyncio.wait(
                    {prompt, overflow},
                    timeout=self.options.permission_timeout,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if prompt in done:
                    response = prompt.result()
                elif overflow in done:
                    await self._shutdown("reply too long")
                    raise ACPError(
                        f"the ACP agent's reply exceeded {self.options.max_reply_chars} "
                        "characters; its processes were ended"
                    )
                else:
                    await self._shutdown("turn timed out")
                    raise ACPPermissionTimeoutError(
                        "the ACP agent gave no session/prompt reply within "
                        f"{self.options.permission_timeout:g}s; its processes were ended"
                    )
            except asyncio.CancelledError:
                await self._cancel(prompt)
                raise
            except ACPError as exc:
                if not self.is_alive():
                    self._ended = self._ended or str(exc)
                raise
            finally:
                overflow.cancel()
                prompt.cancel()
                # Its failure, if any, was said above; it must not be reported again on exit.
                prompt.add_done_callback(_swallow)
                self._turn = None
            self._sent = messages
            stop = response.stop_reason
            if stop in ("refusal", "cancelled"):
                why = f"; refused permission: {'; '.join(turn.refused)}" if turn.refused else ""
                raise ACPError(f"the ACP agent ended the turn with stop reason {stop!r}{why}")
            return {"content": "".join(turn.chunks)}

    async def _cancel(self, prompt: asyncio.Future[Any]) -> None:
        """`session/cancel` for a turn the host gave up on; the tree ends if the agent does not
        answer `cancelled` in time (a later turn would read this one's leftovers)."""
        with contextlib.suppress(Exception):
            await self._conn.cancel(session_id=self.session_id)
        with contextlib.suppress(BaseException):
            async with asyncio.timeout(_CANCEL_GRACE):
                await asyncio.shield(prompt)
                return
        await self._shutdown("a cancelled turn was not answered")

    async def _answer_permission(self, options: list[Any], session_id: str, tool_call: Any) -> Any:
        from acp.schema import (
            AllowedOutcome,
            DeniedOutcome,
            RequestPermissionResponse,
        )

        kinds = {o.option_id: str(o.kind) for o in options}
        title = getattr(tool_call, "title", None) or getattr(tool_call, "tool_call_id", "")
        asked = ACPPermissionRequest(
            session_id=session_id,
            tool_call_id=str(getattr(tool_call, "tool_call_id", "")),
            title=str(title),
            options=kinds,
        )
        chosen: str | None = None
        if self._policy is None:
            reason = "no permission policy (ACPOptions(permission=...) decides)"
        else:
            try:
                chosen = await self._policy(asked)
            except Exception as exc:
                reason = f"the permission policy raised {type(exc).__name__}"
            else:
                if chosen is None:
                    reason = "the permission policy refused"
                elif chosen not in kinds:
                    reason = f"the permission policy chose {chosen!r}, not one of the options"
                    chosen = None
        if chosen is not None:
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=chosen)
            )
        refusal = f'"{asked.title}": {reason}'
        self.refusals.append(refusal)
        if self._turn is not None:
            self._turn.refused.append(refusal)
        warn(f"ACP agent permission request refused: {refusal}")
        reject = next((i for i, k in kinds.items() if k.startswith("reject")), None)
        if reject is not None:
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=reject)
            )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def _shutdown(self, why: str) -> None:
        """Close the connection and end the child's whole tree (idempotent)."""
        self._ended = self._ended or why
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        await self._tree.kill(process.pid, term_grace=_TERM_GRACE)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_TERM_GRACE):
                await process.wait()


def load_acp(opts: ACPOptions) -> ACPClient:
    """Start the ACP agent, complete `initialize` -> `session/new` (-> `session/set_mode`), and
    return the warm `ACPClient`. Blocking: from async code, `await asyncio.to_thread(load_acp,
    opts)`. Raises `SpawnError` when the command cannot start, `ACPError` when the handshake
    fails (its processes ended)."""
    try:
        import acp  # noqa: F401
    except ImportError:
        raise ConfigError(f"toolnexus.acp needs the ACP SDK: {extra_hint('acp')}") from None
    if not isinstance(opts, ACPOptions):
        raise ConfigError(f"load_acp() takes ACPOptions, not {type(opts).__name__}")
    return ACPClient(opts)._handshake()


def _swallow(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _version() -> str:
    from toolnexus._version import __version__

    return __version__


def _render(messages: list[Any], sent: list[Any]) -> str:
    """The prompt text of one turn. The session already holds what earlier turns sent, so only
    the messages after them are sent; a transcript that does not continue them is sent whole,
    marked as replacing everything earlier."""
    if sent and messages[: len(sent)] == sent:
        fresh = messages[len(sent) :]
        # The agent's own replies are already in its session.
        while fresh and isinstance(fresh[0], Mapping) and fresh[0].get("role") == "assistant":
            if fresh[0].get("tool_calls"):
                break
            fresh = fresh[1:]
        return _transcript(fresh)
    text = _transcript(messages)
    if sent:
        return "[This conversation replaces everything earlier in this session.]\n\n" + text
    return text


def _transcript(messages: list[Any]) -> str:
    parts = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = str(message.get("role") or "user")
        content = _text(message.get("content"))
        calls = message.get("tool_calls") or ()
        for call in calls:
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            content += f"\n(called {function.get('name')} with {function.get('arguments')})"
        if role == "user" and len(messages) == 1:
            return content
        parts.append(f"[{role}]\n{content.strip()}")
    return "\n\n".join(parts)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""
