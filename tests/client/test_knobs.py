"""`ModelSettings`: what each wire sends for each setting, per client and per run, and what it
refuses. Every body the scripted endpoint receives is also checked against the official SDKs'
request types (the `llm` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from support.client_helpers import add_tool, kit
from support.fake_llm import FakeLLM, call, text, tools
from toolnexus import ConfigError, ConfigTypeError, ModelSettings
from toolnexus.client import Client

MakeClient = Callable[..., Client]
WIRES = ("openai", "openai-responses", "anthropic")
EPHEMERAL = {"type": "ephemeral"}


async def sent(
    llm: FakeLLM, client: Client, settings: ModelSettings | None = None, **run: Any
) -> dict[str, Any]:
    """The body of the one request a run with `settings` sends."""
    llm.push(text("ok"))
    await client.run("hi", kit(add_tool()), model_settings=settings, **run)
    body = llm.requests[-1].body
    assert isinstance(body, dict)
    return body


# -- what each wire sends -------------------------------------------------------------------------

CHOICES = {
    "openai": {
        "auto": "auto",
        "required": "required",
        "none": "none",
        "add": {"type": "function", "function": {"name": "add"}},
    },
    "openai-responses": {
        "auto": "auto",
        "required": "required",
        "none": "none",
        "add": {"type": "function", "name": "add"},
    },
    "anthropic": {
        "auto": {"type": "auto"},
        "required": {"type": "any"},
        "none": {"type": "none"},
        "add": {"type": "tool", "name": "add"},
    },
}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("choice", ["auto", "required", "none", "add"])
async def test_tool_choice(llm: FakeLLM, make_client: MakeClient, wire: str, choice: str) -> None:
    body = await sent(llm, make_client(wire), ModelSettings(tool_choice=choice))
    assert body["tool_choice"] == CHOICES[wire][choice]


async def test_without_settings_the_tool_choice_is_the_wires_default(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    assert (await sent(llm, make_client("openai")))["tool_choice"] == "auto"
    assert "tool_choice" not in await sent(llm, make_client("anthropic"))


@pytest.mark.parametrize("wire", ["openai", "openai-responses"])
@pytest.mark.parametrize("parallel", [True, False])
async def test_parallel_tool_calls_on_openai(
    llm: FakeLLM, make_client: MakeClient, wire: str, parallel: bool
) -> None:
    body = await sent(llm, make_client(wire), ModelSettings(parallel_tool_calls=parallel))
    assert body["parallel_tool_calls"] is parallel


async def test_parallel_tool_calls_on_anthropic_sits_in_tool_choice(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    client = make_client("anthropic")
    body = await sent(llm, client, ModelSettings(parallel_tool_calls=False))
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    body = await sent(llm, client, ModelSettings(parallel_tool_calls=True, tool_choice="add"))
    forced = {"type": "tool", "name": "add", "disable_parallel_tool_use": False}
    assert body["tool_choice"] == forced
    # "none" takes no other field
    body = await sent(llm, client, ModelSettings(parallel_tool_calls=False, tool_choice="none"))
    assert body["tool_choice"] == {"type": "none"}


STRICT_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("wire", WIRES)
async def test_strict_tools(llm: FakeLLM, make_client: MakeClient, wire: str) -> None:
    body = await sent(llm, make_client(wire), ModelSettings(strict_tools=True))
    [declared] = body["tools"]
    if wire == "openai":
        assert declared["function"]["strict"] is True
        assert declared["function"]["parameters"] == STRICT_SCHEMA
    elif wire == "openai-responses":
        assert declared["strict"] is True
        assert declared["parameters"] == STRICT_SCHEMA
    else:
        assert declared["strict"] is True
        assert declared["input_schema"] == STRICT_SCHEMA


@pytest.mark.parametrize("wire", WIRES)
async def test_tools_are_not_strict_by_default(
    llm: FakeLLM, make_client: MakeClient, wire: str
) -> None:
    [declared] = (await sent(llm, make_client(wire)))["tools"]
    assert declared.get("strict", declared.get("function", {}).get("strict", False)) is False


async def test_reasoning_effort(llm: FakeLLM, make_client: MakeClient) -> None:
    settings = ModelSettings(reasoning_effort="high")
    assert (await sent(llm, make_client("openai"), settings))["reasoning_effort"] == "high"
    body = await sent(llm, make_client("openai-responses"), settings)
    assert body["reasoning"] == {"effort": "high"}


async def test_thinking_budget_on_anthropic(llm: FakeLLM, make_client: MakeClient) -> None:
    client = make_client("anthropic")
    body = await sent(llm, client, ModelSettings(thinking_budget=2048))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 4096  # the default is above the budget: kept
    body = await sent(llm, client, ModelSettings(thinking_budget=10000))
    assert body["max_tokens"] == 10000 + 4096  # raised above the budget
    # a max_tokens the user set is theirs
    client = make_client("anthropic", request_params={"max_tokens": 16000})
    body = await sent(llm, client, ModelSettings(thinking_budget=10000))
    assert body["max_tokens"] == 16000


@pytest.mark.parametrize("wire", ["openai", "openai-responses"])
async def test_prompt_cache_key_on_openai(llm: FakeLLM, make_client: MakeClient, wire: str) -> None:
    settings = ModelSettings(prompt_cache_key="tenant-7", prompt_cache=True)
    body = await sent(llm, make_client(wire), settings)
    assert body["prompt_cache_key"] == "tenant-7"
    # OpenAI caches by itself: prompt_cache adds nothing else
    assert "cache_control" not in str(body)


async def test_prompt_cache_places_anthropic_breakpoints(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    client = make_client("anthropic", system_prompt="Be brief.")
    toolkit = kit(add_tool())
    llm.push(tools(call("add", {"a": 2, "b": 3})), text("5"))
    result = await client.run(
        "add 2 and 3", toolkit, model_settings=ModelSettings(prompt_cache=True)
    )
    first, second = (r.body for r in llm.requests)
    assert first["system"] == [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]
    assert first["tools"][-1]["cache_control"] == EPHEMERAL
    assert first["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "add 2 and 3", "cache_control": EPHEMERAL}],
        }
    ]
    # the next request moves the message breakpoint to its own last message (the tool result)
    assert "cache_control" not in str(second["messages"][:-1])
    assert second["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    assert second["messages"][-1]["content"][-1]["type"] == "tool_result"
    # neither the transcript nor the toolkit's declarations carry them
    assert "cache_control" not in str(result.messages)
    assert "cache_control" not in str(toolkit.to_anthropic())


async def test_prompt_cache_without_a_system_prompt_leaves_system_alone(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    body = await sent(llm, make_client("anthropic"), ModelSettings(prompt_cache=True))
    assert body["system"] == ""
    assert str(body).count("cache_control") == 2  # the last tool and the last message


PROVIDER_TOOLS = {
    "openai-responses": {"type": "web_search"},
    "anthropic": {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
}


@pytest.mark.parametrize("wire", sorted(PROVIDER_TOOLS))
async def test_provider_tools_follow_the_toolkits(
    llm: FakeLLM, make_client: MakeClient, wire: str
) -> None:
    declaration = PROVIDER_TOOLS[wire]
    body = await sent(llm, make_client(wire), ModelSettings(provider_tools=[declaration]))
    assert body["tools"][-1] == declaration
    assert len(body["tools"]) == 2


async def test_provider_tools_alone_are_sent_with_the_tool_keys(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    llm.push(text("ok"))
    client = make_client("openai-responses")
    await client.run("hi", model_settings=ModelSettings(provider_tools=[{"type": "web_search"}]))
    body = llm.requests[-1].body
    assert body["tools"] == [{"type": "web_search"}]
    assert body["tool_choice"] == "auto"


# -- per client, per run --------------------------------------------------------------------------


async def test_the_clients_settings_apply_to_every_run_and_a_run_overrides_field_by_field(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    client = make_client(
        "openai",
        model_settings=ModelSettings(
            tool_choice="required", parallel_tool_calls=False, prompt_cache_key="a"
        ),
    )
    body = await sent(llm, client)
    assert (body["tool_choice"], body["parallel_tool_calls"], body["prompt_cache_key"]) == (
        "required",
        False,
        "a",
    )
    body = await sent(llm, client, ModelSettings(tool_choice="none", prompt_cache_key="b"))
    assert (body["tool_choice"], body["parallel_tool_calls"], body["prompt_cache_key"]) == (
        "none",
        False,
        "b",
    )
    # the client's own settings are unchanged
    body = await sent(llm, client)
    assert body["tool_choice"] == "required"


async def test_stream_and_ask_take_the_run_settings(llm: FakeLLM, make_client: MakeClient) -> None:
    client = make_client("anthropic")
    llm.push(text("ok"), text("ok"))
    settings = ModelSettings(tool_choice="none")
    [_ async for _ in client.stream("hi", kit(add_tool()), model_settings=settings)]
    await client.ask("hi", kit(add_tool()), id="c1", model_settings=settings)
    assert [r.body["tool_choice"] for r in llm.requests] == [{"type": "none"}] * 2


@pytest.mark.parametrize("wire", WIRES)
async def test_a_forcing_choice_holds_until_the_model_calls_a_tool(
    llm: FakeLLM, make_client: MakeClient, wire: str
) -> None:
    llm.push(tools(call("add", {"a": 1, "b": 2})), text("3"))
    settings = ModelSettings(tool_choice="add")
    result = await make_client(wire).run("add", kit(add_tool()), model_settings=settings)
    assert result.text == "3"
    # then the run goes back to auto: forcing again could only end at max_turns
    assert [r.body["tool_choice"] for r in llm.requests] == [
        CHOICES[wire]["add"],
        CHOICES[wire]["auto"],
    ]


# -- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "settings", "message"),
    [
        ("openai", ModelSettings(thinking_budget=2048), "thinking_budget is Anthropic's"),
        ("openai-responses", ModelSettings(thinking_budget=2048), "sets reasoning_effort"),
        ("anthropic", ModelSettings(reasoning_effort="low"), "reasoning_effort is OpenAI's"),
        ("anthropic", ModelSettings(prompt_cache_key="k"), "prompt_cache_key is OpenAI's"),
        (
            "anthropic",
            ModelSettings(thinking_budget=2048, tool_choice="required"),
            "does not allow a forced tool_choice",
        ),
    ],
)
async def test_a_setting_the_provider_has_no_equivalent_for_is_refused(
    llm: FakeLLM, make_client: MakeClient, wire: str, settings: ModelSettings, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        make_client(wire, model_settings=settings)
    client = make_client(wire)
    with pytest.raises(ConfigError, match=message):
        await client.run("hi", model_settings=settings)
    with pytest.raises(ConfigError, match=message):
        client.stream("hi", model_settings=settings)
    assert llm.requests == []


@pytest.mark.parametrize("wire", WIRES)
async def test_a_forcing_choice_needs_the_tool_it_names(
    llm: FakeLLM, make_client: MakeClient, wire: str
) -> None:
    client = make_client(wire)
    with pytest.raises(ConfigError, match=r"names the tool 'nope'.*declared: add"):
        await client.run("hi", kit(add_tool()), model_settings=ModelSettings(tool_choice="nope"))
    with pytest.raises(ConfigError, match="declares no tools"):
        await client.run("hi", model_settings=ModelSettings(tool_choice="required"))
    assert llm.requests == []


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"tool_choice": ""}, ConfigTypeError, "tool_choice must be"),
        ({"parallel_tool_calls": "yes"}, ConfigTypeError, "parallel_tool_calls must be a bool"),
        ({"reasoning_effort": "max!"}, ConfigError, "reasoning_effort must be one of"),
        ({"thinking_budget": 100}, ConfigError, "thinking_budget must be an integer >= 1024"),
        ({"prompt_cache_key": 7}, ConfigTypeError, "prompt_cache_key must be"),
        ({"provider_tools": {"type": "web_search"}}, ConfigTypeError, "must be a list of dicts"),
        ({"provider_tools": [{"name": "x"}]}, ConfigTypeError, 'with a string "type"'),
    ],
)
def test_bad_values_are_refused_when_the_settings_are_made(
    fields: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ModelSettings(**fields)


async def test_model_settings_must_be_model_settings(make_client: MakeClient) -> None:
    with pytest.raises(ConfigTypeError, match="model_settings must be ModelSettings, not dict"):
        make_client("openai", model_settings={"tool_choice": "none"})


@pytest.mark.parametrize("wire", WIRES)
async def test_a_streamed_run_sends_the_same_settings(
    llm: FakeLLM, make_client: MakeClient, wire: str
) -> None:
    settings = ModelSettings(tool_choice="none", parallel_tool_calls=True, strict_tools=True)
    whole = await sent(llm, make_client(wire), settings)
    llm.push(text("ok"))
    client = make_client(wire)
    [_ async for _ in client.stream("hi", kit(add_tool()), model_settings=settings)]
    streamed = llm.requests[-1].body
    keys = ("tool_choice", "parallel_tool_calls", "tools")
    assert {k: streamed.get(k) for k in keys} == {k: whole.get(k) for k in keys}


async def test_a_conversation_keeps_its_settings_for_every_send(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    llm.push(text("one"), text("two"))
    chat = make_client("openai-responses").conversation(
        kit(add_tool()), model_settings=ModelSettings(reasoning_effort="low")
    )
    await chat.send("a")
    await chat.send("b")
    assert [r.body["reasoning"] for r in llm.requests] == [{"effort": "low"}] * 2


def test_the_sync_forms_take_the_run_settings(llm: FakeLLM) -> None:
    from support.client_helpers import base_url
    from toolnexus.client import create_client

    llm.push(text("ok"))
    with create_client(
        base_url=base_url(llm, "anthropic"), style="anthropic", model="m", api_key="k"
    ) as client:
        client.run_sync("hi", model_settings=ModelSettings(thinking_budget=1024))
    assert llm.requests[-1].body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_a_client_over_a_model_in_this_process_checks_its_settings_too() -> None:
    from toolnexus.testing import ScriptedModel

    with pytest.raises(ConfigError, match="reasoning_effort is OpenAI's"):
        ScriptedModel("ok").client(
            "anthropic", model_settings=ModelSettings(reasoning_effort="low")
        )
    model = ScriptedModel("ok")
    client = model.client("openai", model_settings=ModelSettings(reasoning_effort="low"))
    client.run_sync("hi")
    client.close()
    assert model.last_request.body["reasoning_effort"] == "low"


async def test_prompt_cache_counts_a_breakpoint_a_provider_tool_brings(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    search = {"type": "web_search_20250305", "name": "web_search", "cache_control": EPHEMERAL}
    settings = ModelSettings(prompt_cache=True, provider_tools=[search])
    client = make_client("anthropic", system_prompt="Be brief.")
    body = await sent(llm, client, settings)
    assert body["tools"][-1] == search  # its own breakpoint, not a second one
    assert str(body).count("cache_control") == 3  # with the system prompt's and the message's
