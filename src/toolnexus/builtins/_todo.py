"""`todowrite`: the model's todo list, echoed back (no state is kept between calls)."""

from __future__ import annotations

from typing import Any

from toolnexus.builtins._common import ToolError, builtin_tool
from toolnexus.types import Tool, ToolContext, ToolResult

DESCRIPTION = (
    "Write your todo list for the current task (the whole list each time). Use it to plan "
    "multi-step work and mark items completed as you go."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "The complete list, replacing the previous one.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "A stable identifier."},
                    "text": {"type": "string", "description": "What is to be done."},
                    "completed": {"type": "boolean", "description": "Whether it is done."},
                },
                "required": ["id", "text", "completed"],
            },
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}


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
