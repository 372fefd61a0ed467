"""Tool calls in (OpenAI, Anthropic, Gemini) and tool results out, including bad arguments."""

from __future__ import annotations

import pytest

from toolnexus import ToolResult
from toolnexus.adapters import (
    ToolCall,
    anthropic_tool_result,
    gemini_tool_result,
    openai_tool_result,
    parse_anthropic_tool_calls,
    parse_arguments,
    parse_gemini_tool_calls,
    parse_openai_tool_calls,
)


def test_openai_tool_calls_with_string_and_object_arguments() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Chennai"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}},
            {"id": "call_3", "type": "function", "function": {"name": "x", "arguments": {"a": 1}}},
        ],
    }
    assert parse_openai_tool_calls(message) == [
        ToolCall("call_1", "get_weather", {"city": "Chennai"}),
        ToolCall("call_2", "now", {}),
        ToolCall("call_3", "x", {"a": 1}),
    ]
    assert parse_openai_tool_calls({"role": "assistant", "content": "hi"}) == []


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"city": "Chen', "arguments are not valid JSON"),
        ("{'city': 'x'}", "arguments are not valid JSON"),
        ("[1, 2]", "arguments are not a JSON object (got list)"),
        ('"text"', "arguments are not a JSON object (got str)"),
        (42, "arguments are not a JSON object (got int)"),
    ],
)
def test_malformed_arguments_mark_the_call_invalid(raw: object, problem: str) -> None:
    [call] = parse_openai_tool_calls(
        {"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": raw}}]}
    )
    assert call.name == "f" and call.args == {}
    assert call.error is not None and call.error.startswith(problem)
    args, error = parse_arguments(raw)
    assert (args, error) == ({}, call.error)


def test_parse_error_names_the_json_problem() -> None:
    _, error = parse_arguments('{"a": 1,}')
    assert error is not None and "line 1" in error


def test_missing_ids_get_positional_ones() -> None:
    calls = parse_openai_tool_calls(
        {"tool_calls": [{"function": {"name": "a", "arguments": "{}"}}]}
    )
    assert calls[0].id == "call_0"


def test_anthropic_tool_use_blocks() -> None:
    content = [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Pune"}},
        {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
    ]
    assert parse_anthropic_tool_calls(content) == [
        ToolCall("toolu_1", "get_weather", {"city": "Pune"}),
        ToolCall("toolu_2", "now", {}),
    ]
    [bad] = parse_anthropic_tool_calls([{"type": "tool_use", "id": "t", "name": "f", "input": "x"}])
    assert bad.error is not None


def test_gemini_function_calls() -> None:
    parts = [
        {"text": "Checking."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Delhi"}}},
        {"functionCall": {"id": "fc-9", "name": "now"}},
    ]
    assert parse_gemini_tool_calls(parts) == [
        ToolCall("call_1", "get_weather", {"city": "Delhi"}),
        ToolCall("fc-9", "now", {}),
    ]


def test_results_in_each_provider_shape() -> None:
    ok = ToolResult("sunny in Chennai")
    failed = ToolResult("Unknown tool: x", True)
    assert openai_tool_result("call_1", ok) == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "sunny in Chennai",
    }
    assert anthropic_tool_result("toolu_1", failed) == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "Unknown tool: x",
        "is_error": True,
    }
    assert gemini_tool_result("get_weather", ok) == {
        "functionResponse": {"name": "get_weather", "response": {"output": "sunny in Chennai"}}
    }
    assert gemini_tool_result("x", failed)["functionResponse"]["response"] == {
        "error": "Unknown tool: x"
    }
