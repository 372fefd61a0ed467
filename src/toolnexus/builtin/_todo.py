"""`todowrite`: the model's todo list, echoed back (no state is kept between calls)."""

from __future__ import annotations

from typing import Any

from toolnexus.builtin._common import ToolError, builtin_tool, item_object, prop, tool_schema
from toolnexus.types import Tool, ToolContext, ToolResult

DESCRIPTION = (
    "Write your todo list for the current task (the whole list each time). Use it to plan "
    "multi-step work and mark items completed as you go."
)
_TODO = item_object(
    {
        "id": prop("string", "A stable identifier."),
        "text": prop("string", "What is to be done."),
        "completed": prop("boolean", "Whether it is done."),
    },
    required=["id", "text", "completed"],
)
SCHEMA = tool_schema(
    {"todos": prop("array", "The complete list, replacing the previous one.", items=_TODO)},
    required=["todos"],
)


def render_todos(todos: list[Any]) -> str:
    if not todos:
        return "(no todos)"
    lines = []
    for item in todos:
        entry = item if isinstance(item, dict) else {}
        text = entry.get("text")
        mark = "[x]" if entry.get("completed") is True else "[ ]"
        lines.append(f"{mark} {text if isinstance(text, str) else ''}")
    return "\n".join(lines)


def todowrite_tool() -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        todos = args.get("todos")
        if not isinstance(todos, list):
            raise ToolError("todos is required")
        return ToolResult(render_todos(todos), False, {"todos": todos})

    return builtin_tool("todowrite", DESCRIPTION, SCHEMA, run)
