"""The harness: `harness`, `Completion`/`run_gated`, `all_todos_done`, `guarded_hooks`, `Loop`."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from toolnexus import Toolkit, create_builtin_tools
from toolnexus.agents import (
    Completion,
    Verdict,
    agent,
    all_todos_done,
    guarded_hooks,
    harness,
    loop_unsupported,
)
from toolnexus.client import create_in_process_client
from toolnexus.types import ToolResult


def todo_model(plans: list[list[dict[str, Any]]]) -> Any:
    """Each attempt writes the next plan, then answers `done`."""
    state = {"attempt": 0}

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        last = request["messages"][-1]
        if last["role"] == "user":
            plan = plans[min(state["attempt"], len(plans) - 1)]
            state["attempt"] += 1
            return {"tool_calls": [{"name": "todowrite", "arguments": {"todos": plan}}]}
        return {"content": "done", "usage": {"prompt_tokens": 2, "completion_tokens": 1}}

    return generate


OPEN = [{"id": "1", "text": "write tests", "completed": False}]
CLOSED = [{"id": "1", "text": "write tests", "completed": True}]


def todo_toolkit() -> Toolkit:
    return Toolkit(builtin_tools=[t for t in create_builtin_tools() if t.name == "todowrite"])


def test_harness_returns_its_spec() -> None:
    assert harness(does="x", soul="y") == {"does": "x", "soul": "y"}
    assert loop_unsupported({"uses": {"tools": [1]}, "team": [2]}) == ["tools", "team"]
    assert loop_unsupported(agent("a", does="b")) == []


async def test_a_plain_loop_is_done_in_one_attempt() -> None:
    client = create_in_process_client(model="m", generate=lambda r: {"content": "hi"})
    outcome = await agent("plain", does="p").loop(client).run("hello")
    assert (outcome.status, outcome.attempts, outcome.stopped_by, outcome.text) == (
        "done",
        1,
        "",
        "hi",
    )


async def test_a_todo_gate_blocks_then_passes_and_sums_every_attempt() -> None:
    gate = Completion(all_todos_done, max_attempts=3)
    client = create_in_process_client(model="m", generate=todo_model([OPEN, CLOSED]))
    loop = agent("planner", does="plans", completion=gate).loop(client, todo_toolkit())
    outcome = await loop.run("do the work")
    assert outcome.status == "done" and outcome.attempts >= 2
    assert outcome.turns == 4 and outcome.result.tool_call_count == 2
    assert outcome.result.usage["total_tokens"] == 6  # 3 per answered attempt, both counted
    retry = outcome.result.messages[4]
    assert retry == {
        "role": "user",
        "content": "Your work did not verify: 1 item(s) still open: write tests. "
        "Fix it and finish.",
    }


async def test_an_always_red_gate_ends_incomplete_with_the_reason() -> None:
    gate = Completion(lambda r: Verdict(False, "never green"), max_attempts=2)
    client = create_in_process_client(model="m", generate=lambda r: {"content": "hi"})
    outcome = await agent("red", does="r", completion=gate).loop(client).run("go")
    assert outcome.status == "incomplete" and outcome.attempts == 2
    assert outcome.stopped_by == "completion.verify failed 2x: never green"
    assert outcome.result.limit == "completion"


async def test_no_plan_passes_and_an_item_left_open_keeps_failing() -> None:
    assert all_todos_done(type("R", (), {"tool_calls": []})()).ok
    gate = Completion(all_todos_done, max_attempts=2)
    client = create_in_process_client(model="m", generate=todo_model([OPEN, OPEN]))
    loop = agent("stuck", does="s", completion=gate).loop(client, todo_toolkit())
    outcome = await loop.run("go")
    assert outcome.status == "incomplete" and outcome.attempts == 2
    assert "write tests" in outcome.stopped_by


def test_completion_is_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="max_attempts must be an integer >= 1"):
        Completion(all_todos_done)
    with pytest.raises(ValueError, match=r"Completion\.verify is required"):
        Completion(None, 1)  # type: ignore[arg-type]


async def test_guarded_hooks_first_deny_wins_and_allow_reaches_the_prior_hook() -> None:
    calls: list[str] = []

    def prior(event: dict[str, Any]) -> Any:
        calls.append("prior")
        return None

    async def async_allow(event: dict[str, Any]) -> str:
        calls.append("async")
        return "allow"

    def deny(event: dict[str, Any]) -> str:
        calls.append("deny")
        return "policy: no"

    def later(event: dict[str, Any]) -> None:
        calls.append("later")

    event = {"name": "bash", "args": {}, "id": "1", "turn": 0}
    denied = guarded_hooks([async_allow, deny, later], {"before_tool": prior})
    reply = await denied["before_tool"](event)
    assert reply["result"] == ToolResult("denied: policy: no", True)
    assert calls == ["async", "deny"]
    calls.clear()
    allowed = guarded_hooks([async_allow, later], {"before_tool": prior})
    assert await allowed["before_tool"](event) is None
    assert calls == ["async", "later", "prior"]
    with pytest.raises(TypeError, match="int"):
        await guarded_hooks([lambda e: 3], None)["before_tool"](event)
    hooks = {"after_tool": prior}
    assert guarded_hooks([], hooks) is hooks

    class MethodHooks:
        def before_llm(self, event: dict[str, Any]) -> None:
            return None

        def after_tool(self, event: dict[str, Any]) -> None:
            return None

    kept = guarded_hooks([later], MethodHooks())
    assert set(kept) == {"before_llm", "after_tool", "before_tool"}


async def test_loop_model_override_is_for_one_run_and_turns_accumulate() -> None:
    models: list[str] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        models.append(request["model"])
        return {"content": "ok"}

    loop = agent("looped", does="l", model="configured").loop(
        {"model": "inherit", "base_url": "http://127.0.0.1:9/v1", "style": "openai"}
    )
    assert loop.client.model == "configured"
    await loop.aclose()
    client = create_in_process_client(model="configured", generate=generate)
    loop = agent("looped", does="l").loop(client)
    assert loop.status == "idle"
    await loop.run("one", model="override-model")
    await loop.run("two")
    assert models == ["override-model", "configured"]
    assert loop.turns == 2 and loop.status == "idle"


class Found(pydantic.BaseModel):
    city: str


def answers(*texts: str) -> Any:
    """An in-process model answering each user turn with the next text; records the requests."""
    sent: list[dict[str, Any]] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        sent.append(request["body"])
        return {"content": texts[min(len(sent), len(texts)) - 1]}

    generate.sent = sent  # type: ignore[attr-defined]
    return generate


async def test_the_gate_judges_the_agents_typed_output() -> None:
    generate = answers('{"city": "Lyon"}', '{"city": "Paris"}')
    client = create_in_process_client(model="m", generate=generate)
    gate = Completion(
        lambda r: Verdict(r.output.city == "Paris", f"{r.output.city} is not the capital"),
        max_attempts=2,
    )
    finder = agent("finder", does="finds", output_type=Found, completion=gate)
    outcome = await finder.loop(client).run("capital of France?")
    assert outcome.status == "done" and outcome.attempts == 2
    assert outcome.result.output == Found(city="Paris")
    retry = outcome.result.messages[2]
    assert retry["content"] == (
        "Your work did not verify: Lyon is not the capital. Fix it and finish."
    )
    assert all("response_format" in body for body in generate.sent)


async def test_runtime_agents_ask_for_their_own_output_type_never_the_hosts() -> None:
    generate = answers('{"city": "Paris"}')
    host = create_in_process_client(model="m", generate=generate, output_type=int)
    typed = await agent("finder", does="finds", output_type=Found).run("where?", client=host)
    assert typed.output == Found(city="Paris")
    assert generate.sent[-1]["response_format"]["json_schema"]["name"] == "Found"
    plain = await agent("talker", does="talks").run("hello", client=host)
    assert plain.status == "done" and plain.text == '{"city": "Paris"}'
    assert "response_format" not in generate.sent[-1]
