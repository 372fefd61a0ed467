"""Hooks and metrics on agent runs (H1–H7), guardrails with inherited hooks, delegated gates."""

from __future__ import annotations

from typing import Any

import pytest
from agents_driver import load, model_of, registry_of

from toolnexus.agents import (
    AgentRuntime,
    Completion,
    Handle,
    Verdict,
    agent,
    compactor,
)
from toolnexus.client import InMemoryConversationStore, create_in_process_client

FIXTURE = load("hooks.json")
SCENARIOS = {s["id"]: s for s in FIXTURE["scenarios"]}


class Recorder:
    def __init__(self) -> None:
        self.metrics: list[str] = []
        self.runtime_models: list[str] = []
        self.def_models: list[str] = []

    def hooks(self, kind: str, sink: list[str]) -> dict[str, Any]:
        def before_llm(event: dict[str, Any]) -> Any:
            if kind == "append-injected":
                injected = {"role": "user", "content": "INJECTED-BY-HOOK"}
                return {"messages": [*event["messages"], injected]}
            if kind == "raise":
                raise RuntimeError("route gate: refused")
            sink.append(event["model"])
            return None

        return {"before_llm": before_llm}


async def run_scenario(scenario: dict[str, Any]) -> tuple[Any, Any, Recorder, Any]:
    given, when = scenario["given"], scenario["when"]
    model = model_of(FIXTURE)
    rec = Recorder()
    extra: dict[str, dict[str, Any]] = {}
    for name, kind in given.get("defHooks", {}).items():
        extra.setdefault(name, {})["hooks"] = rec.hooks(kind, rec.def_models)
    store = InMemoryConversationStore()
    if "defCompactor" in given:
        spec = given["defCompactor"]
        summary = spec["summary"]
        hook = compactor(
            max_tokens=spec["max_tokens"], keep_tail=spec["keep_tail"], summarize=lambda o: summary
        )
        extra.setdefault(spec["agent"], {})["hooks"] = {"before_llm": hook}
    options: dict[str, Any] = {"store": store}
    if "runtimeHooks" in given:
        options["hooks"] = rec.hooks(given["runtimeHooks"], rec.runtime_models)
    if given.get("runtimeOnMetric"):
        options["on_metric"] = lambda e: rec.metrics.append(e["event"])
    rt = AgentRuntime(registry=registry_of(FIXTURE, **extra), in_process=model, **options)
    if "seed" in given:
        seed = given["seed"]
        messages: list[dict[str, Any]] = [{"role": "system", "content": seed["system"]}]
        for _ in range(seed["pairs"]):
            messages.append({"role": "user", "content": seed["user"] * seed["width"]})
            messages.append({"role": "assistant", "content": seed["assistant"] * seed["width"]})
        await store.save(f"root/{when['entry']}.1", messages)
    h = rt.spawn(rt.root, when["entry"])
    assert isinstance(h, Handle)
    result = await rt.run_turn(h, when["prompt"])
    return rt, result, rec, model


@pytest.mark.parametrize("sid", list(SCENARIOS))
async def test_agent_hook_scenarios(sid: str) -> None:
    scenario = SCENARIOS[sid]
    rt, result, rec, model = await run_scenario(scenario)
    expect = scenario["expect"]
    wire = model.requests[0]["messages"] if model.requests else []
    if "wireContains" in expect:
        assert any(m.get("content") == expect["wireContains"] for m in wire)
    if "metricEvents" in expect:
        assert rec.metrics == expect["metricEvents"]
    if "runtimeHookModels" in expect:
        assert rec.runtime_models == expect["runtimeHookModels"]
        assert rec.def_models == expect["defHookModels"]
    if "wireRoles" in expect:
        assert [m["role"] for m in wire] == expect["wireRoles"]
        assert wire[0]["content"] == "SOUL-VERBATIM"
        assert wire[1]["content"].endswith(expect["wireSummary"])
        assert wire[2]["content"] == scenario["when"]["prompt"]
    if "status" in expect:
        assert result.status == expect["status"], result
    if "text" in expect:
        assert result.text == expect["text"]
    if "requests" in expect:
        assert len(model.requests) == expect["requests"]
    if "storedMessages" in expect:
        stored = await rt.conversation_store.get(f"root/{scenario['when']['entry']}.1") or []
        assert len(stored) == expect["storedMessages"]
        has_summary = any(str(m.get("content", "")).startswith("[Summary") for m in stored)
        assert has_summary is expect["storedHasSummary"]
    await rt.close(rt.root)


async def test_a_raising_hook_propagates_from_loop_run() -> None:
    def refuse(event: dict[str, Any]) -> Any:
        raise RuntimeError("route gate: refused")

    requests: list[Any] = []
    client = create_in_process_client(
        model="m", generate=lambda r: requests.append(r) or {"content": "x"}
    )
    loop = agent("gate", does="g", hooks={"before_llm": refuse}).loop(client)
    with pytest.raises(RuntimeError, match="route gate"):
        await loop.run("hi")
    assert loop.status == "error" and requests == []


async def test_guardrails_keep_the_runtimes_hooks_and_apply_to_delegated_children() -> None:
    seen: list[str] = []

    def runtime_before_llm(event: dict[str, Any]) -> None:
        seen.append(event["model"])

    def no_lookups(event: dict[str, Any]) -> str | None:
        return "policy: no" if event["name"] == "lookup" else None

    attempts: list[str] = []

    def verify(result: Any) -> Verdict:
        attempts.append(result.text)
        return Verdict(result.turns > 2, "try again")  # turns are summed over attempts

    model = model_of(FIXTURE)
    extra = {"explore": {"guardrails": [no_lookups], "completion": Completion(verify, 2)}}
    rt = AgentRuntime(
        registry=registry_of(FIXTURE, **extra),
        in_process=model,
        hooks={"before_llm": runtime_before_llm},
    )
    coordinator = rt.spawn(rt.root, "coordinator")
    assert isinstance(coordinator, Handle)
    result = await rt.run_turn(coordinator, "answer using two lookups")
    assert result.status == "done"
    assert "found:denied: policy: no" in result.text
    assert "m-explore" in seen and "m-coordinator" in seen
    assert len(attempts) == 4  # both children were gated twice
    await rt.close(rt.root)
