"""The loop: multi-turn, parallel calls, bad calls fed back, limits, usage, provider errors."""

from __future__ import annotations

import asyncio

import pytest

from support.client_helpers import STYLES, add_tool, kit
from support.fake_llm import Reply, call, error, raw, text, tools
from toolnexus.client import ProviderError
from toolnexus.types import Tool, ToolResult


@pytest.mark.parametrize("style", STYLES)
async def test_multi_turn_loop(llm, make_client, style):
    llm.push(
        tools(call("add", {"a": 1, "b": 2})),
        tools(call("add", {"a": 3, "b": 4})),
        text("3 then 7"),
    )
    result = await make_client(style).run("go", kit(add_tool()))
    assert result.status == "done"
    assert result.text == "3 then 7"
    assert result.turns == 3
    assert result.tool_call_count == 2
    assert result.tool_calls == [
        {
            "name": "add",
            "args": {"a": 1, "b": 2},
            "output": "3",
            "is_error": False,
            "metadata": None,
        },
        {
            "name": "add",
            "args": {"a": 3, "b": 4},
            "output": "7",
            "is_error": False,
            "metadata": None,
        },
    ]
    assert result.usage == {"prompt_tokens": 30, "completion_tokens": 15, "total_tokens": 45}


@pytest.mark.parametrize("style", STYLES)
async def test_parallel_calls_run_concurrently_and_enter_in_call_order(llm, make_client, style):
    started = []
    release = asyncio.Event()

    async def slow(args, ctx):
        started.append(args["n"])
        if len(started) == 3:
            release.set()
        await release.wait()  # only returns once all three are running at the same time
        await asyncio.sleep(0.001 * (3 - args["n"]))  # finish in reverse order
        return f"r{args['n']}"

    tool = Tool(
        "slow", "", {"type": "object", "properties": {"n": {"type": "integer"}}}, "native", slow
    )
    llm.push(tools(*(call("slow", {"n": n}, id=f"id{n}") for n in range(3))), text("ok"))
    result = await make_client(style).run("x", kit(tool))
    assert [c["output"] for c in result.tool_calls] == ["r0", "r1", "r2"]
    sent = llm.requests[1].body["messages"]
    if style == "openai":
        assert [m["tool_call_id"] for m in sent[-3:]] == ["id0", "id1", "id2"]
    else:
        assert [b["tool_use_id"] for b in sent[-1]["content"]] == ["id0", "id1", "id2"]


async def test_tool_concurrency_bounds_parallel_calls(llm, make_client):
    running = 0
    peak = 0

    async def work(args, ctx):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.002)
        running -= 1
        return "ok"

    tool = Tool("work", "", None, "native", work)
    llm.push(tools(*(call("work", {}) for _ in range(7))), text("done"))
    result = await make_client("openai", tool_concurrency=2).run("x", kit(tool))
    assert result.tool_call_count == 7
    assert peak == 2


@pytest.mark.parametrize("style", STYLES)
async def test_malformed_arguments_are_fed_back(llm, make_client, style):
    llm.push(
        tools(call("add", "{not json", id="bad"), call("add", "[1,2]", id="arr")), text("sorry")
    )
    ran = []

    async def add(args, ctx):
        ran.append(args)
        return "x"

    result = await make_client(style).run("x", kit(Tool("add", "", None, "native", add)))
    assert ran == []
    first, second = result.tool_calls
    assert first["is_error"] and first["output"].startswith(
        "Invalid arguments for tool add: arguments are not valid JSON"
    )
    assert second["is_error"] and second["output"] == (
        "Invalid arguments for tool add: arguments are not a JSON object (got list)"
    )
    assert result.status == "done"


@pytest.mark.parametrize("style", STYLES)
async def test_schema_invalid_arguments_are_fed_back(llm, make_client, style):
    llm.push(tools(call("add", {"a": "one"})), text("sorry"))
    result = await make_client(style).run("x", kit(add_tool()))
    record = result.tool_calls[0]
    assert record["is_error"]
    assert record["output"].startswith("Invalid arguments for tool add:")
    assert "'b' is a required property" in record["output"]


@pytest.mark.parametrize("style", STYLES)
async def test_unknown_tool_and_raising_tool(llm, make_client, style):
    def boom(args, ctx):
        raise RuntimeError("kaboom")

    llm.push(tools(call("nope", {}), call("boom", {})), text("recovered"))
    result = await make_client(style).run("x", kit(Tool("boom", "", None, "native", boom)))
    unknown, raised = result.tool_calls
    assert unknown["is_error"] and unknown["output"] == "Unknown tool: nope. Available tools: boom"
    assert raised == {
        "name": "boom",
        "args": {},
        "output": "kaboom",
        "is_error": True,
        "metadata": None,
    }
    assert result.text == "recovered"
    if style == "anthropic":
        blocks = llm.requests[1].body["messages"][-1]["content"]
        assert [b["is_error"] for b in blocks] == [True, True]


async def test_unknown_tool_without_toolkit(llm, make_client):
    llm.push(tools(call("ghost", {})), text("ok"))
    result = await make_client("openai").run("x")
    assert result.tool_calls[0]["output"] == "Unknown tool: ghost. Available tools: none"
    assert "tools" not in llm.requests[0].body


@pytest.mark.parametrize("style", STYLES)
async def test_max_turns_reached_is_incomplete(llm, make_client, style):
    llm.push(
        tools(call("add", {"a": 1, "b": 1}), text="thinking"), tools(call("add", {"a": 2, "b": 2}))
    )
    result = await make_client(style, max_turns=2).run("x", kit(add_tool()))
    assert result.status == "incomplete"
    assert result.limit == "maxTurns"
    assert result.turns == 2
    assert result.text == ""  # the last turn only called tools
    assert result.tool_call_count == 2  # the last turn's tools still ran
    assert len(llm.requests) == 2


async def test_max_turns_text_of_last_turn(llm, make_client):
    llm.push(tools(call("add", {"a": 1, "b": 1}), text="partial answer"))
    result = await make_client("openai", max_turns=1).run("x", kit(add_tool()))
    assert (result.status, result.limit, result.text) == (
        "incomplete",
        "maxTurns",
        "partial answer",
    )


async def test_metadata_is_recorded(llm, make_client):
    async def meta(args, ctx):
        return ToolResult("ok", metadata={"status": 201})

    llm.push(tools(call("meta")), text("done"))
    result = await make_client("openai").run("x", kit(Tool("meta", "", None, "http", meta)))
    assert result.tool_calls[0]["metadata"] == {"status": 201}


# -- usage --------------------------------------------------------------------------------------


async def test_openai_usage_total_and_cached_tokens(llm, make_client):
    llm.push(
        tools(call("add", {"a": 1, "b": 1}), usage={"prompt_tokens": 7, "completion_tokens": 3}),
        text(
            "ok",
            usage={
                "prompt_tokens": 10,
                "completion_tokens": 2,
                "total_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 4},
            },
        ),
    )
    result = await make_client("openai").run("x", kit(add_tool()))
    assert result.usage == {
        "prompt_tokens": 17,
        "completion_tokens": 5,
        "total_tokens": 22,
        "cache_read_tokens": 4,
    }


async def test_anthropic_usage_with_cache_counts(llm, make_client):
    llm.push(
        text(
            "ok",
            usage={
                "input_tokens": 5,
                "output_tokens": 2,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 20,
            },
        )
    )
    result = await make_client("anthropic").run("x")
    assert result.usage == {
        "prompt_tokens": 5,
        "completion_tokens": 2,
        "total_tokens": 7,
        "cache_read_tokens": 100,
        "cache_write_tokens": 20,
    }


@pytest.mark.parametrize("style", STYLES)
async def test_missing_usage_counts_zero(llm, make_client, style):
    llm.push(text("ok", usage=None))
    result = await make_client(style).run("x")
    assert result.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


# -- thinking blocks ----------------------------------------------------------------------------


async def test_anthropic_thinking_blocks_kept_exactly(llm, make_client):
    thinking = [
        {"type": "thinking", "thinking": "Let me add.", "signature": "sig-abc=="},
        {"type": "redacted_thinking", "data": "opaque-bytes"},
    ]
    llm.push(tools(call("add", {"a": 1, "b": 2}, id="t1"), thinking=thinking), text("3"))
    await make_client("anthropic").run("x", kit(add_tool()))
    sent = llm.requests[1].body["messages"][1]["content"]
    assert sent[:2] == thinking
    assert sent[2]["type"] == "tool_use"


# -- provider errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
async def test_error_status_raises_provider_error(llm, make_client, style):
    llm.push(error(400, "model not found"))
    with pytest.raises(ProviderError) as info:
        await make_client(style).run("x")
    assert str(info.value) == "LLM 400: model not found"
    assert info.value.status == 400
    assert info.value.message == "LLM 400: model not found"
    assert "model not found" in info.value.body
    assert len(llm.requests) == 1  # 400 is not retried


async def test_error_body_text_is_cut_and_empty_body_is_bare(llm, make_client):
    llm.push(raw(404, "x" * 600), raw(403, ""))
    client = make_client("openai")
    with pytest.raises(ProviderError) as info:
        await client.run("x")
    # capped at MAX_ERROR_BODY (200, as published; issue 31 over the contract's 500)
    assert str(info.value) == "LLM 404: " + "x" * 200 + "…"
    assert info.value.body == "x" * 600  # the typed body keeps it all
    with pytest.raises(ProviderError) as info:
        await client.run("x")
    assert str(info.value) == "LLM 403"


LONG = "y" * 700


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"error": {"message": "model not found", "type": "x"}}, "LLM 400: model not found"),
        # the message is capped at MAX_ERROR_BODY (200) characters, as published (issue 31)
        ({"error": {"message": LONG}}, "LLM 400: " + LONG[:200] + "…"),
        # no error.message: the body text is the provider message
        ({"error": "overloaded"}, 'LLM 400: {"error": "overloaded"}'),
        ({"error": {"type": "invalid_request"}}, 'LLM 400: {"error": {"type": "invalid_request"}}'),
        ({"detail": LONG}, 'LLM 400: {"detail": "' + LONG[:188] + "…"),
        ("plain text failure", "LLM 400: plain text failure"),
        ("", "LLM 400"),
        ("  \n", "LLM 400"),
    ],
    ids=["message", "long-message", "string", "no-message", "json-cut", "text", "empty", "blank"],
)
async def test_provider_error_message_rules(llm, make_client, body, message):
    llm.push(raw(400, body))
    with pytest.raises(ProviderError) as info:
        await make_client("anthropic").run("x")
    assert str(info.value) == info.value.message == message
    assert info.value.status == 400


async def test_an_echoed_api_key_is_blanked_out_of_the_error(llm, make_client):
    def echo(status):
        def answer(request):
            key = request.headers["authorization"].removeprefix("Bearer ")
            return raw(status, {"error": {"message": f"Key rejected: {key}."}})

        return answer

    llm.push(echo(400), echo(401))
    client = make_client("openai", api_key="sk-live-SECRET-123")
    with pytest.raises(ProviderError) as info:
        await client.run("x")
    assert str(info.value) == "LLM 400: Key rejected: [redacted]."
    assert "SECRET" not in info.value.body
    with pytest.raises(ProviderError) as info:  # a 401/403 body is dropped whole
        await client.run("x")
    assert (str(info.value), info.value.body) == ("LLM 401", "")


@pytest.mark.parametrize("style", STYLES)
async def test_error_shaped_2xx_body(llm, make_client, style):
    llm.push(raw(200, {"error": {"message": "quota exceeded", "code": 402}}))
    with pytest.raises(ProviderError, match=r"^LLM 200: quota exceeded$"):
        await make_client(style).run("x")


@pytest.mark.parametrize("style", STYLES)
async def test_missing_envelope_is_a_provider_error(llm, make_client, style):
    llm.push(raw(200, {"id": "x"}), raw(200, "not json"))
    client = make_client(style)
    with pytest.raises(ProviderError, match=r"^LLM 200: response has no"):
        await client.run("x")
    with pytest.raises(ProviderError, match=r"^LLM 200: response is not JSON"):
        await client.run("x")


async def test_api_key_never_in_provider_error(llm, make_client):
    llm.push(error(401, "bad key"))
    with pytest.raises(ProviderError) as info:
        await make_client("openai", api_key="sk-VERY-SECRET").run("x")
    assert "VERY-SECRET" not in str(info.value) and "VERY-SECRET" not in info.value.body


async def test_provider_error_is_exported_at_the_root():
    import toolnexus

    assert toolnexus.ProviderError is ProviderError


async def test_history_is_not_mutated(llm, make_client):
    history = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}]
    snapshot = [dict(m) for m in history]
    llm.push(text("now"))
    result = await make_client("openai").run("x", history=history)
    assert history == snapshot
    assert result.messages[:2] == snapshot


async def test_reply_object_roundtrip(llm, make_client):
    # a turn with text alongside tool calls keeps both in the transcript
    llm.push(Reply(text="let me", calls=[call("add", {"a": 1, "b": 1}, id="c")]), text("2"))
    result = await make_client("openai").run("x", kit(add_tool()))
    assert result.messages[1]["content"] == "let me"
