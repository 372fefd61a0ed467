"""Personas: an agent whose home folder is its soul, memory and heartbeat."""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolnexus._aio import call_maybe_async
from toolnexus._log import warn
from toolnexus.agents._agent import Agent, check_runtime_options
from toolnexus.agents._constants import TASK_STATUS_PENDING
from toolnexus.agents._handle import Handle
from toolnexus.agents._results import InboxItem, SpawnError, TaskResult
from toolnexus.agents._runtime import AgentRuntime
from toolnexus.errors import AgentError, ConfigError, ConfigFileNotFound, ConfigTypeError
from toolnexus.types import Tool, ToolContext, ToolResult, error_message, sanitize

__all__ = [
    "BOOTSTRAP_ORDER",
    "HEARTBEAT_OK",
    "HEARTBEAT_PROMPT",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "StartedAgent",
    "agent_from_dir",
    "compose_soul",
    "memory_tool",
    "start_agent",
]

BOOTSTRAP_ORDER = [
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
]
HEARTBEAT_OK = "HEARTBEAT_OK"
HEARTBEAT_PROMPT = (
    "Heartbeat. Read your HEARTBEAT.md section and follow it. "
    "If nothing needs attention, reply HEARTBEAT_OK."
)
MAX_BOOTSTRAP_FILE_BYTES = 2097152
_CAP = MAX_BOOTSTRAP_FILE_BYTES
_TRUNCATED = "\n[truncated: exceeds 2 MB bootstrap cap]"


def _read_capped(path: Path) -> str:
    with path.open("rb") as f:
        raw = f.read(_CAP + 1)
    if len(raw) <= _CAP:
        return raw.decode("utf-8", "replace")
    cut = raw[: _CAP - _broken_tail(raw[:_CAP])]
    return cut.decode("utf-8", "replace") + _TRUNCATED


def _broken_tail(data: bytes) -> int:
    """How many bytes at the end of `data` start a UTF-8 character the cut left incomplete."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII): is its sequence complete?
            if byte < 0x80:
                need = 1
            elif byte >> 5 == 0b110:
                need = 2
            elif byte >> 4 == 0b1110:
                need = 3
            else:
                need = 4
            return back if back < need else 0
    return 0


def compose_soul(dir: str | os.PathLike[str]) -> tuple[str, list[str]]:
    """The system prompt composed from a persona folder's bootstrap files, and which were found.

    Each present file of `BOOTSTRAP_ORDER` becomes `## <file>` then its text; files over 2 MiB
    are cut (the file itself is untouched).
    """
    home = Path(dir)
    if not home.is_dir():
        raise ConfigFileNotFound(f"persona folder not found: {home}")
    sections: list[str] = []
    found: list[str] = []
    for name in BOOTSTRAP_ORDER:
        path = home / name
        if path.is_file():
            found.append(name)
            sections.append(f"## {name}\n\n{_read_capped(path).strip()}")
    return "\n\n".join(sections), found


_file_locks: dict[str, threading.Lock] = {}
_file_locks_guard = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    key = str(path.resolve())
    with _file_locks_guard:
        return _file_locks.setdefault(key, threading.Lock())


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with _suppress():
            os.unlink(tmp)
        raise


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


_MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["add", "replace", "remove"]},
        "target": {"type": "string", "enum": ["self", "user"], "default": "self"},
        "text": {"type": "string"},
        "with": {"type": "string"},
    },
    "required": ["action", "text"],
}
_MEMORY_FILES = {"self": "MEMORY.md", "user": "USER.md"}


def _apply_memory(home: Path, action: str, target: str, text: str, new: str) -> ToolResult:
    file_name = _MEMORY_FILES[target]
    path = home / file_name
    with _lock_for(path):
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        if action == "add":
            updated = (current.rstrip() + "\n- " + text + "\n").lstrip()
        else:
            if text not in current:
                return ToolResult(f"not found: {text}", True)
            updated = current.replace(text, new if action == "replace" else "")
        home.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, updated)
    return ToolResult(f"ok ({action} → {file_name}); loads next session")


def memory_tool(dir: str | os.PathLike[str]) -> Tool:
    """The `memory` tool over a persona folder: add/replace/remove lines of `MEMORY.md`
    (`target="self"`) or `USER.md` (`target="user"`); writes load next session."""
    home = Path(dir)

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        action = args.get("action")
        target = args.get("target", "self") or "self"
        text = args.get("text")
        if action not in ("add", "replace", "remove"):
            return ToolResult(f"unknown action: {action}", True)
        if target not in _MEMORY_FILES:
            return ToolResult(f"unknown target: {target}", True)
        if not isinstance(text, str) or not text:
            return ToolResult("text is required", True)
        new = args.get("with")
        return await asyncio.to_thread(
            _apply_memory, home, action, target, text, new if isinstance(new, str) else ""
        )

    return Tool(
        "memory",
        "Save durable notes: add, replace or remove text in your memory (target self, "
        "MEMORY.md) or in what you know about the user (target user, USER.md). "
        "Writes load next session; this session's prompt does not change.",
        _MEMORY_SCHEMA,
        "native",
        execute,
    )


def agent_from_dir(
    dir: str | os.PathLike[str],
    *,
    name: str | None = None,
    does: str | None = None,
    memory: bool = True,
    tools: Sequence[Tool] | None = None,
    **spec: Any,
) -> Agent:
    """An agent whose soul is composed from `dir` at every session start (a frozen snapshot
    per session), with the `memory` tool unless `memory=False`."""
    if "soul" in spec or "soul_file" in spec:
        raise ConfigTypeError(
            "agent_from_dir() composes the soul from the folder: no soul=/soul_file="
        )
    home = Path(dir)
    soul, _ = compose_soul(home)
    uses = dict(spec.pop("uses", None) or {})
    all_tools = [*(tools or ()), *(uses.get("tools") or ())]
    if memory:
        all_tools.append(memory_tool(home))
    uses["tools"] = all_tools
    persona = _Persona(
        name if name is not None else sanitize(home.resolve().name)[:64],
        does=does if does is not None else f"persona agent from {dir}",
        uses=uses,
        soul=soul,
        **spec,
    )
    persona.home = str(home)
    return persona


class _Persona(Agent):
    """An agent whose soul is composed anew from its home folder at every session start."""

    def session_soul(self) -> str:
        assert self.home is not None  # agent_from_dir sets it
        return compose_soul(Path(self.home))[0]


class StartedAgent:
    """A long-lived agent under its own runtime; `await stop()` ends the beat and the tree."""

    def __init__(self, handle: Handle, rt: AgentRuntime, stop: Callable[[], Any]) -> None:
        self.handle = handle
        self.rt = rt
        self._stop = stop

    async def stop(self) -> None:
        """Cancel the heartbeat, then close the runtime's whole tree."""
        await call_maybe_async(self._stop)

    def __repr__(self) -> str:
        return f"<StartedAgent {self.handle.id} {self.handle.state}>"


def start_agent(
    agent: Agent,
    *,
    every_ms: float | None = None,
    on_report: Callable[[str], Any] | None = None,
    **runtime_options: Any,
) -> StartedAgent:
    """Spawn `agent` in a new runtime (inside a running event loop); with `every_ms`, post a
    `tick` every interval and wake it with the heartbeat prompt whenever it is idle."""
    check_runtime_options(runtime_options, "start_agent")
    if every_ms is not None and (isinstance(every_ms, bool) or every_ms <= 0):
        raise ConfigError(f"start_agent: every_ms must be > 0, not {every_ms!r}")
    asyncio.get_running_loop()
    rt = AgentRuntime(registry=agent.registry(), **runtime_options)
    handle = rt.spawn(rt.root, agent.name)
    if isinstance(handle, SpawnError):
        raise AgentError(f"start_agent: {handle.error}")
    clock = rt.clock
    state: dict[str, Any] = {"timer": None, "stopped": False}
    reports: set[asyncio.Task[None]] = set()

    async def report(future: asyncio.Future[TaskResult]) -> None:
        result = await future
        if result.is_error:
            if result.status not in ("closed", "interrupted"):
                warn(f"agent {agent.name}: heartbeat turn ended {result.status}: {result.text}")
            return
        if result.status == TASK_STATUS_PENDING or HEARTBEAT_OK in result.text:
            return
        if on_report is not None:
            try:
                await call_maybe_async(on_report, result.text)
            except Exception as exc:
                warn(f"agent {agent.name}: on_report raised: {error_message(exc)}")

    def beat() -> None:
        if state["stopped"]:
            return
        state["timer"] = clock.call_later(every_ms / 1000, beat)  # type: ignore[operator]
        rt.post(handle, InboxItem(from_="clock", channel="timer", text="tick"))
        if handle.at_rest:
            _, future = rt.enqueue(handle, HEARTBEAT_PROMPT)
            if future is not None:
                task = asyncio.ensure_future(report(future))
                reports.add(task)
                task.add_done_callback(reports.discard)

    if every_ms is not None:
        state["timer"] = clock.call_later(every_ms / 1000, beat)

    async def stop() -> None:
        state["stopped"] = True
        if state["timer"] is not None:
            state["timer"].cancel()
        await rt.close(rt.root)
        if reports:
            await asyncio.wait(list(reports))

    return StartedAgent(handle=handle, rt=rt, stop=stop)
