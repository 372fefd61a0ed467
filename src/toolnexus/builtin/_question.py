"""`question`: asking the human is a suspension (a `kind="question"` request), never an answer."""

from __future__ import annotations

from typing import Any

from toolnexus._json import compact_json
from toolnexus.builtin._common import ToolError, builtin_tool, item_object, prop, tool_schema
from toolnexus.types import Tool, ToolContext, ToolResult, pending

DESCRIPTION = (
    "Ask the user one or more questions and wait for the answers. Use it when you need a "
    "decision or information only the user has; offer `options` when the choices are known. "
    "Never use it to ask for passwords, API keys or other secrets."
)
_QUESTION = item_object(
    {
        "question": prop("string", "The question text."),
        "header": prop("string", "A short label for it."),
        "options": prop("array", "Choices to offer.", items={"type": "string"}),
        "multiple": prop("boolean", "Whether several options may be chosen."),
    },
    required=["question"],
)
SCHEMA = tool_schema(
    {"questions": prop("array", "The questions, in the order to ask them.", items=_QUESTION)},
    required=["questions"],
)


def render_questions(questions: list[Any]) -> str:
    """One line per question: its text, plus ` (options: a, b)` when it has options."""
    lines = []
    for item in questions:
        entry = item if isinstance(item, dict) else {}
        text = entry.get("question")
        line = text if isinstance(text, str) else ""
        options = entry.get("options")
        if isinstance(options, list) and options:
            line += " (options: " + ", ".join(_option(o) for o in options) + ")"
        lines.append(line)
    return "\n".join(lines)


def _option(value: Any) -> str:
    return value if isinstance(value, str) else compact_json(value)


def question_tool() -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.answer is not None:
            data = ctx.answer.data
            return ToolResult(compact_json(data if data is not None else {}))
        questions = args.get("questions")
        if not isinstance(questions, list) or not questions:
            raise ToolError("questions is required")
        return pending(
            kind="question", prompt=render_questions(questions), data={"questions": questions}
        )

    return builtin_tool("question", DESCRIPTION, SCHEMA, run)
