"""The OpenAI Responses wire (`style="openai-responses"`) against the local fake provider and the
scripted model: requests, input items, reasoning carried back, streaming, usage, refusals,
errors, and the loop's features (hooks, retries, memory, metrics, suspension, typed results)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest

from support.client_helpers import add_tool, kit
from support.fake_llm import Call, FakeLLM, Reply, error, raw, text, tools
from toolnexus import ProviderError, define_tool
from toolnexus.client import Client
from toolnexus.content import part
from toolnexus.testing import ScriptedModel
from toolnexus.testing import refusal as scripted_refusal
from toolnexus.testing import text as scripted_text
from toolnexus.testing import tool_call as scripted_call
from toolnexus.testing import tools as scripted_tools
from toolnexus.types import Answer, pending

STYLE = "openai-responses"
RECORDED = Path(__file__).parent / "recorded"
REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "adding"}],
    "encrypted_content": "gAAAA-opaque==",
}


class City(pydantic.BaseModel):
    name: str
    population: int


async def run(client: Client, streaming: bool, prompt: Any, **kw: Any) -> tuple[Any, list[Any]]:
    if not streaming:
        return await client.run(prompt, **kw), []
    events = [e async for e in client.stream(prompt, **kw)]
    return events[-1]["result"], events


def recorded_sse(name: str) -> Reply:
    return Reply(sse=(RECORDED / name).read_text().strip().split("\n\n"))


# -- requests -------------------------------------------------------------------------------------


async def test_request_shape(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    llm.push(text("hi"))
    client = make_client(STYLE, system_prompt="Be terse.")
    result = await client.run("hello", kit(add_tool()))
    request = llm.requests[0]
    assert request.method == "POST"
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert list(request.body) == ["model", "instructions", "input", "tools", "tool_choice"]
    assert request.body["input"] == [{"role": "user", "content": "hello"}]
    assert request.body["instructions"] == "Be terse."
    assert request.body["tools"] == kit(add_tool()).to_openai_responses()
    assert request.body["tools"][0]["type"] == "function"
    assert "function" not in request.body["tools"][0]  # flat declarations
    assert result.text == "hi"
    assert result.status == "done"
    assert client.style == STYLE


async def test_streaming_request_and_deltas(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(text("Hello there, friend", chunk_size=4))
    result, events = await run(make_client(STYLE), True, "hi")
    body = llm.requests[0].body
    assert body["stream"] is True
    assert "instructions" not in body and "tools" not in body
    deltas = [e["delta"] for e in events if e["type"] == "text"]
    assert len(deltas) > 1 and "".join(deltas) == "Hello there, friend"
    assert result.text == "Hello there, friend"
    assert events[-2] == {"type": "usage", "usage": result.usage}


@pytest.mark.parametrize(
    "base", ["{url}/v1", "{url}/v1/", "{url}/v1/responses", "{url}/v1/responses/"]
)
async def test_endpoint_url(llm: FakeLLM, base: str) -> None:
    llm.push(text("ok"))
    async with Client(
        base_url=base.format(url=llm.url), style=STYLE, model="m", api_key="k"
    ) as client:
        await client.run("?")
    assert llm.requests[0].path == "/v1/responses"


def test_a_chat_completions_url_is_refused() -> None:
    with pytest.raises(ValueError, match="openai endpoint"):
        Client(base_url="http://h/v1/chat/completions", style=STYLE, model="m", api_key="k")


async def test_api_key_from_openai_variable(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-other")
    llm.push(text("ok"))
    async with Client(base_url=llm.url + "/v1", style=STYLE, model="m") as client:
        await client.run("?")
    assert llm.requests[0].headers["authorization"] == "Bearer sk-env"


# -- the conversation the issue names: two tool calls and a reasoning item ------------------------


@pytest.mark.parametrize("streaming", [False, True])
async def test_two_tool_calls_and_reasoning_round_trip(
    llm: FakeLLM, make_client: Callable[..., Client], streaming: bool
) -> None:
    llm.push(
        tools(
            Call("add", {"a": 2, "b": 3}), Call("add", {"a": 10, "b": 20}), reasoning=[REASONING]
        ),
        text("5 and 30", usage=(40, 6)),
    )
    client = make_client(STYLE)
    result, _ = await run(client, streaming, "add them", toolkit=kit(add_tool()))
    assert result.text == "5 and 30"
    assert [c["output"] for c in result.tool_calls] == ["5", "30"]
    second = llm.requests[1].body["input"]
    # The reasoning item and both calls go back verbatim, then one output per call.
    assert second[0] == {"role": "user", "content": "add them"}
    assert second[1] == REASONING
    calls = [item for item in second if item.get("type") == "function_call"]
    assert [json.loads(c["arguments"]) for c in calls] == [{"a": 2, "b": 3}, {"a": 10, "b": 20}]
    outputs = second[-2:]
    assert outputs == [
        {"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "5"},
        {"type": "function_call_output", "call_id": calls[1]["call_id"], "output": "30"},
    ]
    assert result.messages[:-1] == second
    assert result.messages[-1]["type"] == "message"
    assert result.usage == {
        "prompt_tokens": 50,
        "completion_tokens": 11,
        "total_tokens": 61,
        "cache_read_tokens": 0,
        "reasoning_tokens": 0,
    }
    # The transcript is valid input as it is: a next run continues it.
    llm.push(text("done"))
    again = await client.run("and now?", history=result.messages)
    assert llm.requests[2].body["input"] == [
        *result.messages,
        {"role": "user", "content": "and now?"},
    ]
    assert again.text == "done"


async def test_recorded_reasoning_stream_round_trips(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    final = json.loads((RECORDED / "responses_final.json").read_text())
    llm.push(recorded_sse("responses_reasoning_tools.sse"), Reply(body=final))
    client = make_client(STYLE, system_prompt="You are terse.")
    events = [e async for e in client.stream("2+3 and 10+20?", kit(add_tool()))]
    result = events[-1]["result"]
    assert [e["args"] for e in events if e["type"] == "tool_call"] == [
        {"a": 2, "b": 3},
        {"a": 10, "b": 20},
    ]
    sent = llm.requests[1].body["input"]
    reasoning = sent[1]
    assert reasoning["type"] == "reasoning"
    assert (
        reasoning["encrypted_content"]
        == "gAAAAABor_wvX2sQkq1YfV0n3mXo8Zr4TqL9cWb2Hd7uJe6Kp5Ni3Mg0Fh1Oa_RzSy-Tx=="
    )
    assert [i["call_id"] for i in sent if i.get("type") == "function_call_output"] == [
        "call_Qx7vN2pL9sK4mT1wR8yZ3bC6",
        "call_Hb5mW8qT2nV6xJ9kL4pR7sD1",
    ]
    assert result.text == "5 and 30."
    assert result.messages[-2:] == final["output"]  # both items, verbatim
    assert result.usage["prompt_tokens"] == 91 + 402
    assert result.usage["reasoning_tokens"] == 192
    assert result.usage["cache_read_tokens"] == 256


# -- refusals and errors --------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
async def test_refusal_surfaces(
    llm: FakeLLM, make_client: Callable[..., Client], streaming: bool
) -> None:
    llm.push(Reply(refusal="I can't help with that."))
    result, events = await run(make_client(STYLE), streaming, "pick a lock")
    assert result.status == "refused"
    assert result.refusal == "I can't help with that."
    assert result.text == ""
    if streaming:
        assert {"type": "refusal", "refusal": "I can't help with that."} in events


async def test_http_error_message(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    body = {
        "error": {
            "message": "Invalid 'input[0]': unknown item.",
            "type": "invalid_request_error",
            "param": "input[0]",
            "code": None,
        }
    }
    llm.push(raw(400, body))
    with pytest.raises(ProviderError) as caught:
        await make_client(STYLE).run("?")
    assert caught.value.status == 400
    assert str(caught.value) == "LLM 400: Invalid 'input[0]': unknown item."


async def test_failed_response_raises(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    failed = {
        "id": "resp_1",
        "object": "response",
        "status": "failed",
        "error": {"code": "server_error", "message": "The model crashed."},
        "output": [],
    }
    llm.push(Reply(body=failed))
    with pytest.raises(ProviderError, match="The model crashed"):
        await make_client(STYLE, retries=0).run("?")


def sse(name: str, **data: Any) -> str:
    return f"event: {name}\ndata: " + json.dumps({"type": name, **data})


FAILED_RESPONSE = {"status": "failed", "error": {"code": "server_error", "message": "Slow down."}}


@pytest.mark.parametrize(
    "event",
    [
        sse("error", code="rate_limit_exceeded", message="Slow down.", param=None),
        sse("response.failed", response={**FAILED_RESPONSE, "output": []}),
    ],
)
async def test_stream_error_events_raise(
    llm: FakeLLM, make_client: Callable[..., Client], event: str
) -> None:
    created = sse("response.created", response={"status": "in_progress", "output": []})
    llm.push(Reply(sse=[created, event]))
    with pytest.raises(ProviderError, match="Slow down"):
        await run(make_client(STYLE), True, "?")


async def test_a_cut_stream_is_an_error(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    delta = sse("response.output_text.delta", output_index=0, content_index=0, delta="Hal")
    llm.push(Reply(sse=[delta]))
    with pytest.raises(ProviderError, match="stream ended"):
        await run(make_client(STYLE), True, "?")


async def test_incomplete_answer_keeps_its_text(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(text("cut sh", stop_reason="max_output_tokens"))
    result = await make_client(STYLE).run("?")
    assert result.text == "cut sh"


async def test_malformed_body_is_a_provider_error(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(Reply(body={"id": "resp_1", "object": "response", "status": "completed"}))
    with pytest.raises(ProviderError, match="no output items"):
        await make_client(STYLE).run("?")


# -- the loop's features on this wire -------------------------------------------------------------


async def test_retries_hooks_and_metrics(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    seen: list[str] = []
    metrics: list[dict[str, Any]] = []

    def before_tool(info: dict[str, Any]) -> dict[str, Any]:
        seen.append(info["name"])
        return {"args": {"a": 100, "b": info["args"]["b"]}}

    llm.push(error(429), tools(Call("add", {"a": 1, "b": 2})), text("102"))
    client = make_client(STYLE, hooks={"before_tool": before_tool}, on_metric=metrics.append)
    result = await client.run("?", kit(add_tool()))
    assert seen == ["add"]
    assert result.tool_calls[0]["output"] == "102"
    assert len(llm.requests) == 3  # the 429 was retried
    llm_events = [m for m in metrics if m["event"] == "llm"]
    assert [(m["prompt_tokens"], m["completion_tokens"]) for m in llm_events] == [(10, 5)] * 2
    assert metrics[-1]["event"] == "run" and metrics[-1]["total_tokens"] == 30
    assert 'toolnexus_llm_requests_total{model="test-model",status="ok"} 2' in client.metrics()


async def test_memory_continues_a_conversation(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(text("first", reasoning=[REASONING]), text("second"))
    client = make_client(STYLE)
    await client.ask("one", id="c")
    await client.ask("two", id="c", on_text=lambda delta: None)
    sent = llm.requests[1].body["input"]
    assert sent[0] == {"role": "user", "content": "one"}
    assert sent[1] == REASONING
    assert sent[2]["type"] == "message"
    assert sent[3] == {"role": "user", "content": "two"}
    stored = await client.conversation_store.get("c")
    assert stored is not None and len(stored) == 5


async def test_suspension_resolves_through_wait_for(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    def guarded(args: dict[str, Any], ctx: Any) -> Any:
        if ctx.answer is None:
            return pending(kind="confirm", prompt="go on?")
        return "went on"

    tool = define_tool(
        name="guarded", description="asks first", input_schema={"type": "object"}, execute=guarded
    )
    llm.push(tools(Call("guarded")), text("done"))
    client = make_client(STYLE, wait_for=lambda request: Answer(id=request.id, ok=True))
    result, events = await run(client, True, "?", toolkit=kit(tool))
    assert [e["type"] for e in events if e["type"] in ("pending", "tool_result")] == [
        "pending",
        "tool_result",
    ]
    assert llm.requests[1].body["input"][-1]["output"] == "went on"
    assert result.status == "done"

    llm.push(tools(Call("guarded")))
    paused = await make_client(STYLE).run("?", kit(tool))
    assert paused.status == "pending"
    assert paused.messages[-1]["type"] == "function_call_output"


@pytest.mark.parametrize("streaming", [False, True])
async def test_typed_result_native_after_one_reask(
    llm: FakeLLM, make_client: Callable[..., Client], streaming: bool
) -> None:
    llm.push(text('{"name": "Paris"}'), text('{"name": "Paris", "population": 2100000}'))
    result, events = await run(make_client(STYLE), streaming, "biggest?", output_type=City)
    assert result.output == City(name="Paris", population=2100000)
    body = llm.requests[0].body
    fmt = body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "City" and fmt["strict"] is True
    assert fmt["schema"]["required"] == ["name", "population"]
    retry = llm.requests[1].body["input"][-1]
    assert retry["role"] == "user" and "population" in retry["content"]
    if streaming:
        assert {"type": "output", "output": result.output} in events


async def test_typed_result_tool_mode(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    llm.push(tools(Call("final_result", {"name": "Oslo", "population": 700000})))
    result = await make_client(STYLE).run("?", output_type=City, output_mode="tool")
    assert result.output.name == "Oslo"
    declared = llm.requests[0].body["tools"]
    assert declared[-1]["name"] == "final_result" and declared[-1]["type"] == "function"
    assert result.messages[-1]["type"] == "function_call_output"


async def test_content_parts_become_input_content(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    png = part(type="image", mimeType="image/png", data="iVBORw0KGgo=")

    def snapshot(args: dict[str, Any], ctx: Any) -> Any:
        from toolnexus.types import ToolResult

        return ToolResult("see the picture", parts=[png])

    tool = define_tool(
        name="snap", description="a picture", input_schema={"type": "object"}, execute=snapshot
    )
    llm.push(tools(Call("snap")), text("a pixel"))
    await make_client(STYLE).run(["what is this?", png], kit(tool))
    first = llm.requests[0].body["input"][0]
    assert first["content"] == [
        {"type": "input_text", "text": "what is this?"},
        {
            "type": "input_image",
            "image_url": "data:image/png;base64,iVBORw0KGgo=",
            "detail": "auto",
        },
    ]
    output = llm.requests[1].body["input"][-1]
    assert output["type"] == "function_call_output"
    assert output["output"] == [
        {"type": "input_text", "text": "see the picture"},
        {
            "type": "input_image",
            "image_url": "data:image/png;base64,iVBORw0KGgo=",
            "detail": "auto",
        },
    ]


# -- the scripted model serves the wire too --------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
async def test_scripted_model_on_responses(streaming: bool) -> None:
    model = ScriptedModel(
        scripted_tools(
            scripted_call("add", {"a": 1, "b": 2}),
            scripted_call("add", {"a": 3, "b": 4}),
            reasoning=[REASONING],
        ),
        scripted_text("3 and 7"),
        scripted_refusal("no"),
    )
    client = model.client(STYLE)
    result, _ = await run(client, streaming, "sum", toolkit=kit(add_tool()))
    assert result.text == "3 and 7"
    assert model.requests[0].tool_names == ["add"]
    assert model.requests[0].prompt == "sum"
    second = model.requests[1].messages
    assert second[1] == REASONING
    assert [i["output"] for i in second if i.get("type") == "function_call_output"] == ["3", "7"]
    refused, _ = await run(client, streaming, "again")
    assert refused.status == "refused" and refused.refusal == "no"


async def test_translate_speaks_responses(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    llm.push(
        tools(Call("add", {"a": 1, "b": 2}, id="call_9")),
        text("3", stop_reason="max_output_tokens"),
    )
    client = make_client(STYLE)
    first = await client.translate(
        [{"role": "user", "content": "1+2?"}],
        tools=[{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}],
        tool_choice={"type": "function", "function": {"name": "add"}},
        system="Be exact.",
        max_tokens=50,
    )
    body = llm.requests[0].body
    assert body["instructions"] == "Be exact."
    assert body["input"] == [{"role": "user", "content": "1+2?"}]
    assert body["tools"] == [
        {"type": "function", "name": "add", "parameters": {"type": "object"}, "strict": False}
    ]
    assert body["tool_choice"] == {"type": "function", "name": "add"}
    assert body["max_output_tokens"] == 50
    assert first.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("call_9", "add", {"a": 1, "b": 2})
    ]
    second = await client.translate(
        [
            {"role": "user", "content": "1+2?"},
            {"role": "assistant", "content": None, "tool_calls": first.tool_calls_json()},
            {"role": "tool", "tool_call_id": "call_9", "content": "3"},
        ]
    )
    assert llm.requests[1].body["input"][1:] == [
        {"type": "function_call", "call_id": "call_9", "name": "add", "arguments": '{"a":1,"b":2}'},
        {"type": "function_call_output", "call_id": "call_9", "output": "3"},
    ]
    assert second.text == "3" and second.finish_reason == "length"
