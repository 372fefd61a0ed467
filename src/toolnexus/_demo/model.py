"""The demo's scripted model and its native tool.

`ScriptedModel` is a `generate` callable for `create_in_process_client`: each turn it reads the
transcript it is given (the tool results of its previous calls) and asks for the next step, so the
real loop executes every call and the answers flow from real tools into later arguments.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlparse

PROMPT = (
    "Greet Ada with the hello-world skill, then add 19 and 23 on the demo MCP server "
    "and count the words of the greeting."
)

_BASE = re.compile(r"^Base directory for this skill: (\S+)$", re.MULTILINE)


def word_count(text: str) -> int:
    """Count the words of a text.

    Args:
        text: The text to count words in.
    """
    return len(text.split())


def _results(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Tool outputs of the transcript, by tool-call id."""
    return {
        str(m.get("tool_call_id")): str(m.get("content") or "")
        for m in messages
        if m.get("role") == "tool"
    }


def _path_of(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _calls(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls]}


class ScriptedModel:
    """A model that follows a fixed plan: skill → read → bash → MCP + native at once → answer.

    `mcp_prefix` is the demo MCP server's tool-name prefix (its server name plus `_`).
    """

    def __init__(self, mcp_prefix: str = "demo_") -> None:
        self.add_tool = f"{mcp_prefix}add"

    def __call__(self, request: Mapping[str, Any]) -> dict[str, Any]:
        messages: Sequence[Mapping[str, Any]] = request["messages"]
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        seen = _results(messages)
        if turn == 0:
            return _calls(("call_skill", "skill", {"name": "hello-world"}))
        if turn == 1:
            found = _BASE.search(seen.get("call_skill", ""))
            base = _path_of(found.group(1)) if found else "."
            return _calls(("call_read", "read", {"path": f"{base}/scripts/greet.sh"}))
        script = _script_path(messages)
        if turn == 2:
            command = f"sh {shlex.quote(script)} Ada"
            return _calls(("call_bash", "bash", {"command": command}))
        greeting = seen.get("call_bash", "").strip()
        if turn == 3:
            return _calls(
                ("call_add", self.add_tool, {"a": 19, "b": 23}),
                ("call_count", "word_count", {"text": greeting}),
            )
        return {
            "content": (
                f'The hello-world skill greets: "{greeting}". '
                f"The demo MCP server says 19 + 23 = {_sum_of(seen.get('call_add', ''))}, "
                f"and the native word_count tool counts {seen.get('call_count', '?')} words "
                "in the greeting."
            )
        }


def _script_path(messages: Sequence[Mapping[str, Any]]) -> str:
    """The path the model asked `read` for (the skill's script)."""
    for m in messages:
        for call in m.get("tool_calls") or ():
            if call.get("id") == "call_read":
                args = json.loads(call["function"]["arguments"])
                return str(args["path"])
    return "scripts/greet.sh"


def _sum_of(output: str) -> str:
    """`{"sum":42}` → `42` (the MCP tool's structured content); anything else as is."""
    try:
        data = json.loads(output)
    except ValueError:
        return output or "?"
    return str(data.get("sum", output)) if isinstance(data, dict) else output
