"""`usage_limits` checked live; `raise_on_limit` raises with the partial result; one WARNING."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pydantic
import pytest

from support.client_helpers import add_tool, kit
from support.fake_llm import FakeLLM, call, text, tools
from toolnexus import ConfigError, ToolnexusError, UsageLimitExceeded, UsageLimits
from toolnexus.client import Client

STYLES = ("openai", "anthropic", "openai-responses")


@pytest.mark.parametrize("style", STYLES)
async def test_tool_call_limit_ends_incomplete_and_answers_the_calls(
    llm: FakeLLM, make_client: Callable[..., Client], style: str, caplog: pytest.LogCaptureFixture
) -> None:
    llm.push(tools(call("add", {"a": 1, "b": 1})), tools(call("add", {"a": 2, "b": 2})))
    client = make_client(style, usage_limits=UsageLimits(tool_calls=1))
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = await client.run("add twice", kit(add_tool()))
    assert (result.status, result.limit) == ("incomplete", "tool_calls")
    assert result.tool_call_count == 1
    assert len(llm.requests) == 2
    warnings = [r for r in caplog.records if "tool_calls limit" in r.getMessage()]
    assert len(warnings) == 1
    last = result.messages[-1]  # the unrun call is answered: the transcript can be continued
    assert "limit was reached" in str(last)


@pytest.mark.parametrize("streaming", [False, True])
async def test_raise_on_limit_carries_the_partial_result(
    llm: FakeLLM, make_client: Callable[..., Client], streaming: bool
) -> None:
    llm.push(tools(call("add", {"a": 1, "b": 1}), usage=(50, 60)))
    client = make_client("openai", raise_on_limit=True)
    limits = UsageLimits(total_tokens=100)
    with pytest.raises(UsageLimitExceeded) as caught:
        if streaming:
            async for _ in client.stream("go", kit(add_tool()), usage_limits=limits):
                pass
        else:
            await client.run("go", kit(add_tool()), usage_limits=limits)
    assert isinstance(caught.value, ToolnexusError)
    assert caught.value.limit == "total_tokens"
    partial = caught.value.result
    assert partial.status == "incomplete"
    assert partial.usage["total_tokens"] == 110
    assert partial.tool_call_count == 0


async def test_request_token_limit(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    llm.push(tools(call("add", {"a": 1, "b": 1}), usage=(500, 1)))
    result = await make_client("anthropic").run(
        "go", kit(add_tool()), usage_limits=UsageLimits(request_tokens=100)
    )
    assert result.limit == "request_tokens"


class Point(pydantic.BaseModel):
    x: int


async def test_output_limit_raises_too(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    llm.push(text("nope"), text("still nope"))
    with pytest.raises(UsageLimitExceeded) as caught:
        await make_client("openai").run("?", output_type=Point, raise_on_limit=True)
    assert caught.value.limit == "output"
    assert caught.value.result.output_errors


async def test_max_turns_raises_when_asked(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(tools(call("add", {"a": 1, "b": 1})))
    client = make_client("openai", max_turns=1, raise_on_limit=True)
    with pytest.raises(UsageLimitExceeded, match="maxTurns"):
        await client.run("go", kit(add_tool()))


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ConfigError):
        UsageLimits(tool_calls=-1)
    with pytest.raises(TypeError):
        UsageLimits(total_tokens="many")  # type: ignore[arg-type]
