"""Argument checks against a tool's `input_schema` (jsonschema), compiled once per tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolnexus._log import warn
from toolnexus.types import Tool, error_message


class _ArgumentCheck:
    """A tool's compiled checks: strict-mode null stripping, then schema validation.

    A schema the validator cannot use (not valid JSON Schema, a `$ref` that resolves nowhere)
    turns checking off for that tool with one warning: a server's broken schema must not make
    its tool uncallable, and the tool still sees every argument.
    """

    __slots__ = ("strip", "tool_name", "validator")

    def __init__(self, tool: Tool) -> None:
        from jsonschema import validators  # type: ignore[import-untyped]  # heavy: first use

        from toolnexus._schema import null_stripper

        schema = tool.input_schema
        self.tool_name = tool.name
        self.strip: Callable[[Any], Any] | None = null_stripper(schema)
        self.validator: Any = None
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except Exception as exc:
            self.give_up(f"is not valid JSON Schema ({_first_line(exc)})")
            return
        self.validator = cls(schema)

    def give_up(self, problem: str) -> None:
        self.validator = None
        warn(f'tool "{self.tool_name}": its input_schema {problem} — arguments are not checked')

    def problems(self, args: dict[str, Any]) -> list[Any]:
        """Every validation error, in argument order (none once checking is off)."""
        if self.validator is None:
            return []
        try:
            return sorted(self.validator.iter_errors(args), key=lambda e: list(e.absolute_path))
        except Exception as exc:  # e.g. referencing.Unresolvable: the schema, not the call
            self.give_up(f"cannot be applied ({_first_line(exc)})")
            return []


_REASON_LIMIT = 160  # characters: jsonschema quotes whole schemas in some messages


def _first_line(exc: BaseException) -> str:
    line = error_message(exc).splitlines()[0]
    return line if len(line) <= _REASON_LIMIT else line[: _REASON_LIMIT - 1] + "…"


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
        check = tool._validator = _ArgumentCheck(tool)
    if check.strip is not None:
        args = check.strip(args)
    errors = check.problems(args)
    if not errors:
        return args, None
    lines = [f"- {_path(e)}: {e.message}" for e in errors]
    return args, f"Invalid arguments for tool {tool.name}:\n" + "\n".join(lines)
