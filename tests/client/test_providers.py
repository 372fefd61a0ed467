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
