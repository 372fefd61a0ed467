"""`toolnexus.testing`: scripted and function models on both wires, streamed and not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
import pytest

from support.client_helpers import add_tool, kit
from support.fake_llm import FakeLLM
from toolnexus import ProviderError
from toolnexus.client import Client
from toolnexus.testing import (
    FunctionModel,
    ScriptedModel,
    SeenRequest,
    error,
    override,
    text,
    tool_call,
    tools,
)

STYLES = ("openai", "anthropic", "openai-responses")


class City(pydantic.BaseModel):
    name: str


async def run(client: Client, streaming: bool, prompt: str, **kw: Any) -> Any:
    if not streaming:
        return await client.run(prompt, **kw), []
    events = [e async for e in client.stream(prompt, **kw)]
    return events[-1]["result"], events


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("style", STYLES)
async def test_scripted_model_tools_then_text(style: str, streaming: bool) -> None:
    model = ScriptedModel(tools(tool_call("add", {"a": 1, "b": 2})), text("three, it is"))
    client = model.client(style)
    result, events = await run(client, streaming, "1+2?", toolkit=kit(add_tool()))
    assert result.text == "three, it is"
    assert result.tool_calls[0]["output"] == "3"
    model.assert_requests(2)
    assert model.requests[0].tool_names == ["add"]
    assert model.requests[0].prompt == "1+2?"
    assert model.requests[0].streamed is streaming
    if streaming:  # chunk by chunk
        assert len([e for e in events if e["type"] == "text"]) > 1


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("style", STYLES)
async def test_scripted_typed_output_after_a_reask(style: str, streaming: bool) -> None:
    bad, good = ('{"nom": "x"}', '{"name": "Paris"}')
    if style == "openai":
        model = ScriptedModel(text(bad), text(good))
    else:
        model = ScriptedModel(
            tools(tool_call("final_result", bad)), tools(tool_call("final_result", good))
        )
    result, _ = await run(model.client(style), streaming, "city?", output_type=City)
    assert result.output == City(name="Paris")


async def test_scripted_errors_are_retried() -> None:
    model = ScriptedModel(error(503), text("ok"))
    assert (await model.client("openai", retries=1).run("hi")).text == "ok"
    model = ScriptedModel(error(400, "bad request"))
    with pytest.raises(ProviderError):
        await model.client("anthropic").run("hi")


@pytest.mark.parametrize("style", STYLES)
async def test_function_model_streams(style: str) -> None:
    def generate(request: SeenRequest) -> str:
        return f"you said {request.prompt}"

    model = FunctionModel(generate)
    events = [e async for e in model.client(style).stream("hello")]
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "you said hello"


async def test_override_swaps_the_model_of_an_existing_client(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    client = make_client("anthropic")
    model = ScriptedModel("from the script")
    with override(client, model):
        assert (await client.run("hi")).text == "from the script"
    assert not llm.requests  # nothing reached the HTTP server
    assert model.last_request.style == "anthropic"


def test_sync_api_on_a_scripted_model() -> None:
    model = ScriptedModel("hi", text("again", delay=0.01))
    with model.client("openai") as client:
        assert client.run_sync("hello").text == "hi"
        assert [e["type"] for e in client.stream_sync("x")][-1] == "done"
