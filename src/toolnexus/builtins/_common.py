"""What every built-in shares: its settings, its error type, argument helpers, the tool wrapper."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from toolnexus.types import Tool, ToolContext, ToolResult, error_message

DEFAULT_MAX_OUTPUT_BYTES = 51200


class Settings:
    """Options of the built-ins: `builtins={"workspace": ..., "max_output_bytes": ...}`.

    `workspace` is the real (symlink-free, absolute) path of the workspace, or `None`.
    """

    __slots__ = ("max_output_bytes", "workspace")

    def __init__(
        self, workspace: str | None = None, max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    ) -> None:
        self.workspace = workspace
        self.max_output_bytes = max_output_bytes


class ToolError(Exception):
    """A failure reported to the model as `<tool name>: <message>`."""


Run = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]


def builtin_tool(name: str, description: str, schema: dict[str, Any], run: Run) -> Tool:
    """A `source="builtin"` tool whose failures all become `<name>: <message>` error results."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await run(args, ctx)
        except ToolError as exc:
            return ToolResult(f"{name}: {exc}", True)
        except Exception as exc:  # an unexpected failure is still data for the model
            return ToolResult(f"{name}: {error_message(exc)}", True)

    return Tool(name, description, schema, "builtin", execute)


def required_str(args: dict[str, Any], key: str) -> str:
    """A required string argument; missing, empty or not a string ⇒ `<key> is required`."""
    value = args.get(key)
    if not isinstance(value, str) or value == "":
        raise ToolError(f"{key} is required")
    return value


def optional_str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string")
    return value


def optional_number(args: dict[str, Any], key: str) -> float | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError(f"{key} must be a number")
    return float(value)


def budget(arg: float | None, ctx: ToolContext, default: float, scale: float) -> float:
    """The effective time limit in the argument's unit.

    The model's own value and the caller's `ctx.timeout` (seconds, times `scale`) both bound the
    call: the smaller wins; with neither, `default`. Non-positive values are ignored.
    """
    limits = []
    if arg is not None and arg > 0:
        limits.append(arg)
    if ctx.timeout is not None and ctx.timeout > 0:
        limits.append(ctx.timeout * scale)
    return min(limits) if limits else default


def format_number(value: float) -> str:
    """`60000` rather than `60000.0`, `300` rather than `300.00000000000006`; fractions kept."""
    rounded = round(float(value), 3)
    return str(int(rounded)) if rounded.is_integer() else str(rounded)
