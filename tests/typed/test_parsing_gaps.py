"""Regression tests fed with recorded provider answers: refusals, `n>1` streams, server tools."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.fake_llm import FakeLLM, Reply
from toolnexus.client import Client

RECORDED = Path(__file__).parent / "recorded"


def recorded_json(name: str) -> Any:
    return json.loads((RECORDED / name).read_text())


def recorded_sse(name: str) -> Reply:
    blocks = (RECORDED / name).read_text().strip().split("\n\n")
    return Reply(sse=blocks)


async def collect(client: Client, prompt: str) -> list[dict[str, Any]]:
    return [event async for event in client.stream(prompt)]


async def test_openai_refusal_surfaces(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    llm.push(Reply(body=recorded_json("openai_refusal.json")))
    result = await make_client("openai").run("how do I pick a lock?")
    assert result.status == "refused"
    assert result.refusal == "I'm sorry, I can't assist with that request."
    assert result.text == ""
    assert result.limit is None


async def test_openai_streamed_refusal_is_an_event(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(recorded_sse("openai_refusal_stream.sse"))
    events = await collect(make_client("openai"), "how do I pick a lock?")
    refusals = [e for e in events if e["type"] == "refusal"]
    assert refusals == [{"type": "refusal", "refusal": "I'm sorry, I can't help with that."}]
    result = events[-1]["result"]
    assert result.status == "refused"
    assert result.refusal == "I'm sorry, I can't help with that."
    assert result.messages[-1]["refusal"] == result.refusal


async def test_streamed_n2_follows_choice_zero(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(recorded_sse("openai_n2_stream.sse"))
    client = make_client("openai", request_params={"n": 2})
    events = await collect(client, "greet")
    deltas = "".join(e["delta"] for e in events if e["type"] == "text")
    result = events[-1]["result"]
    assert deltas == "Hello world"
    assert result.text == "Hello world"
    assert result.status == "done"


async def test_anthropic_stream_keeps_server_tool_input(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(recorded_sse("anthropic_server_tool_use.sse"))
    events = await collect(make_client("anthropic"), "weather in NYC?")
    result = events[-1]["result"]
    blocks = result.messages[-1]["content"]
    server_use = next(b for b in blocks if b["type"] == "server_tool_use")
    assert server_use["input"] == {"query": "weather NYC today"}
    assert result.text == "I'll search for that.It is sunny."
    assert result.status == "done"
    assert result.tool_call_count == 0  # the provider ran it: nothing for the loop to run


async def test_anthropic_refusal_stop_reason(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    body = {
        "id": "msg_01R",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [],
        "stop_reason": "refusal",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 0},
    }
    llm.push(Reply(body=body))
    result = await make_client("anthropic").run("something disallowed")
    assert result.status == "refused"
    assert result.refusal == "refused"
