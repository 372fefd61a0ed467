"""Provider answers replayed in the exact shapes each provider documents, streamed and whole.

The answers are files under `tests/fixtures/providers/` (`.json`: one whole answer; `.sse`: one
stream, event blocks separated by blank lines), served by the scripted endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.client_helpers import add_tool, kit
from support.fake_llm import FakeLLM, Reply, text
from toolnexus.client import Client
from toolnexus.content import ContentPart

REPLAYS = Path(__file__).parent.parent / "fixtures" / "providers"

MakeClient = Callable[..., Client]


def whole(name: str) -> Reply:
    """The recorded whole (non-streamed) answer `name`."""
    return Reply(body=json.loads((REPLAYS / name).read_text()))


def streamed(name: str) -> Reply:
    """The recorded stream `name`."""
    return Reply(sse=(REPLAYS / name).read_text().strip().split("\n\n"))


async def events(client: Client, prompt: Any, toolkit: Any = None) -> list[dict[str, Any]]:
    return [event async for event in client.stream(prompt, toolkit)]


# -- usage ------------------------------------------------------------------------------------


async def test_anthropic_streamed_usage_takes_the_final_figures(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    # `message_delta.usage` repeats `input_tokens`: it replaces, never adds (client.md §6).
    llm.push(streamed("anthropic_usage_repeated.sse"))
    seen = await events(make_client("anthropic"), "hi")
    result = seen[-1]["result"]
    assert result.text == "Hello!"
    assert result.usage == {
        "prompt_tokens": 4714,
        "completion_tokens": 12,
        "total_tokens": 4726,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert seen[-2] == {"type": "usage", "usage": result.usage}


# -- Gemini's OpenAI-compatible endpoint -------------------------------------------------------


async def test_gemini_whole_answer_without_call_id_echoes_the_id_its_result_answers(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    llm.push(whole("gemini_tool_call_no_id.json"), text("5"))
    result = await make_client("openai").run("add 2 and 3", kit(add_tool()))
    assert result.text == "5"
    sent = llm.requests[1].body["messages"]
    assistant, answer = sent[-2], sent[-1]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_0"]
    assert answer == {"role": "tool", "tool_call_id": "call_0", "content": "5"}
    # what we do not read travels back as it came (the thought signature)
    assert assistant["tool_calls"][0]["extra_content"] == {
        "google": {"thought_signature": "CiQB0e2Kb7Lx0pN1uYh3sQ=="}
    }


# -- Responses images ---------------------------------------------------------------------------


PIXEL = ContentPart(type="image", mimeType="image/png", data="iVBORw0KGgo=")


async def test_responses_images_always_say_their_detail(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    llm.push(text("a pixel"))
    await make_client("openai-responses").run(["what is this?", PIXEL])
    image = llm.requests[0].body["input"][0]["content"][1]
    assert image == {
        "type": "input_image",
        "image_url": "data:image/png;base64,iVBORw0KGgo=",
        "detail": "auto",
    }


async def test_responses_translated_chat_image_keeps_its_detail(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    images = [
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://x.test/b.png"}},
    ]
    llm.push(text("two pictures"))
    await make_client("openai-responses").translate([{"role": "user", "content": images}])
    sent = llm.requests[0].body["input"][0]["content"]
    assert [b["detail"] for b in sent] == ["low", "auto"]


# -- lossless assistant turns --------------------------------------------------------------------


def _kept(message: dict[str, Any]) -> dict[str, Any]:
    """The fields of an assistant message the client does not interpret, calls included."""
    read = {"role", "content", "tool_calls", "refusal"}
    calls = [
        {k: v for k, v in c.items() if k not in ("index", "type", "function")}
        | {"function": c["function"]}
        for c in message.get("tool_calls") or ()
    ]
    return {k: v for k, v in message.items() if k not in read and v is not None} | {
        "tool_calls": calls
    }


LOSSLESS = {
    "deepseek": (
        "deepseek_reasoning_tool_call",
        {
            "reasoning_content": "The user wants 2+3. I should call add.",
            "tool_calls": [
                {
                    "id": "call_00_Xk2Jt7Qw9",
                    "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
                }
            ],
        },
    ),
    "openrouter": (
        "openrouter_reasoning_details",
        {
            "reasoning": "Adding two numbers.",
            "reasoning_details": [
                {
                    "type": "reasoning.text",
                    "text": "Adding two numbers.",
                    "signature": "ErUBCkYIBxgCIkB3Zq",
                    "format": "anthropic-claude-v1",
                    "index": 0,
                }
            ],
            "tool_calls": [
                {
                    "id": "toolu_01A2b3C4d5E6",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
    ),
    "gemini": (
        "gemini_thought_signature",
        {
            "tool_calls": [
                {
                    "id": "call_0",
                    "extra_content": {"google": {"thought_signature": "CiQB0e2Kb7Lx0pN1uYh3sQ=="}},
                    "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
                }
            ]
        },
    ),
}


@pytest.mark.parametrize("provider", sorted(LOSSLESS))
async def test_chat_assistant_turn_goes_back_whole_streamed_or_not(
    llm: FakeLLM, make_client: MakeClient, provider: str
) -> None:
    name, expected = LOSSLESS[provider]
    client = make_client("openai")
    llm.push(streamed(f"{name}.sse"), text("5"))
    seen = await events(client, "add 2 and 3", kit(add_tool()))
    assert seen[-1]["result"].text == "5"
    sent_streamed = llm.requests[1].body["messages"][-2]
    whole_answer = (
        whole(f"{name}.json")
        if (REPLAYS / f"{name}.json").exists()
        else whole("gemini_tool_call_no_id.json")
    )
    llm.push(whole_answer, text("5"))
    result = await client.run("add 2 and 3", kit(add_tool()))
    assert result.text == "5"
    sent_whole = llm.requests[3].body["messages"][-2]
    assert _kept(sent_streamed) == expected
    assert _kept(sent_whole) == expected
    # the tool result answers the call the echoed message holds
    assert llm.requests[1].body["messages"][-1]["tool_call_id"] == expected["tool_calls"][0]["id"]


# -- finish reasons ------------------------------------------------------------------------------

CUT = {"openai": "length", "anthropic": "max_tokens", "openai-responses": "max_output_tokens"}


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("style", sorted(CUT))
async def test_an_answer_cut_at_the_token_limit_ends_incomplete(
    llm: FakeLLM, make_client: MakeClient, style: str, streaming: bool
) -> None:
    llm.push(text("The answer is", stop_reason=CUT[style]))
    client = make_client(style)
    if streaming:
        result = (await events(client, "what is it?"))[-1]["result"]
    else:
        result = await client.run("what is it?")
    assert (result.status, result.limit) == ("incomplete", "maxTokens")
    assert result.text == "The answer is"
    assert result.finish_reason == "length"
    assert [(t.finish_reason, t.raw_finish_reason) for t in result.model_turns] == [
        ("length", CUT[style])
    ]


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("style", sorted(CUT))
async def test_every_turn_says_why_it_ended(
    llm: FakeLLM, make_client: MakeClient, style: str, streaming: bool
) -> None:
    from support.fake_llm import call, tools

    llm.push(tools(call("add", {"a": 2, "b": 3})), text("5"))
    client = make_client(style)
    if streaming:
        result = (await events(client, "add", kit(add_tool())))[-1]["result"]
    else:
        result = await client.run("add", kit(add_tool()))
    assert result.status == "done"
    assert [t.finish_reason for t in result.model_turns] == ["tool_calls", "stop"]


async def test_openai_content_filter_ends_incomplete(llm: FakeLLM, make_client: MakeClient) -> None:
    llm.push(text("", stop_reason="content_filter"))
    result = await make_client("openai").run("x")
    assert (result.status, result.limit, result.finish_reason) == (
        "incomplete",
        "contentFilter",
        "content_filter",
    )


async def test_responses_incomplete_answer_is_not_done(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    llm.push(whole("responses_incomplete.json"))
    result = await make_client("openai-responses").run("x")
    assert (result.status, result.limit) == ("incomplete", "maxTokens")
    assert result.model_turns[0].raw_finish_reason == "max_output_tokens"
    assert result.model_turns[0].reasoning_redacted is True
    assert result.usage["reasoning_tokens"] == 12


async def test_anthropic_pause_turn_is_continued(llm: FakeLLM, make_client: MakeClient) -> None:
    paused = json.loads((REPLAYS / "anthropic_pause_turn.json").read_text())
    llm.push(Reply(body=paused), text("It was released in 2026."))
    result = await make_client("anthropic").run("when was toolnexus released?")
    assert result.status == "done"
    assert result.text == "It was released in 2026."
    assert [t.finish_reason for t in result.model_turns] == ["pause", "stop"]
    # the paused content goes back as it is, with no new user message
    second = llm.requests[1].body["messages"]
    assert second[-1] == {"role": "assistant", "content": paused["content"]}
    assert [m["role"] for m in second] == ["user", "assistant"]


async def test_anthropic_pause_on_the_last_turn_is_incomplete(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    llm.push(whole("anthropic_pause_turn.json"))
    result = await make_client("anthropic", max_turns=1).run("x")
    assert (result.status, result.limit) == ("incomplete", "maxTurns")


# -- reasoning -----------------------------------------------------------------------------------


async def test_anthropic_streamed_thinking_is_reasoning(
    llm: FakeLLM, make_client: MakeClient
) -> None:
    llm.push(streamed("anthropic_thinking_redacted.sse"), text("again"))
    client = make_client("anthropic")
    seen = await events(client, "2+3?")
    thoughts = [e for e in seen if e["type"] == "reasoning"]
    assert thoughts == [
        {"type": "reasoning", "delta": "2 plus 3"},
        {"type": "reasoning", "delta": " is 5."},
        {"type": "reasoning", "delta": "", "redacted": True},
    ]
    assert [e["type"] for e in seen].index("text") > [e["type"] for e in seen].index("reasoning")
    result = seen[-1]["result"]
    assert result.model_turns[0].reasoning == "2 plus 3 is 5."
    assert result.model_turns[0].reasoning_redacted is False  # some reasoning was shown
    # the blocks go back verbatim, signature and redacted data included
    await client.run("and now?", history=result.messages)
    sent = llm.requests[1].body["messages"][1]["content"]
    assert sent[:2] == [
        {
            "type": "thinking",
            "thinking": "2 plus 3 is 5.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDYWx",
        },
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"},
    ]


@pytest.mark.parametrize("provider", ["deepseek", "openrouter"])
async def test_chat_reasoning_streams_and_lands_on_the_result(
    llm: FakeLLM, make_client: MakeClient, provider: str
) -> None:
    name, expected = LOSSLESS[provider]
    reasoning = expected.get("reasoning_content") or expected.get("reasoning")
    llm.push(streamed(f"{name}.sse"), text("5"))
    client = make_client("openai")
    seen = await events(client, "add", kit(add_tool()))
    pieces = [e["delta"] for e in seen if e["type"] == "reasoning"]
    assert len(pieces) >= 2 and "".join(pieces) == reasoning
    result = seen[-1]["result"]
    assert [t.reasoning for t in result.model_turns] == [reasoning, None]
    llm.push(whole(f"{name}.json"), text("5"))
    result = await client.run("add", kit(add_tool()))
    assert [t.reasoning for t in result.model_turns] == [reasoning, None]


async def test_chat_reasoning_tokens_are_counted(llm: FakeLLM, make_client: MakeClient) -> None:
    llm.push(whole("deepseek_reasoning_tool_call.json"), text("5", usage=(1, 1)))
    result = await make_client("openai").run("add", kit(add_tool()))
    assert result.usage["reasoning_tokens"] == 30
    assert result.usage["cache_read_tokens"] == 64


async def test_responses_reasoning_summary_streams(llm: FakeLLM, make_client: MakeClient) -> None:
    llm.push(streamed("responses_reasoning_summary.sse"))
    seen = await events(make_client("openai-responses"), "2+3?")
    assert [e["delta"] for e in seen if e["type"] == "reasoning"] == [
        "**Adding numbers**",
        " 2 and 3 make 5.",
    ]
    result = seen[-1]["result"]
    assert result.text == "5"
    assert result.model_turns[0].reasoning == "**Adding numbers** 2 and 3 make 5."
    assert result.usage["reasoning_tokens"] == 64


async def test_encrypted_only_reasoning_is_a_marker(llm: FakeLLM, make_client: MakeClient) -> None:
    encrypted = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    llm.push(text("5", reasoning=[encrypted]))
    seen = await events(make_client("openai-responses"), "2+3?")
    assert [e for e in seen if e["type"] == "reasoning"] == [
        {"type": "reasoning", "delta": "", "redacted": True}
    ]
    assert seen[-1]["result"].model_turns[0].reasoning_redacted is True


async def test_no_reasoning_no_event(llm: FakeLLM, make_client: MakeClient) -> None:
    for style in sorted(CUT):
        llm.push(text("hi"))
        seen = await events(make_client(style), "hi")
        assert not [e for e in seen if e["type"] == "reasoning"]
        assert seen[-1]["result"].model_turns[0].reasoning is None
