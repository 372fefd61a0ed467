"""`create_in_process_client`: a model in this process behind the same loop (client.md §9)."""

from __future__ import annotations

import pytest

from support.client_helpers import add_tool, kit
from toolnexus import StreamingUnsupported, ToolnexusError
from toolnexus.client import create_in_process_client


def scripted(*replies):
    queue = list(replies)
    seen = []

    def generate(request):
        seen.append(request)
        return queue.pop(0)

    return generate, seen


async def test_sync_generate_runs_the_loop():
    generate, seen = scripted(
        {
            "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}],
            "usage": {"promptTokens": 4, "completionTokens": 1},
        },
        {"content": "5", "usage": {"prompt_tokens": 6, "completion_tokens": 1, "total_tokens": 7}},
    )
    client = create_in_process_client(model="local", generate=generate, system_prompt="S")
    result = await client.run("add", kit(add_tool()))
    assert result.text == "5"
    assert result.tool_calls[0]["output"] == "5"
    assert result.usage == {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    first = seen[0]
    assert first["model"] == "local"
    assert first["messages"] == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "add"},
    ]
    assert first["tools"] == kit(add_tool()).to_openai()
    assert list(first["body"]) == ["model", "messages", "tools", "tool_choice"]
    assert result.messages[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
            }
        ],
    }
    assert result.messages[3] == {"role": "tool", "tool_call_id": "call_0", "content": "5"}


async def test_async_generate_and_string_arguments():
    async def generate(request):
        if len(request["messages"]) == 1:
            return {"toolCalls": [{"id": "x1", "name": "add", "arguments": '{"a":1,"b":1}'}]}
        return {"content": "two"}

    client = create_in_process_client(model="m", generate=generate)
    result = await client.run("x", kit(add_tool()))
    assert result.text == "two"
    assert result.tool_calls[0]["output"] == "2"
    assert result.messages[1]["tool_calls"][0]["id"] == "x1"


async def test_no_tools_means_tools_none():
    generate, seen = scripted({"content": "hi"})
    await create_in_process_client(model="m", generate=generate).run("x")
    assert seen[0]["tools"] is None
    assert seen[0]["body"] == {"model": "m", "messages": [{"role": "user", "content": "x"}]}


async def test_failures_are_final_by_default():
    calls = []

    def generate(request):
        calls.append(1)
        raise RuntimeError("model crashed")

    client = create_in_process_client(model="m", generate=generate)
    with pytest.raises(RuntimeError, match="model crashed"):
        await client.run("x")
    assert len(calls) == 1
    retrying = create_in_process_client(model="m", generate=generate, retries=2, retry_base_ms=0)
    with pytest.raises(RuntimeError):
        await retrying.run("x")
    assert len(calls) == 4


async def test_bad_reply_shape_is_a_clear_error():
    client = create_in_process_client(model="m", generate=lambda r: "just text")
    with pytest.raises(TypeError, match="generate\\(\\) must return a dict"):
        await client.run("x")


async def test_streaming_is_refused_clearly():
    client = create_in_process_client(model="m", generate=lambda r: {"content": "x"})
    with pytest.raises(NotImplementedError, match="does not support streaming"):
        client.stream("x")
    with pytest.raises(NotImplementedError, match="does not support streaming") as refused:
        await client.ask("x", on_text=print)
    assert isinstance(refused.value, StreamingUnsupported)  # under ToolnexusError too
    assert isinstance(refused.value, ToolnexusError)


@pytest.mark.parametrize("option", ["base_url", "api_key", "style", "http_client"])
def test_http_options_are_refused(option):
    with pytest.raises(TypeError, match=option):
        create_in_process_client(model="m", generate=lambda r: {}, **{option: None})


def test_generate_must_be_callable():
    with pytest.raises(TypeError):
        create_in_process_client(model="m", generate=None)
    with pytest.raises(TypeError):
        create_in_process_client(model="m")  # type: ignore[call-arg]


async def test_no_api_key_needed(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    client = create_in_process_client(model="m", generate=lambda r: {"content": "ok"})
    assert (await client.run("x")).text == "ok"


async def test_ask_with_memory_and_request_params():
    generate, seen = scripted({"content": "a"}, {"content": "b"})
    client = create_in_process_client(
        model="m", generate=generate, request_params={"temperature": 0}
    )
    await client.ask("one", id="c")
    result = await client.ask("two", id="c")
    assert [m["content"] for m in result.messages] == ["one", "a", "two", "b"]
    assert seen[1]["body"]["temperature"] == 0


async def test_missing_ids_become_call_index():
    generate, _ = scripted(
        {
            "tool_calls": [
                {"name": "add", "arguments": {"a": 1, "b": 1}},
                {"id": "mine", "name": "add", "arguments": {"a": 2, "b": 2}},
                {"name": "add", "arguments": {"a": 3, "b": 3}},
            ]
        },
        {"content": "done"},
    )
    result = await create_in_process_client(model="m", generate=generate).run("x", kit(add_tool()))
    assert [c["id"] for c in result.messages[1]["tool_calls"]] == ["call_0", "mine", "call_2"]
    assert [m["tool_call_id"] for m in result.messages[2:5]] == ["call_0", "mine", "call_2"]


def test_check_api_key_never_raises_in_process(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    client = create_in_process_client(model="m", generate=lambda r: {"content": "ok"})
    assert client.check_api_key() is None


def test_unknown_option_is_refused():
    with pytest.raises(TypeError, match="unexpected option 'temperature'"):
        create_in_process_client(model="m", generate=lambda r: {}, temperature=0)
