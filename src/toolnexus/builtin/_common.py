"""What every built-in shares: settings, the error type, argument and schema helpers, wrapper."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from toolnexus.errors import ToolnexusError
from toolnexus.types import Tool, ToolContext, ToolResult, error_message

DEFAULT_MAX_OUTPUT_BYTES = 51200


class Settings:
    """Options of the built-ins (see `toolnexus.builtin`).

    `base` is the real (symlink-free, absolute) directory relative paths start from and `bash`
    runs in, or `None` for the process's working directory. `confined` refuses paths whose
    real path leaves `base`; `outside` is the refusal's wording. `shell` is the argv prefix
    `bash` runs a command with.
    """

    __slots__ = ("base", "base_label", "confined", "max_output_bytes", "shell")

    def __init__(
        self,
        base: str | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        *,
        confined: bool | None = None,
        shell: tuple[str, ...] = (),
        base_label: str | None = None,
    ) -> None:
        self.base = base
        self.confined = base is not None if confined is None else confined
        self.max_output_bytes = max_output_bytes
        self.shell = shell
        self.base_label = base_label

    def outside(self, raw: str) -> str:
        """The refusal of a path that leaves the base directory."""
        if self.base_label is None:
            return f"path outside the workspace: {raw}"
        return f"{raw} resolves outside baseDir {self.base_label}"


class ToolError(ToolnexusError):
    """A failure reported to the model as `<tool name>: <message>`."""


Run = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]

# What each built-in may do to the world, as MCP tool annotations (a guard can read them, the
# gateway lists them): these only look, those change files or run commands.
_READ_ONLY = frozenset({"read", "grep", "glob", "webfetch", "question", "todowrite"})
_DESTRUCTIVE = frozenset({"bash", "write", "edit", "apply_patch"})


def _annotations(name: str) -> dict[str, Any] | None:
    if name in _READ_ONLY:
        return {"annotations": {"readOnlyHint": True}}
    if name in _DESTRUCTIVE:
        return {"annotations": {"destructiveHint": True}}
    return None


def builtin_tool(name: str, description: str, schema: dict[str, Any], run: Run) -> Tool:
    """A `source="builtin"` tool whose failures all become `<name>: <message>` error results."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await run(args, ctx)
        except ToolError as exc:
            return ToolResult(f"{name}: {exc}", True)
        except Exception as exc:  # an unexpected failure is still data for the model
            return ToolResult(f"{name}: {error_message(exc)}", True)

    return Tool(name, description, schema, "builtin", execute, metadata=_annotations(name))


def required_str(args: dict[str, Any], key: str) -> str:
    """A non-empty string argument; missing, empty or not a string ⇒ `<key> is required`."""
    value = args.get(key)
    if not isinstance(value, str) or value == "":
        raise ToolError(f"{key} is required")
    return value


def required_text(args: dict[str, Any], key: str) -> str:
    """A required string argument that may be empty (`content`, `newString`)."""
    value = optional_str(args, key)
    if value is None:
        raise ToolError(f"{key} is required")
    return value


def _optional(args: dict[str, Any], key: str, accepts: Callable[[Any], bool], kind: str) -> Any:
    value = args.get(key)
    if value is None or accepts(value):
        return value
    raise ToolError(f"{key} must be {kind}")


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def optional_str(args: dict[str, Any], key: str) -> str | None:
    """An optional string argument (`None` when absent)."""
    value: str | None = _optional(args, key, _is_str, "a string")
    return value


def optional_number(args: dict[str, Any], key: str) -> float | None:
    """An optional number argument as a float (`None` when absent; booleans refused)."""
    value = _optional(args, key, _is_number, "a number")
    return None if value is None else float(value)


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


# -- input schemas -----------------------------------------------------------------------------


def prop(kind: str, description: str, **keywords: Any) -> dict[str, Any]:
    """One property schema: its JSON type, extra keywords (`enum`, `items`, ...), a description."""
    return {"type": kind, **keywords, "description": description}


def item_object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An object inside an array (`questions`, `todos`): no `additionalProperties` key."""
    return {"type": "object", "properties": properties, "required": required}


def tool_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A built-in's top-level input schema: a closed object (`additionalProperties: false`)."""
    return {**item_object(properties, required), "additionalProperties": False}
