"""Answering a suspended tool at the terminal: the `wait_for` of `toolnexus run`.

A tool that needs the human (the `question` built-in, an MCP server's form or URL elicitation)
suspends with a `Request`; the REPL asks on the terminal and hands back an `Answer`, so the run
goes on instead of stopping. Ctrl-D or Ctrl-C at one of these prompts declines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from toolnexus.cli._render import Printer
from toolnexus.types import Answer, Request

__all__ = ["TerminalAnswers"]

ReadLine = Callable[[str], Awaitable[str | None]]


class _Declined(Exception):
    pass


class TerminalAnswers:
    """`wait_for(request) -> Answer`, asking through `read_line` (one request at a time)."""

    def __init__(self, read_line: ReadLine, printer: Printer) -> None:
        self._read_line = read_line
        self._printer = printer
        self._lock = asyncio.Lock()  # concurrent tool calls must not interleave their questions

    async def __call__(self, request: Request) -> Answer:
        if request.kind == "authorization" and "redirectUri" in (request.data or {}):
            # An OAuth sign-in (an MCP server's `auth`): the browser comes back to a listener.
            from toolnexus.cli._auth import SignIn

            async with self._lock:
                return await SignIn()(request)
        async with self._lock:
            try:
                data = await self._ask(request)
            except _Declined:
                self._printer.note(self._printer.dim("(declined)"))
                return Answer(request.id, False, reason="declined")
            return Answer(request.id, True, data=data)

    async def _line(self, prompt: str) -> str:
        line = await self._read_line(prompt)
        if line is None:
            raise _Declined
        return line.strip()

    async def _ask(self, request: Request) -> dict[str, Any]:
        data = request.data or {}
        if request.kind == "question" and isinstance(data.get("questions"), list):
            return await self._questions(data["questions"])
        if request.kind == "input" and isinstance(data.get("schema"), Mapping):
            self._printer.note(request.prompt or "The tool asks for input:")
            return await self._form(data["schema"])
        if request.kind == "authorization" or request.url:
            self._printer.note(f"{request.prompt or 'Open this URL to continue'}: {request.url}")
            reply = await self._line("press Enter when done (or type no to decline): ")
            if reply.lower() in ("n", "no"):
                raise _Declined
            return {}
        self._printer.note(request.prompt)
        return {"text": await self._line("answer> ")}

    async def _questions(self, questions: list[Any]) -> dict[str, Any]:
        answers = []
        for item in questions:
            question = item.get("question", "") if isinstance(item, Mapping) else str(item)
            options = item.get("options") if isinstance(item, Mapping) else None
            shown = f" ({', '.join(map(str, options))})" if options else ""
            answer = await self._line(f"{question}{shown} > ")
            answers.append({"question": question, "answer": answer})
        return {"answers": answers}

    async def _form(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return {}
        required = set(schema.get("required") or ())
        content: dict[str, Any] = {}
        for name, spec in properties.items():
            spec = spec if isinstance(spec, Mapping) else {}
            kind = str(spec.get("type", "string"))
            hint = spec.get("description") or spec.get("title") or ""
            label = f"{name} ({kind}{', required' if name in required else ''})"
            label += f" {hint}" if hint else ""
            while True:
                raw = await self._line(f"{label} > ")
                if not raw:
                    if name in required:
                        self._printer.note(self._printer.dim(f"{name} is required"))
                        continue
                    break
                try:
                    content[name] = _convert(raw, kind, spec.get("enum"))
                except ValueError as exc:
                    self._printer.note(self._printer.dim(str(exc)))
                    continue
                break
        return content


def _convert(raw: str, kind: str, enum: Any) -> Any:
    if isinstance(enum, list) and enum and raw not in map(str, enum):
        raise ValueError(f"one of: {', '.join(map(str, enum))}")
    if kind == "integer":
        try:
            return int(raw)
        except ValueError:
            raise ValueError("a whole number, please") from None
    if kind == "number":
        try:
            return float(raw)
        except ValueError:
            raise ValueError("a number, please") from None
    if kind == "boolean":
        lowered = raw.lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("yes or no, please")
    return raw
