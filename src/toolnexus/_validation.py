"""Argument validation against a tool's `input_schema` (jsonschema, compiled once per tool)."""

from __future__ import annotations

from typing import Any

from toolnexus.types import Tool


def _compile(schema: dict[str, Any]) -> Any:
    from jsonschema import validators  # type: ignore[import-untyped]  # heavy: load on first use

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


_strippers: dict[int, tuple[dict[str, Any], Any]] = {}


def drop_absent_nulls(tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
    """`args` without the `null`s that mean "not given" (OpenAI strict mode), see `_schema`."""
    schema = tool.input_schema
    hit = _strippers.get(id(schema))
    if hit is None or hit[0] is not schema:
        from toolnexus._schema import null_stripper

        if len(_strippers) > 4096:  # schemas are few; bound the cache anyway
            _strippers.clear()
        hit = _strippers[id(schema)] = (schema, null_stripper(schema))
    strip = hit[1]
    return args if strip is None else strip(args)  # type: ignore[no-any-return]
