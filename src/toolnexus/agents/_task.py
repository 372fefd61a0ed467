"""The `task` tool: how a model delegates a subtask to a named agent of its team."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

from toolnexus._aio import Signalled, until_signalled
from toolnexus.agents._constants import TASK_STATUS_DONE, TASK_STATUS_PENDING
from toolnexus.agents._defs import AgentDef
from toolnexus.agents._handle import Handle
from toolnexus.agents._results import SpawnError, TaskResult
from toolnexus.types import Tool, ToolContext, ToolResult

__all__ = ["TASK_SCHEMA", "Delegator", "make_task_tool", "task_output"]


class Delegator(Protocol):
    """What the `task` tool needs from the runtime that owns the calling handle."""

    @property
    def registry(self) -> Mapping[str, AgentDef]: ...

    def spawn(self, parent: Handle, def_name: str) -> Handle | SpawnError: ...

    async def run_turn(self, h: Handle, prompt: str | None = None) -> TaskResult: ...

    async def settled_result(self, child: Handle) -> TaskResult: ...

    async def close(self, h: Handle, *, force: bool = False, reason: str | None = None) -> None: ...

    def log(self, h: Handle, text: str) -> None: ...


TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"agent": {"type": "string"}, "prompt": {"type": "string"}},
    "required": ["agent", "prompt"],
}
_DESCRIPTION = "Delegate a subtask to an isolated subagent. Available agents — "


def task_output(name: str, result: TaskResult) -> ToolResult:
    """A finished child's result as the delegating model reads it."""
    text = result.text if result.status == TASK_STATUS_DONE else f"[{result.status}] {result.text}"
    return ToolResult(
        text,
        result.is_error,
        {
            "agent": name,
            "turns": result.turns,
            "totalTokens": result.total_tokens,
            "status": result.status,
        },
    )


def make_task_tool(rt: Delegator, caller: Handle) -> Tool:
    team = sorted(caller.defn.task_targets or ())
    registry = rt.registry
    listing = "; ".join(
        f"{name}: {registry[name].description}" for name in team if name in registry
    )

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        agent = str(args.get("agent", ""))
        prompt = str(args.get("prompt", ""))
        if agent not in team:
            members = ", ".join(team) or "none"
            return ToolResult(f'agent "{agent}" not in this agent\'s team ({members})', True)
        turn = caller.runtime_state.turn
        key = f"{agent}:{prompt}"
        child: Handle | None = None
        if turn is not None and turn.reattach is not None:
            seen = sum(1 for k, _ in turn.spawns if k == key)
            earlier = [c for k, c in turn.reattach if k == key]
            if seen < len(earlier):
                child = earlier[seen]
                rt.log(caller, f"task replay → REATTACH to {child.id} (state {child.state})")
        fresh = child is None
        if child is None:
            spawned = rt.spawn(caller, agent)
            if isinstance(spawned, SpawnError):
                return ToolResult(spawned.error, True)
            child = spawned
        if turn is not None:
            turn.spawns.append((key, child))
        work = rt.run_turn(child, prompt) if fresh else rt.settled_result(child)
        try:
            result = await until_signalled(work, ctx.signal)
        except (asyncio.CancelledError, Signalled) as abandoned:
            # Abandoned with the caller's turn: the child it started must not keep running.
            await asyncio.shield(rt.close(child, force=True, reason="interrupted"))
            if isinstance(abandoned, asyncio.CancelledError):
                raise
            return ToolResult(
                "[interrupted] interrupted", True, {"agent": agent, "status": "interrupted"}
            )
        if result.status == TASK_STATUS_PENDING and result.pending is not None:
            return ToolResult(result.pending.prompt, True, {"pending": result.pending})
        await rt.close(child)
        return task_output(agent, result)

    return Tool(
        "task",
        _DESCRIPTION + listing,
        TASK_SCHEMA,
        "native",
        execute,
    )
