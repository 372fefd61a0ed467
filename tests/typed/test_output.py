"""Typed final results against the local fake LLM: both wires, streamed and not, with re-asks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

import pydantic
import pytest

from support.client_helpers import add_tool, kit
from support.fake_llm import FakeLLM, call, text, tools
from toolnexus import OutputError
from toolnexus.client import Client, RunResult

STYLES = ("openai", "anthropic", "openai-responses")


class City(pydantic.BaseModel):
    name: str
    population: int


async def run(client: Client, streaming: bool, prompt: str, **kw: Any) -> RunResult[Any]:
    if not streaming:
        return await client.run(prompt, **kw)
    result: RunResult[Any] | None = None
    outputs = []
    async for event in client.stream(prompt, **kw):
        if event["type"] == "output":
            outputs.append(event["output"])
        elif event["type"] == "done":
            result = event["result"]
    assert result is not None
    assert outputs == ([result.output] if result.status == "done" else [])
    return result


def push_bad_then_good(llm: FakeLLM, style: str) -> None:
    if style == "openai":  # native structured output: the answer's text is the value
        llm.push(text('{"name": "Paris"}'), text('{"name": "Paris", "population": 2100000}'))
    else:  # a final-result tool
        llm.push(
            tools(call("final_result", {"name": "Paris", "population": "many"})),
            tools(call("final_result", {"name": "Paris", "population": 2100000})),
        )


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(
    "style", ["openai", "anthropic"]
)  # Responses: tests/typed/test_responses.py
async def test_invalid_then_valid_yields_typed_value_after_one_reask(
    llm: FakeLLM, make_client: Callable[..., Client], style: str, streaming: bool
) -> None:
    push_bad_then_good(llm, style)
    result = await run(make_client(style), streaming, "biggest French city?", output_type=City)
    assert result.status == "done"
    assert result.output == City(name="Paris", population=2100000)
    assert result.turns == 2
    first, second = (r.body for r in llm.requests)
    if style == "openai":
        fmt = first["response_format"]
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["name"] == "City"
        assert fmt["json_schema"]["strict"] is True
        assert fmt["json_schema"]["schema"]["additionalProperties"] is False
        retry = second["messages"][-1]
        assert retry["role"] == "user"
        assert "population" in retry["content"]
    else:
        assert [t["name"] for t in first["tools"]] == ["final_result"]
        answer = second["messages"][-1]["content"][0]
        assert answer["type"] == "tool_result"
        assert answer["is_error"] is True
        assert "population" in str(answer["content"])


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("style", STYLES)
async def test_retries_exhausted_end_incomplete_with_the_errors(
    llm: FakeLLM, make_client: Callable[..., Client], style: str, streaming: bool
) -> None:
    bad = text("no JSON here") if style == "openai" else tools(call("final_result", {}))
    llm.push(bad, bad)
    result = await run(make_client(style), streaming, "city?", output_type=City)
    assert result.status == "incomplete"
    assert result.limit == "output"
    assert result.output_errors
    assert len(llm.requests) == 2  # output_retries defaults to one re-ask
    with pytest.raises(OutputError, match="output"):
        _ = result.output


@pytest.mark.parametrize("style", STYLES)
async def test_tools_and_structured_output_in_one_run(
    llm: FakeLLM, make_client: Callable[..., Client], style: str
) -> None:
    final = (
        text('{"response": 5}')
        if style == "openai"
        else tools(call("final_result", {"response": 5}))
    )
    llm.push(tools(call("add", {"a": 2, "b": 3})), final)
    result = await make_client(style).run("2+3?", kit(add_tool()), output_type=int)
    assert result.output == 5
    assert result.tool_call_count == 1
    declared = llm.requests[0].body["tools"]
    names = [t["function"]["name"] if style == "openai" else t["name"] for t in declared]
    assert "add" in names


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("output_type", "answer", "expected"),
    [
        (list[int], '{"response": [1, 2]}', [1, 2]),
        (Literal["yes", "no"], '{"response": "no"}', "no"),
        (Point, '{"x": 1, "y": 2}', Point(1, 2)),
        (int | str, '{"response": "seven"}', "seven"),
    ],
)
async def test_output_type_forms(
    llm: FakeLLM,
    make_client: Callable[..., Client],
    output_type: Any,
    answer: str,
    expected: Any,
) -> None:
    llm.push(text(answer))
    result = await make_client("openai").run("?", output_type=output_type)
    assert result.output == expected


async def test_prompted_mode_reads_a_fenced_answer(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(text('```json\n{"response": 42}\n```'))
    result = await make_client("anthropic").run("?", output_type=int, output_mode="prompted")
    assert result.output == 42
    body = llm.requests[0].body
    assert "JSON schema" in body["system"]
    assert "tools" not in body


async def test_client_default_output_type_and_ask(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(text('{"name": "Lyon", "population": 500000}'), text("plain"))
    client = make_client("openai", output_type=City)
    result = await client.ask("city?", id="c1")
    assert result.output == City(name="Lyon", population=500000)
    plain = await client.ask("again", id="c1", output_type=None)
    assert plain.output == "plain"
    assert "response_format" not in llm.requests[1].body


async def test_no_output_type_output_is_the_text(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(text("hello"))
    result = await make_client("openai").run("hi")
    assert result.output == "hello"
    assert result.output_errors is None


async def test_conversation_takes_output_type(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(text('{"response": true}'))
    conversation = make_client("openai").conversation(output_type=bool)
    result = await conversation.send("ok?")
    assert result.output is True


async def test_native_mode_refused_on_anthropic(make_client: Callable[..., Client]) -> None:
    from toolnexus import ConfigError

    with pytest.raises(ConfigError, match="native"):
        await make_client("anthropic").run("?", output_type=int, output_mode="native")
