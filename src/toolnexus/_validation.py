"""Argument checks against a tool's `input_schema` (jsonschema), compiled once per tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolnexus.types import Tool


class _ArgumentCheck:
    """A tool's compiled checks: strict-mode null stripping, then schema validation."""

    __slots__ = ("strip", "validator")

    def __init__(self, schema: dict[str, Any]) -> None:
        from jsonschema import validators  # type: ignore[import-untyped]  # heavy: first use

        from toolnexus._schema import null_stripper

        self.strip: Callable[[Any], Any] | None = null_stripper(schema)
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        try:
            cls.check_schema(schema)
            self.validator: Any = cls(schema)
        except Exception:  # a server's malformed schema must not make its tool uncallable
            self.validator = None


def _path(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(arguments)"


def check_arguments(tool: Tool, args: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """`(args, None)` when `args` satisfy the tool's schema, else `(args, <one line per problem>)`.

    Nulls that mean "not given" (OpenAI strict mode sends them for omitted optional arguments)
    are dropped first. Tools that validate their own arguments pass through untouched.
    """
    if tool.self_validating:
        return args, None
    check = tool._validator
    if check is None:
        check = tool._validator = _ArgumentCheck(tool.input_schema)
    if check.strip is not None:
        args = check.strip(args)
    if check.validator is None:
        return args, None
    errors = sorted(check.validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if not errors:
        return args, None
    lines = [f"- {_path(e)}: {e.message}" for e in errors]
    return args, f"Invalid arguments for tool {tool.name}:\n" + "\n".join(lines)
