"""The runtime scenarios of `runtime.json`, run by the generic driver on a scripted model."""

from __future__ import annotations

from typing import Any

import pytest
from agents_checks import check, find
from agents_driver import load, model_of, registry_of, run_steps, transitions

from toolnexus.agents import AgentRuntime, Handle
from toolnexus.agents._results import TaskResult
from toolnexus.types import Answer

FIXTURE = load("runtime.json")


def runtime_for(scenario: dict[str, Any], **options: Any) -> tuple[AgentRuntime, Any]:
    model = model_of(FIXTURE)
    registry = registry_of(FIXTURE, scenario.get("registryOverride"))
    return AgentRuntime(registry=registry, in_process=model, **options), model


@pytest.mark.parametrize("name", ["fan-out", "inline-escalation"])
async def test_run_scenarios(name: str) -> None:
    scenario = FIXTURE["scenarios"][name]
    rt, _ = runtime_for(scenario)
    entry = rt.spawn(rt.root, scenario["run"]["entry"])
    assert isinstance(entry, Handle)
    result = await rt.run_turn(entry, scenario["run"]["prompt"])
    await check(scenario["expect"], rt, result)
    await rt.close(rt.root)


async def test_durable_suspension_then_resume() -> None:
    scenario = FIXTURE["scenarios"]["durable-resume"]
    rt, _ = runtime_for(scenario)
    entry = rt.spawn(rt.root, scenario["run"]["entry"])
    assert isinstance(entry, Handle)
    first = await rt.run_turn(entry, scenario["run"]["prompt"])
    await check(scenario["phase1_expect"], rt, first)
    asker = find(rt, "root/approverParent.1/asker.1")
    tokens_before = asker.own_total
    assert first.pending is not None
    answer = Answer(id=first.pending.id, **scenario["resume"]["answer"])
    second = await rt.resume(answer)
    await check(scenario["phase2_expect"], rt, second)
    assert entry.state == "idle"
    assert asker.own_total > tokens_before
    assert await rt.conversation_store.get(entry.id)  # the parent's transcript is committed
    await rt.close(rt.root)


LIFECYCLE = load("lifecycle.json")


@pytest.mark.parametrize("name", list(LIFECYCLE["scenarios"]))
async def test_lifecycle_step_scenarios(name: str) -> None:
    scenario = LIFECYCLE["scenarios"][name]
    closed: list[str] = []
    model = model_of(LIFECYCLE)
    registry = registry_of(LIFECYCLE, peer={"on_close": lambda h, reason: closed.append(h.id)})
    rt = AgentRuntime(registry=registry, in_process=model)
    await run_steps(rt, scenario["steps"], model, check)
    expect = scenario.get("expect", {})
    if "onClose" in expect:
        assert closed == expect["onClose"]
    dummy = TaskResult("", False, "done")
    await check({"transitions": expect.get("transitions", {})}, rt, dummy)
    assert all(arrows.count("running→idle") <= 1 for arrows in transitions(rt.trace).values())
    await rt.close(rt.root)
