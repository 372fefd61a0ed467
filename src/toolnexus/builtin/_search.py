"""`grep` (in a child process it can kill) and `glob` (a walk in a worker thread that stops when
the call is abandoned)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from toolnexus._aio import Expired, Signalled, bounded
from toolnexus._numbers import format_number
from toolnexus._proctree import ProcessTree, start_uncancelled
from toolnexus.builtin._common import (
    Settings,
    ToolError,
    budget,
    builtin_tool,
    optional_number,
    optional_str,
    prop,
    required_str,
    tool_schema,
)
from toolnexus.builtin._glob import compile_glob, walk
from toolnexus.builtin._output import HINT_SEARCH, cap_text
from toolnexus.builtin._paths import start_dir
from toolnexus.types import Tool, ToolContext, ToolResult

DEFAULT_LIMIT = 100
# A search ends after this long unless the caller's `ctx.timeout` is shorter.
DEFAULT_TIMEOUT_MS = 60000.0
_SCANNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_grep_scan.py")

T = TypeVar("T")

GREP_DESCRIPTION = (
    "Search file contents with a Python regular expression. Returns `file:line:text` for each "
    "matching line, `file` relative to `path` (at most `limit`, default 100). `include` "
    "filters files by glob (e.g. `*.py`, `src/**/*.ts`). Skips .git, node_modules and binary files."
)
_DEFAULT_PATH = "(default: the base directory or current directory)"
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


async def _scan(job: dict[str, Any], ctx: ToolContext, limit_ms: float) -> list[str]:
    """Run the search in a child process (see `_grep_scan`); kill it on the limit or cancel."""
    tree = ProcessTree()

    async def discard(proc: asyncio.subprocess.Process) -> None:
        await tree.kill(proc.pid)
        await proc.communicate()

    proc = await start_uncancelled(
        asyncio.create_subprocess_exec(
            sys.executable,
            "-E",
            "-s",
            "-S",
            _SCANNER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=tree.env(),
            start_new_session=True,
        ),
        discard,
    )
    talk = asyncio.ensure_future(proc.communicate(json.dumps(job).encode("utf-8")))
    try:
        await bounded(
            asyncio.shield(talk), signal=ctx.signal, timeout=limit_ms / 1000.0, unwind_s=0
        )
    except Expired:
        raise ToolError(f"search timed out after {format_number(limit_ms)}ms") from None
    except Signalled:
        raise ToolError("cancelled") from None
    finally:
        if not talk.done():
            await asyncio.shield(tree.kill(proc.pid))
            await asyncio.shield(talk)
    out, err = talk.result()
    if proc.returncode != 0:
        reason = err.decode("utf-8", "replace").strip().splitlines()
        raise ToolError(f"search failed: {reason[-1] if reason else proc.returncode}")
    return [json.loads(line) for line in out.splitlines()]


def grep_tool(settings: Settings) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = required_str(args, "pattern")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regex: {exc}") from None
        raw = optional_str(args, "path")
        include = optional_str(args, "include")
        if include:
            compile_glob(include)
        limit = _limit(args)
        limit_ms = budget(None, ctx, DEFAULT_TIMEOUT_MS, 1000.0)
        root = await asyncio.to_thread(_root, settings, raw)
        job = {"root": root, "pattern": pattern, "include": include, "limit": limit}
        lines = await _scan(job, ctx, limit_ms)
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
