"""Declarations out: OpenAI (plain and strict), Responses API, Anthropic and Gemini."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from toolnexus import Tool, create_toolkit, define_tool, to_anthropic, to_gemini, to_openai, tool
from toolnexus.adapters import gemini_schema, strict_schema, to_openai_responses


def custom(name: str, schema: dict[str, Any], description: str = "d") -> Tool:
    return Tool(name, description, schema, "custom", lambda args, ctx: "ok")


class Filters(BaseModel):
    tag: str
    min_score: float = 0.0


@tool
def search(query: str, limit: int = 10, filters: Filters | None = None) -> str:
    """Search the catalogue."""
    return query


@tool
def tally(counts: dict[str, int]) -> int:
    return sum(counts.values())


MCP_STYLE = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "title": "Args",
    "properties": {
        "title": {"type": "string", "title": "Title", "default": "untitled"},
        "mode": {"const": "fast"},
        "owner": {"$ref": "#/$defs/Person"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "A note"},
        "size": {"type": ["integer", "null"], "examples": [3]},
        "either": {"type": ["integer", "string"]},
        "tree": {"$ref": "#/definitions/Node"},
    },
    "required": ["title"],
    "additionalProperties": False,
    "$defs": {
        "Person": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "additionalProperties": False,
        }
    },
    "definitions": {
        "Node": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}},
        }
    },
}


def test_openai_and_anthropic_pass_schemas_through() -> None:
    tools = [custom("a", MCP_STYLE), search]
    assert to_openai(tools)[0] == {
        "type": "function",
        "function": {"name": "a", "description": "d", "parameters": MCP_STYLE},
    }
    assert to_anthropic(tools) == [
        {"name": "a", "description": "d", "input_schema": MCP_STYLE},
        {
            "name": "search",
            "description": "Search the catalogue.",
            "input_schema": search.input_schema,
        },
    ]
    assert to_anthropic([]) == []
    json.dumps(to_openai(tools))
    json.dumps(to_anthropic(tools))


def test_gemini_wraps_everything_in_one_element() -> None:
    assert to_gemini([]) == [{"functionDeclarations": []}]
    declared = to_gemini([custom("a", {"type": "object", "properties": {}}), search])
    assert len(declared) == 1
    assert [d["name"] for d in declared[0]["functionDeclarations"]] == ["a", "search"]
    json.dumps(declared)


def test_gemini_schema_conversion_per_contract() -> None:
    before = copy.deepcopy(MCP_STYLE)
    converted = to_gemini([custom("a", MCP_STYLE)])[0]["functionDeclarations"][0]["parameters"]
    assert before == MCP_STYLE  # never mutated
    assert converted == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},  # a property named "title" survives, its keywords go
            "mode": {"enum": ["fast"]},
            "owner": {"type": "object", "properties": {"name": {"type": "string"}}},
            "note": {"type": "string", "description": "A note", "nullable": True},
            "size": {"type": "integer", "nullable": True},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "tree": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"type": "object"}}},
            },
        },
        "required": ["title"],
    }


def test_gemini_conversion_of_native_schemas() -> None:
    converted = gemini_schema(search.input_schema)
    assert "additionalProperties" not in json.dumps(converted)
    filters = converted["properties"]["filters"]
    assert filters["nullable"] is True and filters["type"] == "object"
    assert "default" not in filters and "default" not in converted["properties"]["limit"]


def test_strict_native_tool_is_closed_required_and_nullable() -> None:
    [entry] = to_openai([search], strict=True)
    function = entry["function"]
    assert function["strict"] is True
    params = function["parameters"]
    assert params["required"] == ["query", "limit", "filters"]
    assert params["additionalProperties"] is False
    assert params["properties"]["limit"] == {"type": ["integer", "null"]}
    nested = params["properties"]["filters"]["anyOf"][0]
    assert nested["additionalProperties"] is False
    assert nested["required"] == ["tag", "min_score"]
    assert nested["properties"]["min_score"] == {"type": ["number", "null"]}
    assert "strict" not in to_openai([search])[0]["function"]  # default stays the contract shape
    assert "null" not in json.dumps(search.input_schema["properties"]["limit"])  # untouched


async def test_strict_null_round_trip_through_a_native_tool() -> None:
    # the model fills every property, null for "not given"; the tool still gets its defaults
    @tool
    def find(query: str, limit: int = 3, filters: Filters | None = None) -> str:
        return f"{query} {limit} {filters.min_score if filters else None}"

    args = {"query": "tea", "limit": None, "filters": {"tag": "green", "min_score": None}}
    assert (await find.execute(args)).output == "tea 3 0.0"


def test_strict_falls_back_for_open_maps_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    entries = to_openai([tally, search], strict=True)
    assert "strict" not in entries[0]["function"]
    assert entries[0]["function"]["parameters"] == tally.input_schema
    assert entries[1]["function"]["strict"] is True
    messages = [r.getMessage() for r in caplog.records if r.name == "toolnexus"]
    assert messages == [
        '[toolnexus] tool "tally" cannot use OpenAI strict mode '
        "((root).counts is an open map (additionalProperties)) — sent non-strict"
    ]
    to_openai([tally], strict=True)  # the same tool again: no second warning
    assert len([r for r in caplog.records if r.name == "toolnexus"]) == 1


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "object", "properties": {"x": {"type": "object"}}}, "free-form object"),
        ({"type": "object"}, "not an object with declared properties"),
        ({"type": "object", "properties": {"x": {}}}, "has no type"),
        (
            {
                "type": "object",
                "properties": {"x": {"type": "string"}},
                "additionalProperties": True,
            },
            "open map",
        ),
        ({"type": "object", "properties": {"x": {"not": {"type": "string"}}}}, "uses not"),
    ],
)
def test_strict_reports_why_a_schema_is_lossy(schema: dict[str, Any], reason: str) -> None:
    converted, problem = strict_schema(schema)
    assert converted is schema
    assert problem is not None and reason in problem


def test_strict_accepts_mcp_schemas_without_additional_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "mode": {"type": "string", "enum": ["r", "w"], "default": "r"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        },
        "required": ["path"],
    }
    before = copy.deepcopy(schema)
    converted, problem = strict_schema(schema)
    assert problem is None
    assert schema == before
    assert converted == {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "mode": {"type": ["string", "null"], "enum": ["r", "w", None]},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
        },
        "required": ["path", "mode", "tags"],
        "additionalProperties": False,
    }


def test_responses_api_shape() -> None:
    assert to_openai_responses([search]) == [
        {
            "type": "function",
            "name": "search",
            "description": "Search the catalogue.",
            "parameters": search.input_schema,
            "strict": False,
        }
    ]
    [strict_entry] = to_openai_responses([search], strict=True)
    assert strict_entry["strict"] is True
    assert strict_entry["parameters"]["required"] == ["query", "limit", "filters"]
    assert to_openai_responses([]) == []


async def test_toolkit_declarations_in_every_dialect() -> None:
    unit = define_tool(
        name="unit",
        description="Pick a unit",
        input_schema={
            "type": "object",
            "properties": {"u": {"type": "string", "enum": ["km", "mi"]}},
        },
        execute=lambda a, c: a.get("u", "km"),
    )

    @tool
    def pick(u: Literal["km", "mi"] = "km") -> str:
        return u

    async with await create_toolkit(extra_tools=[unit, pick], builtins=False) as tk:
        assert tk.to_openai(strict=True) is tk.to_openai(strict=True)
        assert [e["function"].get("strict") for e in tk.to_openai(strict=True)] == [True, True]
        assert tk.to_openai_responses()[0]["name"] == "unit"
        assert tk.to_gemini()[0]["functionDeclarations"][1]["parameters"] == {
            "type": "object",
            "properties": {"u": {"enum": ["km", "mi"], "type": "string"}},
        }
