"""`grep` and `glob`: directory walks in a worker thread that stops when the call is abandoned."""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from toolnexus.builtins._common import (
    Settings,
    ToolError,
    builtin_tool,
    optional_number,
    optional_str,
    prop,
    required_str,
    tool_schema,
)
from toolnexus.builtins._glob import compile_glob, walk
from toolnexus.builtins._output import HINT_SEARCH, cap_text
from toolnexus.builtins._paths import start_dir
from toolnexus.types import Tool, ToolContext, ToolResult

DEFAULT_LIMIT = 100
# Files whose first bytes hold a NUL are binary: grep skips them.
_SNIFF = 8192
# Files up to this size are decoded at once; bigger ones are streamed line by line.
_WHOLE_FILE = 16 * 1024 * 1024

T = TypeVar("T")

GREP_DESCRIPTION = (
    "Search file contents with a Python regular expression. Returns `file:line:text` for each "
    "matching line (at most `limit`, default 100). `include` filters files by glob "
    "(e.g. `*.py`, `src/**/*.ts`). Skips .git, node_modules and binary files."
)
_DEFAULT_PATH = "(default: the workspace or current directory)"
GREP_SCHEMA = tool_schema(
    {
        "pattern": prop("string", "Regular expression (Python syntax)."),
        "path": prop("string", f"File or directory to search {_DEFAULT_PATH}."),
        "include": prop("string", "Only search files matching this glob."),
        "limit": prop("number", "Maximum lines returned (default 100)."),
    },
    required=["pattern"],
)

GLOB_DESCRIPTION = (
    "Find files by glob pattern: `*` matches within a name, `**` across directories, `?` one "
    "character; a pattern without `/` matches base names. Returns sorted paths relative to "
    "`path` (at most `limit`, default 100). Skips .git and node_modules."
)
GLOB_SCHEMA = tool_schema(
    {
        "pattern": prop("string", "Glob pattern, e.g. `**/*.py`."),
        "path": prop("string", f"Directory to search {_DEFAULT_PATH}."),
        "limit": prop("number", "Maximum paths returned (default 100)."),
    },
    required=["pattern"],
)


def _limit(args: dict[str, Any]) -> int:
    value = optional_number(args, "limit")
    return int(value) if value is not None and value >= 1 else DEFAULT_LIMIT


def _root(settings: Settings, raw: str | None) -> str:
    path = start_dir(settings, raw)
    if raw and not os.path.exists(path):
        raise ToolError(f"path not found: {raw}")
    return path


def _display(raw: str | None, rel: str) -> str:
    """`path` joined with the relative path, as the model wrote `path`."""
    if raw is None or raw in ("", ".", "./"):
        return rel
    return os.path.join(raw, rel) if rel else raw


async def _in_thread(ctx: ToolContext, work: Callable[[Callable[[], bool]], T]) -> T:
    """Run `work(stop)` in a worker thread; `stop()` turns true once the call is cancelled."""
    abandoned = threading.Event()
    signal = ctx.signal

    def stop() -> bool:
        return abandoned.is_set() or (signal is not None and signal.is_set())

    try:
        return await asyncio.to_thread(work, stop)
    finally:
        abandoned.set()


# Constructs whose meaning changes when a line is searched inside the whole text.
_LINE_SENSITIVE = ("\\A", "\\Z", "\\z", "(?<", "(?=", "(?!")


def whole_text_filter(pattern: str) -> re.Pattern[str] | None:
    """A regex that matches a file's whole text whenever `pattern` matches one of its lines
    (so files without a match are skipped in one search), or `None` when none can be built."""
    if any(token in pattern for token in _LINE_SENSITIVE):
        return None
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error:
        return None


def _lines(pieces: Iterable[str]) -> Iterator[str]:
    """Lines from the pieces of a `\n` split: a final `\r` dropped, no line after a final `\n`."""
    previous: str | None = None
    for piece in pieces:
        if previous is not None:
            yield previous.removesuffix("\r")
        previous = piece
    if previous:
        yield previous.removesuffix("\r")


def _grep_file(
    path: str,
    regex: re.Pattern[str],
    prefilter: re.Pattern[str] | None,
    display: str,
    out: list[str],
    limit: int,
    stop: Callable[[], bool],
) -> None:
    try:
        with open(path, "rb") as fh:
            if b"\0" in fh.read(_SNIFF):
                return  # binary
            fh.seek(0)
            pieces: Iterable[str]
            if os.fstat(fh.fileno()).st_size <= _WHOLE_FILE:
                text = fh.read().decode("utf-8", "replace")
                if "\r" in text:  # lines lose a final "\r": so must the text the filter sees
                    text = text.replace("\r\n", "\n")
                if prefilter is not None and prefilter.search(text) is None:
                    return
                pieces = text.split("\n")
            else:  # stream big files
                pieces = (raw.decode("utf-8", "replace").removesuffix("\n") for raw in fh)
            for number, line in enumerate(_lines(pieces), start=1):
                if regex.search(line):
                    out.append(f"{display}:{number}:{line}")
                    if len(out) >= limit:
                        return
                if number % 65536 == 0 and stop():
                    return
    except (OSError, ValueError):
        return  # unreadable files are skipped


def grep_tool(settings: Settings) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = required_str(args, "pattern")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regex: {exc}") from None
        prefilter = whole_text_filter(pattern)
        raw = optional_str(args, "path")
        include = optional_str(args, "include")
        matches_include = compile_glob(include) if include else None
        limit = _limit(args)

        def search(stop: Callable[[], bool]) -> list[str]:
            root = _root(settings, raw)
            out: list[str] = []
            if not os.path.isdir(root):  # a single file
                name = os.path.basename(root)
                if matches_include is None or matches_include(name):
                    _grep_file(root, regex, prefilter, raw or name, out, limit, stop)
                return out
            for entry, rel in walk(root, stop):
                if matches_include is not None and not matches_include(rel):
                    continue
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue  # symlinks, sockets, fifos...
                except OSError:
                    continue
                _grep_file(entry.path, regex, prefilter, _display(raw, rel), out, limit, stop)
                if len(out) >= limit or stop():
                    break
            return out

        lines = await _in_thread(ctx, search)
        text = cap_text("\n".join(lines), settings.max_output_bytes, HINT_SEARCH)
        return ToolResult(text, False, {"count": len(lines)})

    return builtin_tool("grep", GREP_DESCRIPTION, GREP_SCHEMA, run)


def glob_tool(settings: Settings) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = required_str(args, "pattern")
        matches = compile_glob(pattern)
        raw = optional_str(args, "path")
        limit = _limit(args)

        def find(stop: Callable[[], bool]) -> list[str]:
            root = _root(settings, raw)
            if not os.path.isdir(root):
                raise ToolError(f"not a directory: {raw}")
            found = [rel for _, rel in walk(root, stop) if matches(rel)]
            found.sort()
            return found[:limit]

        paths = await _in_thread(ctx, find)
        text = cap_text("\n".join(paths), settings.max_output_bytes, HINT_SEARCH)
        return ToolResult(text, False, {"count": len(paths)})

    return builtin_tool("glob", GLOB_DESCRIPTION, GLOB_SCHEMA, run)
