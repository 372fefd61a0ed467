"""Schemas that cannot explode: `$ref`s that each refer twice to the next definition would
inline to 2^n copies. Inlining them is bounded: the OpenAPI loader fails at once with an error
naming the operation, and Gemini declarations keep what fits (each further `$ref` becomes
`{"type": "object"}`) with a warning naming the tool."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from toolnexus.adapters import to_gemini
from toolnexus.errors import ConfigError
from toolnexus.openapi import http_tools_from_openapi
from toolnexus.types import Tool, ToolResult

DEPTH = 40  # 2^40 copies if inlined naively


def _dag(prefix: str) -> dict[str, Any]:
    """Definitions `d0`..`d{DEPTH}`, each an object whose two properties refer to the next."""
    defs: dict[str, Any] = {
        f"d{i}": {
            "type": "object",
            "properties": {
                "left": {"$ref": f"{prefix}d{i + 1}"},
                "right": {"$ref": f"{prefix}d{i + 1}"},
            },
        }
        for i in range(DEPTH)
    }
    defs[f"d{DEPTH}"] = {"type": "string"}
    return defs


async def _noop(args: dict[str, Any], ctx: Any) -> ToolResult:
    return ToolResult("ok")


async def test_an_openapi_ref_dag_fails_fast_naming_the_operation() -> None:
    document = {
        "openapi": "3.0.3",
        "info": {"title": "dag", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            "/x": {
                "post": {
                    "operationId": "explode",
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/d0"}}
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {"schemas": _dag("#/components/schemas/")},
    }
    assert len(json.dumps(document)) < 8000
    with pytest.raises(ConfigError) as caught:
        await http_tools_from_openapi(document)
    message = str(caught.value)
    assert message.startswith('OpenAPI operation "explode": the schema is too large once its $refs')
    assert "more than 100000 subschemas" in message


def test_a_tool_schema_ref_dag_is_declared_compactly_for_gemini(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/d0"}},
        "$defs": _dag("#/$defs/"),
    }
    assert len(json.dumps(schema)) < 8000
    tool = Tool("dag_tool", "explodes", schema, "python", _noop)
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        (declarations,) = to_gemini([tool])
    parameters = declarations["functionDeclarations"][0]["parameters"]
    size = len(json.dumps(parameters))
    assert size < 20 * 1024 * 1024, size
    assert "$ref" not in json.dumps(parameters)
    warnings = [r.getMessage() for r in caplog.records if "dag_tool" in r.getMessage()]
    assert len(warnings) == 1
    expected = 'tool "dag_tool": its input schema is too large once its $refs are inlined'
    assert expected in warnings[0]


def test_a_small_schema_with_refs_still_inlines_whole() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/pair"}, "b": {"$ref": "#/$defs/pair"}},
        "$defs": {"pair": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    tool = Tool("small", "d", schema, "python", _noop)
    parameters = to_gemini([tool])[0]["functionDeclarations"][0]["parameters"]
    pair = {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert parameters["properties"] == {"a": pair, "b": pair}
