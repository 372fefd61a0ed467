"""`translate`: one provider call, OpenAI shapes in and out, nothing executed (client.md §15)."""

from __future__ import annotations

import asyncio

import pytest

from support.client_helpers import add_tool, kit
from support.fake_llm import Reply, call, error, text, tools
from toolnexus.client import TranslatedToolCall, TranslateResult, create_client
from toolnexus.client._translate import finish_reason

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


async def test_openai_pass_through(llm, make_client):
    llm.push(tools(call("weather", {"city": "Oslo"}, id="w1"), text="Checking."))
    client = make_client("openai", system_prompt="Default system.")
    toolkit = kit(add_tool())
    messages = [{"role": "user", "content": "Weather in Oslo?"}]
    result = await client.translate(
        messages, tools=[WEATHER], toolkit=toolkit, tool_choice="auto", max_tokens=50
    )
    body = llm.requests[0].body
    assert llm.requests[0].path == "/v1/chat/completions"
    assert list(body) == ["model", "messages", "tools", "tool_choice", "max_tokens"]
    assert body["messages"] == [{"role": "system", "content": "Default system."}, *messages]
    assert body["tools"] == [*toolkit.to_openai(), WEATHER]
    assert body["tool_choice"] == "auto"
    assert body["max_tokens"] == 50
    assert isinstance(result, TranslateResult)
    assert result.text == "Checking."
    assert result.tool_calls == [
        TranslatedToolCall(id="w1", name="weather", arguments='{"city":"Oslo"}')
    ]
    assert result.finish_reason == "tool_calls"
    assert result.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert result.model == "test-model"
    assert result.raw["choices"][0]["message"]["tool_calls"][0]["id"] == "w1"
    assert result.tool_calls_json() == [
        {
            "id": "w1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
        }
    ]


async def test_openai_existing_system_message_is_kept_and_minimal_body(llm, make_client):
    llm.push(text("hi"))
    messages = [{"role": "developer", "content": "Dev rules."}, {"role": "user", "content": "hi"}]
    await make_client("openai", system_prompt="ignored").translate(messages)
    assert llm.requests[0].body == {"model": "test-model", "messages": messages}


async def test_openai_system_argument_overrides(llm, make_client):
    llm.push(text("hi"))
    await make_client("openai", system_prompt="default").translate(
        [{"role": "user", "content": "q"}], system="over"
    )
    assert llm.requests[0].body["messages"][0] == {"role": "system", "content": "over"}


async def test_openai_object_arguments_are_reencoded(llm, make_client):
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": {"x": [1, "é"]}},
                        }
                    ],
                },
                "finish_reason": "stop",
            }
        ]
    }
    llm.push(Reply(body=body))
    result = await make_client("openai").translate([{"role": "user", "content": "q"}])
    assert result.tool_calls[0].arguments == '{"x":[1,"é"]}'
    assert result.finish_reason == "tool_calls"  # a tool call wins over the provider's "stop"
    assert result.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


async def test_anthropic_inbound_conversion(llm, make_client):
    llm.push(text("Sunny."))
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": [{"type": "text", "text": "No emojis."}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Weather "}, {"type": "text", "text": "in Oslo?"}],
        },
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "w1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                },
                {
                    "id": "w2",
                    "type": "function",
                    "function": {"name": "weather", "arguments": "{broken"},
                },
                {
                    "id": "w3",
                    "type": "function",
                    "function": {"name": "weather", "arguments": {"city": "Rome"}},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "w1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "w2", "content": "error"},
        {"role": "function", "tool_call_id": "w3", "content": [{"type": "text", "text": "warm"}]},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "Thanks"},
    ]
    toolkit = kit(add_tool())
    anthropic_tool = {"name": "native_shape", "input_schema": {"type": "object"}}
    bare = {"type": "function", "function": {"name": "bare"}}
    result = await make_client("anthropic").translate(
        messages, tools=[WEATHER, anthropic_tool, bare], toolkit=toolkit, tool_choice="required"
    )
    request = llm.requests[0]
    assert request.path == "/v1/messages"
    body = request.body
    assert list(body) == ["model", "max_tokens", "messages", "system", "tools", "tool_choice"]
    assert body["max_tokens"] == 4096
    assert body["system"] == "You are terse.\n\nNo emojis."
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "w1", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "w2", "name": "weather", "input": {}},
                {"type": "tool_use", "id": "w3", "name": "weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "w1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "w2", "content": "error"},
                {"type": "tool_result", "tool_use_id": "w3", "content": "warm"},
            ],
        },
        {"role": "user", "content": "Thanks"},
    ]
    assert body["tools"] == [
        *toolkit.to_anthropic(),
        {
            "name": "weather",
            "description": "Weather for a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        anthropic_tool,
        {"name": "bare", "input_schema": {"type": "object", "properties": {}}},
    ]
    assert body["tool_choice"] == {"type": "any"}
    assert result.text == "Sunny."
    assert result.finish_reason == "stop"


@pytest.mark.parametrize(
    ("choice", "mapped"),
    [
        (None, None),
        ("auto", None),
        ("required", {"type": "any"}),
        ("any", {"type": "any"}),
        ("none", {"type": "none"}),
        (
            {"type": "function", "function": {"name": "weather"}},
            {"type": "tool", "name": "weather"},
        ),
        ({"type": "mystery"}, None),
    ],
)
async def test_anthropic_tool_choice_mapping(llm, make_client, choice, mapped):
    llm.push(text("ok"))
    await make_client("anthropic").translate([{"role": "user", "content": "q"}], tool_choice=choice)
    body = llm.requests[0].body
    assert body.get("tool_choice") == mapped
    assert "system" not in body and "tools" not in body  # empty ⇒ omitted


async def test_anthropic_system_precedence_and_max_tokens(llm, make_client):
    llm.push(text("a"), text("b"))
    msgs = [{"role": "system", "content": "joined"}, {"role": "user", "content": "q"}]
    await make_client("anthropic", system_prompt="client").translate(msgs, max_tokens=10)
    await make_client("anthropic", system_prompt="client").translate(msgs, system="arg")
    assert llm.requests[0].body["system"] == "client"
    assert llm.requests[0].body["max_tokens"] == 10
    assert llm.requests[1].body["system"] == "arg"


async def test_anthropic_outbound(llm, make_client):
    body = {
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "text", "text": "Part one. "},
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "text", "text": "Part two."},
            {"type": "tool_use", "id": "t2", "name": "add", "input": {"a": 1, "b": 2}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    llm.push(Reply(body=body))
    result = await make_client("anthropic").translate([{"role": "user", "content": "q"}])
    assert result.text == "Part one. Part two."
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("t1", "weather", '{"city":"Oslo"}'),
        ("t2", "add", '{"a":1,"b":2}'),
    ]
    assert result.finish_reason == "tool_calls"
    assert result.usage == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert result.raw == body


@pytest.mark.parametrize(
    ("has_calls", "reason", "expected"),
    [
        (True, "stop", "tool_calls"),
        (True, "end_turn", "tool_calls"),
        (False, "max_tokens", "length"),
        (False, "length", "length"),
        (False, "refusal", "content_filter"),
        (False, "content_filter", "content_filter"),
        (False, "end_turn", "stop"),
        (False, "stop_sequence", "stop"),
        (False, "eos", "stop"),
        (False, None, "stop"),
        (False, "tool_calls", "stop"),
    ],
)
def test_finish_reason_mapping(has_calls, reason, expected):
    assert finish_reason(has_calls, reason) == expected


@pytest.mark.parametrize(
    ("style", "reason"), [("openai", "length"), ("anthropic", "max_tokens"), ("openai", "eos")]
)
async def test_finish_reason_over_the_wire(llm, make_client, style, reason):
    llm.push(text("cut", stop_reason=reason))
    result = await make_client(style).translate([{"role": "user", "content": "q"}])
    assert result.finish_reason == ("length" if reason != "eos" else "stop")


async def test_nothing_executed_hooks_once_one_metric_nothing_stored(llm, make_client):
    ran, fired, metrics = [], [], []

    async def add(args, ctx):
        ran.append(args)
        return "3"

    from toolnexus.types import Tool

    hooks = {
        "before_llm": lambda i: fired.append(("before_llm", i["turn"])),
        "after_llm": lambda i: fired.append(("after_llm", i["turn"])),
        "before_tool": lambda i: fired.append("before_tool"),
        "after_tool": lambda i: fired.append("after_tool"),
    }
    llm.push(tools(call("add", {"a": 1, "b": 2})))
    client = make_client("openai", hooks=hooks, on_metric=metrics.append)
    result = await client.translate(
        [{"role": "user", "content": "q"}], toolkit=kit(Tool("add", "", None, "native", add))
    )
    assert ran == []
    assert result.tool_calls[0].name == "add"
    assert fired == [("before_llm", 0), ("after_llm", 0)]
    assert [m["event"] for m in metrics] == ["llm"]
    assert len(llm.requests) == 1


async def test_before_llm_can_replace_messages_tools_and_model(llm, make_client):
    def before_llm(info):
        return {"messages": [{"role": "user", "content": "swapped"}], "tools": [], "model": "other"}

    llm.push(text("ok"))
    result = await make_client("anthropic", hooks={"before_llm": before_llm}).translate(
        [{"role": "user", "content": "q"}], tools=[WEATHER]
    )
    body = llm.requests[0].body
    assert body["messages"] == [{"role": "user", "content": "swapped"}]
    assert body["model"] == "other" and "tools" not in body
    assert result.model == "other"


async def test_shares_retries_request_shaping_and_endpoint_rule(llm):
    llm.push(error(503), text("ok"))
    client = create_client(
        base_url=llm.url + "/deploy?api-version=1",
        style="openai",
        model="m",
        api_key="k",
        retry_base_ms=1,
        request_params={"temperature": 0},
        body_transform=lambda b: {**b, "user": "u1"},
    )
    async with client:
        result = await client.translate([{"role": "user", "content": "q"}])
    assert result.text == "ok"
    assert [r.path for r in llm.requests] == ["/deploy/chat/completions?api-version=1"] * 2
    assert llm.requests[1].body["temperature"] == 0 and llm.requests[1].body["user"] == "u1"


async def test_translate_provider_error(llm, make_client):
    from toolnexus.client import ProviderError

    metrics = []
    llm.push(error(400, "invalid x-api-key"))
    with pytest.raises(ProviderError, match="invalid x-api-key"):
        await make_client("anthropic", on_metric=metrics.append).translate(
            [{"role": "user", "content": "q"}]
        )
    assert [(m["event"], m["status"]) for m in metrics] == [("llm", "error")]


async def test_translate_honours_cancel_and_the_run_deadline(llm, make_client):
    from toolnexus.client import RunCancelled, RunTimeout

    question = [{"role": "user", "content": "q"}]
    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(RunCancelled):
        await make_client("anthropic").translate(question, cancel=cancel)
    assert llm.requests == []
    llm.push(text("never", hang=True))
    with pytest.raises(RunTimeout, match=r"^run timeout after 300ms \(client timeout_ms budget\)$"):
        await make_client("openai", timeout_ms=300).translate(question)


async def test_openai_tool_without_a_type_key_is_still_converted(llm, make_client):
    llm.push(text("ok"))
    untyped = {"function": {"name": "f", "description": "", "parameters": None}}
    await make_client("anthropic").translate([{"role": "user", "content": "q"}], tools=[untyped])
    assert llm.requests[0].body["tools"] == [
        {"name": "f", "input_schema": {"type": "object", "properties": {}}}
    ]
