"""What hosts observe of agent turns without OpenTelemetry: `current_agent()` in hooks, metric
callbacks and tools, and the budgets charged for turns that end without a result."""

from __future__ import annotations

import asyncio
from typing import Any

from agents_driver import load, model_of, registry_of

from toolnexus.agents import AgentIdentity, AgentRuntime, Budget, Handle, current_agent
from toolnexus.types import Tool

WORLD = load("world.json")


async def test_hooks_metrics_and_tools_know_the_agent_of_their_turn() -> None:
    seen: list[tuple[str, str, str | None]] = []

    def who() -> str | None:
        identity = current_agent()
        return None if identity is None else identity.id

    def on_metric(event: dict[str, Any]) -> None:
        seen.append(("metric", event["event"], who()))

    async def before_tool(event: dict[str, Any]) -> None:
        seen.append(("before_tool", event["name"], who()))

    registry = registry_of(WORLD)
    rt = AgentRuntime(
        registry=registry,
        in_process=model_of(WORLD),
        on_metric=on_metric,
        hooks={"before_tool": before_tool},
    )
    h = rt.spawn(rt.root, "coordinator")
    assert isinstance(h, Handle)
    result = await rt.run_turn(h, "answer using two lookups")
    assert result.status == "done", result.text
    assert current_agent() is None  # outside any turn
    parent, one, two = "root/coordinator.1", f"{h.id}/explore.1", f"{h.id}/explore.2"
    mine = [s for s in seen if s[2] == parent]
    assert [s[:2] for s in mine] == [
        ("metric", "llm"),
        ("before_tool", "task"),
        ("before_tool", "task"),
        ("metric", "tool"),
        ("metric", "tool"),
        ("metric", "llm"),
        ("metric", "run"),
    ]
    for child in (one, two):
        assert [s[:2] for s in seen if s[2] == child] == [
            ("metric", "llm"),
            ("before_tool", "lookup"),
            ("metric", "tool"),
            ("metric", "llm"),
            ("metric", "run"),
        ]
    assert {s[2] for s in seen} == {parent, one, two}
    # the metric events themselves are the client's, with nothing added
    assert all("agent" not in str(s[1]) for s in seen)
    await rt.close(rt.root)


def looper_runtime(lookup: Any) -> AgentRuntime:
    """The scripted world with `looper`'s `lookup` (which it always calls) replaced."""
    tool = Tool("lookup", "look up", {"type": "object", "properties": {}}, "native", lookup)
    return AgentRuntime(
        registry=registry_of(WORLD, looper={"tools": [tool]}), in_process=model_of(WORLD)
    )


async def test_a_tool_sees_its_agent() -> None:
    identities: list[AgentIdentity | None] = []

    def probe(args: dict[str, Any], ctx: Any) -> str:
        identities.append(current_agent())
        return "probed"

    rt = looper_runtime(probe)
    h = rt.spawn(rt.root, "looper", Budget(max_turns=2))
    assert isinstance(h, Handle)
    await rt.run_turn(h, "go")
    assert identities and set(identities) == {AgentIdentity("looper", "root/looper.1")}
    await rt.close(rt.root)


async def test_an_interrupted_turn_is_charged_for_the_calls_it_made() -> None:
    started = asyncio.Event()

    async def stuck(args: dict[str, Any], ctx: Any) -> str:
        started.set()
        await asyncio.Event().wait()  # until the interrupt cancels it
        return "never"

    rt = looper_runtime(stuck)
    parent = rt.spawn(rt.root, "coordinator", Budget(max_tokens=100))
    assert isinstance(parent, Handle)
    h = rt.spawn(parent, "looper")
    assert isinstance(h, Handle)
    rt.wake(h, "go")
    await asyncio.wait_for(started.wait(), 5)
    rt.interrupt(h)
    result = await asyncio.wait_for(rt.wait(h), 5)
    assert result.status == "interrupted"
    # one LLM call of 30 + 10 tokens went out before the interrupt: it is spent
    assert (h.own_total, h.usage_total, h.turns_total) == (40, 40, 1)
    assert (result.own_tokens, result.total_tokens, result.turns) == (40, 40, 1)
    assert parent.usage_total == 40
    assert parent.pool.tokens == 60
    await rt.close(rt.root)
