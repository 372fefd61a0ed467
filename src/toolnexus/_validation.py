"""Argument validation against a tool's `input_schema` (jsonschema, compiled once per tool)."""

from __future__ import annotations

from typing import Any

from toolnexus.types import Tool


def _compile(schema: dict[str, Any]) -> Any:
    from jsonschema import validators  # heavy import: load on first use

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except Exception:
        return None  # a server's malformed schema must not make its tool uncallable
    return cls(schema)


def _path(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(arguments)"


def argument_errors(tool: Tool, args: Any) -> str | None:
    """`None` when `args` satisfies the tool's schema, else one line per problem."""
    if tool.self_validating:
        return None
    validator = tool._validator
    if validator is None:
        validator = _compile(tool.input_schema) or False
        tool._validator = validator
    if validator is False:
        return None
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    lines = [f"- {_path(e)}: {e.message}" for e in errors]
    return f"Invalid arguments for tool {tool.name}:\n" + "\n".join(lines)
