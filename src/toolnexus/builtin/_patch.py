"""`apply_patch`: the `*** Begin Patch` format, validated whole before any file is touched."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from toolnexus.builtin._common import (
    Settings,
    ToolError,
    builtin_tool,
    prop,
    required_str,
    tool_schema,
)
from toolnexus.builtin._files import read_text
from toolnexus.builtin._paths import os_reason, resolve
from toolnexus.types import Tool, ToolContext, ToolResult

BEGIN = "*** Begin Patch"
END = "*** End Patch"
_HEADERS = (
    ("add", "*** Add File:"),
    ("update", "*** Update File:"),
    ("delete", "*** Delete File:"),
)
# Some models close a hunk with this marker (from another patch dialect); it carries no content.
_END_OF_FILE = "*** End of File"

DESCRIPTION = (
    "Apply a multi-file patch. Format:\n"
    "*** Begin Patch\n"
    "*** Add File: <path>\n+<line>\n"
    "*** Update File: <path>\n@@ <optional header>\n <context>\n-<removed>\n+<added>\n"
    "*** Delete File: <path>\n"
    "*** End Patch\n"
    "Each hunk's context and removed lines must match the file exactly. All or nothing: on any "
    "error no file is changed."
)
SCHEMA = tool_schema({"patchText": prop("string", "The full patch text.")}, required=["patchText"])


class Section:
    """One file operation of a patch: its kind, the path as written and its body lines."""

    __slots__ = ("kind", "lines", "path")

    def __init__(self, kind: str, path: str) -> None:
        self.kind = kind  # "add" | "update" | "delete"
        self.path = path
        self.lines: list[str] = []


def parse_patch(text: str) -> list[Section]:
    """The patch's file sections, in order (grammar errors raise `ToolError`)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and lines[i].strip() == "":
        i += 1
    if i == len(lines) or lines[i].strip() != BEGIN:
        raise ToolError(f"missing '{BEGIN}'")
    sections: list[Section] = []
    current: Section | None = None
    for line in lines[i + 1 :]:
        if line.strip() == END:
            return sections
        header = _header(line)
        if header is not None:
            current = header
            sections.append(current)
        elif current is not None:
            current.lines.append(line)
        elif line.strip() != "":
            raise ToolError(f"unexpected line: {line}")
    raise ToolError(f"missing '{END}'")


def _header(line: str) -> Section | None:
    for kind, prefix in _HEADERS:
        if line.startswith(prefix):
            path = line[len(prefix) :].strip()
            if not path:
                raise ToolError(f"missing file path: {line}")
            return Section(kind, path)
    return None


def _hunks(lines: list[str]) -> list[tuple[str, str]]:
    """(old block, new block) per hunk of an Update section."""
    hunks: list[tuple[list[str], list[str]]] = []
    current: tuple[list[str], list[str]] | None = None
    for line in lines:
        if line.startswith("@@"):
            current = ([], [])
            hunks.append(current)
            continue
        if line.strip() == _END_OF_FILE:
            continue
        if current is None:
            current = ([], [])
            hunks.append(current)
        old, new = current
        if line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            body = line[1:] if line.startswith(" ") else line
            old.append(body)
            new.append(body)
    return [("\n".join(old), "\n".join(new)) for old, new in hunks if old or new]


def _apply_hunks(content: str, lines: list[str]) -> str:
    for old, new in _hunks(lines):
        if old == "":
            sep = "" if content == "" or content.endswith("\n") else "\n"
            content = f"{content}{sep}{new}"
            continue
        at = content.find(old)
        if at < 0:
            raise ToolError("hunk does not match file contents")
        content = content[:at] + new + content[at + len(old) :]
    return content


def _plan(settings: Settings, sections: list[Section]) -> dict[str, str | None]:
    """Every touched file's final content (`None` = deleted), computed without writing."""
    state: dict[str, str | None] = {}

    def exists(path: str) -> bool:
        return state[path] is not None if path in state else os.path.exists(path)

    for section in sections:
        path = resolve(settings, section.path)
        if section.kind == "add":
            if exists(path):
                raise ToolError(f"file already exists: {section.path}")
            state[path] = "\n".join(x[1:] if x.startswith("+") else x for x in section.lines)
            continue
        if not exists(path):
            raise ToolError(f"file not found: {section.path}")
        if os.path.isdir(path):
            raise ToolError(f"is a directory: {section.path}")
        if section.kind == "delete":
            state[path] = None
            continue
        current = state.get(path)
        if current is None:
            current = read_text(settings, path, section.path)
        state[path] = _apply_hunks(current, section.lines)
    return state


def _commit(state: dict[str, str | None]) -> None:
    """Write and delete; if the file system fails midway, put back what was already changed."""
    backups: dict[str, bytes | None] = {}
    for path in state:
        try:
            with open(path, "rb") as fh:
                backups[path] = fh.read()
        except FileNotFoundError:
            backups[path] = None
        except OSError as exc:
            raise ToolError(os_reason(exc, path)) from None
    done: list[str] = []
    try:
        for path, content in state.items():
            if content is None:
                os.remove(path)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as fh:
                    fh.write(content.encode("utf-8"))
            done.append(path)
    except OSError as exc:
        for changed in [*done, path]:
            _restore(changed, backups[changed])
        raise ToolError(os_reason(exc, path)) from None


def _restore(path: str, original: bytes | None) -> None:
    try:
        if original is None:
            if os.path.exists(path):
                os.remove(path)
        else:
            with open(path, "wb") as fh:
                fh.write(original)
    except OSError:
        pass  # best effort: the original error is the one reported


def _apply(settings: Settings, text: str) -> dict[str, int]:
    sections = parse_patch(text)
    _commit(_plan(settings, sections))
    counts = {"added": 0, "updated": 0, "deleted": 0}
    for section in sections:
        counts[{"add": "added", "update": "updated", "delete": "deleted"}[section.kind]] += 1
    return counts


def apply_patch_tool(settings: Settings) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        text = required_str(args, "patchText")
        counts = await asyncio.to_thread(_apply, settings, text)
        n = sum(counts.values())
        noun = "operation" if n == 1 else "operations"
        return ToolResult(f"Applied patch: {n} file {noun}", False, counts)

    return builtin_tool("apply_patch", DESCRIPTION, SCHEMA, run)
