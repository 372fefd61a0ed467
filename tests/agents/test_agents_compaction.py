"""`compactor` and `estimate_tokens`: the exact split, tool-pair safety, wire behaviour."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents_driver import load

from toolnexus.agents import agent, compactor, estimate_tokens
from toolnexus.agents.compaction import FLUSH_REMINDER
from toolnexus.client import create_in_process_client

FIXTURE = load("compaction.json")


def _fill(value: Any, i: int) -> Any:
    if isinstance(value, str):
        if " + 'pad ' x 40" in value:
            return value.split(" + ")[0].replace("<i>", str(i)) + " " + "pad " * 40
        if " + 'data ' x 40" in value:
            return value.split(" + ")[0].replace("<i>", str(i)) + " " + "data " * 40
        return value.replace("<i>", str(i))
    if isinstance(value, dict):
        return {k: _fill(v, i) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, i) for v in value]
    return value


def transcript(groups: int) -> list[dict[str, Any]]:
    spec = FIXTURE["input"]
    messages: list[dict[str, Any]] = [{"role": "system", "content": spec["system"]}]
    for i in range(groups):
        messages.extend(_fill(m, i) for m in spec["group"])
    return messages


def summarize(older: list[dict[str, Any]]) -> str:
    return FIXTURE["summarizer"].replace("<N>", str(len(older)))


def test_the_generated_input_matches_its_documented_size() -> None:
    messages = transcript(FIXTURE["input"]["groups"])
    assert len(messages) == FIXTURE["input"]["expect"]["messages"]
    assert estimate_tokens(messages) == FIXTURE["input"]["expect"]["estimate"]


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=lambda c: json.dumps(c["options"]))
async def test_compaction_cases(case: dict[str, Any]) -> None:
    messages = transcript(case.get("groups", FIXTURE["input"]["groups"]))
    before = json.dumps(messages)
    hook = compactor(summarize=summarize, **case["options"])
    reply = await hook({"messages": messages, "tools": [], "model": "m", "turn": 0})
    expect = case["expect"]
    assert json.dumps(messages) == before  # the input list is never changed in place
    if expect.get("unchanged"):
        assert reply is None
        return
    assert reply is not None
    out = reply["messages"]
    assert len(out) == expect["messages"]
    assert out[0] == messages[0]
    assert out[1] == {
        "role": "system",
        "content": "[Summary of earlier conversation]\n" + expect["summary"],
    }
    tail_start = 3 if expect.get("reminderBeforeTail") else 2
    if expect.get("reminderBeforeTail"):
        assert out[2] == {"role": "system", "content": FLUSH_REMINDER}
    assert out[tail_start]["role"] == "user"
    if "tailStartsWith" in expect:
        assert out[tail_start]["content"].startswith(expect["tailStartsWith"])
    if "estimate" in expect:
        assert estimate_tokens(out) == expect["estimate"]
    ids = {c["id"] for m in out for c in m.get("tool_calls") or ()}
    assert all(m["tool_call_id"] in ids for m in out if m["role"] == "tool")  # no orphan


async def test_an_anthropic_tool_result_carrier_never_starts_the_tail() -> None:
    messages: list[dict[str, Any]] = []
    for i in range(6):
        messages.append({"role": "user", "content": f"ask {i} " + "x " * 50})
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "lookup", "input": {}}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * 80}],
            }
        )
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"ok {i}"}]})
    hook = compactor(max_tokens=200, keep_tail=120, summarize=lambda older: "S")
    reply = await hook({"messages": messages})
    assert reply is not None
    tail = reply["messages"][1:]
    first = tail[0]
    assert first["role"] == "user" and isinstance(first["content"], str)
    openai = [{"role": "user", "content": "q " * 100}, {"role": "assistant", "content": "a"}] * 4
    out = await compactor(max_tokens=100, keep_tail=60, summarize=lambda o: "S")(
        {"messages": openai}
    )
    assert out is not None and out["messages"][1]["content"].startswith("q")


def test_estimate_counts_media_parts_by_size_not_base64_length() -> None:
    big = "A" * 400000  # 300000 decoded bytes
    with_part = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "mimeType": "image/png", "data": big},
            ],
        }
    ]
    assert estimate_tokens(with_part) < 1000
    assert estimate_tokens(with_part) >= 400


async def test_end_to_end_a_long_tool_run_is_compacted() -> None:
    calls = {"n": 0}
    seen_summary = {"flag": False}

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if any(
            m["role"] == "system" and str(m["content"]).startswith("[Summary") for m in messages
        ):
            seen_summary["flag"] = True
        if calls["n"] < 6:
            calls["n"] += 1
            return {"tool_calls": [{"name": "pad", "arguments": {}}]}
        flag = "true" if seen_summary["flag"] else "false"
        return {"content": f"final (compacted={flag})"}

    from toolnexus import Tool, Toolkit

    pad = Tool(
        "pad", "pads", {"type": "object", "properties": {}}, "native", lambda a, c: "x " * 600
    )
    worker = agent(
        "worker",
        does="pads a lot",
        uses={"tools": [pad]},
        hooks={"before_llm": compactor(max_tokens=600, keep_tail=250, summarize=lambda o: "S")},
    )
    client = create_in_process_client(model="m", generate=generate, max_turns=20)
    loop = worker.loop(client, Toolkit(extra_tools=[pad]))
    outcome = await loop.run("go")
    assert outcome.status == "done"
    assert outcome.text == "final (compacted=true)"
    assert estimate_tokens(outcome.result.messages) < 4000
