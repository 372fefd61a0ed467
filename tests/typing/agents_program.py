# pyright: strict
"""A user's program on `toolnexus.agents`: it must type-check under --strict."""

from __future__ import annotations

import asyncio
from typing import Any

from toolnexus import Tool, ToolContext, ToolResult
from toolnexus.agents import (
    AgentRuntime,
    Budget,
    Completion,
    Handle,
    HandleView,
    InboxItem,
    Outcome,
    PostResult,
    SpawnError,
    TaskResult,
    Verdict,
    agent,
    all_todos_done,
    compactor,
    estimate_tokens,
    guarded_hooks,
)
from toolnexus.types import Answer, Request


def lookup(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(f"data({args.get('q', '')})")


def generate(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "ok"}


def approve(request: Request) -> Answer:
    return Answer(id=request.id, ok=True)


def no_shell(event: dict[str, Any]) -> str | None:
    return "no shell" if event["name"] == "bash" else None


async def main() -> None:
    tool = Tool("lookup", "Look up.", {"type": "object", "properties": {}}, "native", lookup)
    explore = agent("explore", does="research", uses={"tools": [tool]}, budget=Budget(max_turns=3))
    lead = agent(
        "lead",
        does="leads",
        team=[explore],
        guardrails=[no_shell],
        completion=Completion(all_todos_done, max_attempts=2),
        hooks={"before_llm": compactor(max_tokens=4000, summarize=lambda older: "summary")},
    )
    result: TaskResult = await lead.run("go", in_process=generate, wait_for=approve)
    status: str = result.status
    tokens: int = result.total_tokens
    async with AgentRuntime(registry=lead.registry(), in_process=generate) as rt:
        spawned: Handle | SpawnError = rt.spawn(rt.root, "explore", Budget(max_tokens=100))
        if isinstance(spawned, Handle):
            posted: PostResult = rt.post(spawned, InboxItem("external", "external", "hi"))
            turn: TaskResult = await rt.run_turn(spawned, "look")
            views: list[HandleView] = rt.list()
            print(posted.ok, turn.text, len(views))
    outcome: Outcome = await explore.loop({"model": "m", "base_url": "http://127.0.0.1:9"}).run("x")
    verdict: Verdict = all_todos_done(outcome.result)
    hooks: Any = guarded_hooks([no_shell], None)
    print(status, tokens, verdict.ok, hooks, estimate_tokens([{"role": "user", "content": "x"}]))


if __name__ == "__main__":
    asyncio.run(main())
