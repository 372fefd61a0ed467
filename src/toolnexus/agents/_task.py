"""The `task` tool: how a model delegates a subtask to a named agent of its team."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from toolnexus.agents._constants import TASK_STATUS_DONE, TASK_STATUS_PENDING
from toolnexus.agents._results import SpawnError, TaskResult
from toolnexus.types import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from toolnexus.agents._handle import Handle
    from toolnexus.agents._runtime import AgentRuntime

__all__ = ["TASK_SCHEMA", "make_task_tool", "task_output"]

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


def make_task_tool(rt: AgentRuntime, caller: Handle) -> Tool:
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
        turn = caller._turn
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
        try:
            if fresh:
                result = await rt.run_turn(child, prompt)
            else:
                result = await rt.settled_result(child)
        except asyncio.CancelledError:
            # Abandoned with the caller's turn: the child it started must not keep running.
            await asyncio.shield(rt.close(child, force=True, reason="interrupted"))
            raise
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
