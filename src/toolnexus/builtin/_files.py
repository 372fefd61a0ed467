"""`read`, `write` and `edit`: UTF-8 file I/O in worker threads, relative to the base directory."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import IO, Any

from toolnexus.builtin._common import (
    Settings,
    ToolError,
    builtin_tool,
    optional_number,
    prop,
    required_str,
    required_text,
    tool_schema,
)
from toolnexus.builtin._output import HINT_READ, CappedBuffer
from toolnexus.builtin._paths import open_file, os_reason, resolve
from toolnexus.content import decoded_len, media_part, mime_for_name
from toolnexus.types import Tool, ToolContext, ToolResult

READ_DESCRIPTION = (
    "Read a UTF-8 text file. Without offset/limit the whole file is returned as is; with them, "
    "`limit` lines starting at line `offset` (1-based). Long output is cut; page through big "
    "files with offset/limit."
)
READ_SCHEMA = tool_schema(
    {
        "path": prop("string", "File to read."),
        "offset": prop("number", "First line to return (1-based)."),
        "limit": prop("number", "Number of lines to return."),
    },
    required=["path"],
)

WRITE_DESCRIPTION = (
    "Create or overwrite a file with `content` (UTF-8), creating missing parent directories."
)
WRITE_SCHEMA = tool_schema(
    {
        "path": prop("string", "File to write."),
        "content": prop("string", "The complete new file content."),
    },
    required=["path", "content"],
)

EDIT_DESCRIPTION = (
    "Replace an exact string in an existing file. `oldString` must occur exactly once unless "
    "`replaceAll` is true. Include enough surrounding text to make it unique."
)
EDIT_SCHEMA = tool_schema(
    {
        "path": prop("string", "File to edit."),
        "oldString": prop("string", "Exact text to replace."),
        "newString": prop("string", "Replacement text."),
        "replaceAll": prop("boolean", "Replace every occurrence (default false)."),
    },
    required=["path", "oldString", "newString"],
)


# How much of one line `read` with offset/limit holds at once: the rest of a longer line is
# counted, not kept (the output cap cuts it anyway).
_LINE_HOLD = 1 << 20


def _split_lines(fh: IO[bytes], hold: int = _LINE_HOLD) -> Iterator[tuple[bytes, int]]:
    """The pieces of `content.split(b"\\n")`, streamed, each cut to `hold` bytes, with the
    number of bytes cut from it."""
    last = b""
    dropped = 0
    while True:
        piece = fh.readline(hold)
        if not piece:
            break
        if not last and not dropped:
            last = piece
        else:
            dropped += len(piece)
        if piece.endswith(b"\n"):
            if dropped:
                yield last, dropped - 1
            else:
                yield last[:-1], 0
            last, dropped = b"", 0
    yield last, dropped


# How much of a file `read` looks at for NUL bytes, the sign of a binary file (as git and grep
# tell them apart).
_SNIFF = 8192


def _read(settings: Settings, raw: str, offset: float | None, limit: float | None) -> str:
    path = resolve(settings, raw)
    cap = settings.max_output_bytes
    out = CappedBuffer(cap)
    try:
        with open_file(settings, path, raw) as fh:
            if b"\0" in fh.read(_SNIFF):
                raise ToolError(f"{raw} is a binary file (it holds NUL bytes), not text")
            fh.seek(0)
            if offset is None and limit is None:
                if cap <= 0:
                    return fh.read().decode("utf-8", "replace")
                out.add(fh.read(cap + 4))
                if out.total > cap:
                    size = os.fstat(fh.fileno()).st_size
                    if size >= out.total:
                        out.total = size
                    else:  # st_size is 0 for some special files: count the rest instead
                        while chunk := fh.read(1 << 20):
                            out.add(chunk)
                return out.text(HINT_READ)
            first = max(1, int(offset)) if offset is not None else 1
            count = max(0, int(limit)) if limit is not None else None
            taken = 0
            for number, (line, cut) in enumerate(_split_lines(fh), start=1):
                if number < first:
                    continue
                if count is not None and taken >= count:
                    break
                out.add(b"\n" + line if taken else line)
                out.total += cut
                taken += 1
            return out.text(HINT_READ)
    except OSError as exc:
        raise ToolError(os_reason(exc, raw)) from None


def _read_media(settings: Settings, raw: str) -> ToolResult:
    """A media file (by its extension in `MEDIA_TYPES`) as one part, whole: no paging, no cap."""
    path = resolve(settings, raw)
    try:
        with open_file(settings, path, raw) as fh:
            media = media_part(fh, mime_type=mime_for_name(raw), name=os.path.basename(raw))
    except OSError as exc:
        raise ToolError(os_reason(exc, raw)) from None
    output = f"{raw} ({media.mimeType}, {decoded_len(media.data)} bytes)"
    return ToolResult(output, parts=[media])


def _write(settings: Settings, raw: str, content: str) -> int:
    path = resolve(settings, raw)
    data = content.encode("utf-8")
    try:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open_file(settings, path, raw, write=True) as fh:
            fh.write(data)
    except OSError as exc:
        raise ToolError(os_reason(exc, raw)) from None
    return len(data)


def read_text(settings: Settings, path: str, raw: str) -> str:
    """A whole file as strict UTF-8 (files about to be rewritten must not lose bytes)."""
    try:
        with open_file(settings, path, raw) as fh:
            data = fh.read()
    except OSError as exc:
        raise ToolError(os_reason(exc, raw)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"not a UTF-8 text file: {raw}") from None


def _edit(settings: Settings, raw: str, old: str, new: str, replace_all: bool) -> int:
    path = resolve(settings, raw)
    content = read_text(settings, path, raw)
    found = content.count(old)
    if found == 0:
        raise ToolError(f"oldString not found in {raw}")
    if found > 1 and not replace_all:
        raise ToolError(f"oldString is not unique in {raw} ({found} occurrences); use replaceAll")
    updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
    try:
        with open_file(settings, path, raw, write=True) as fh:
            fh.write(updated.encode("utf-8"))
    except OSError as exc:
        raise ToolError(os_reason(exc, raw)) from None
    return found


def read_tool(settings: Settings) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = required_str(args, "path")
        offset = optional_number(args, "offset")
        limit = optional_number(args, "limit")
        if (
            mime_for_name(raw) is not None
        ):  # an image, PDF or audio file reaches the model as a part
            return await asyncio.to_thread(_read_media, settings, raw)
        return ToolResult(await asyncio.to_thread(_read, settings, raw, offset, limit))

    return builtin_tool("read", READ_DESCRIPTION, READ_SCHEMA, run)


def write_tool(settings: Settings) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = required_str(args, "path")
        content = required_text(args, "content")
        n = await asyncio.to_thread(_write, settings, raw, content)
        return ToolResult(f"Wrote {n} bytes to {raw}", False, {"bytes": n})

    return builtin_tool("write", WRITE_DESCRIPTION, WRITE_SCHEMA, run)


def edit_tool(settings: Settings) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = required_str(args, "path")
        old = required_str(args, "oldString")
        new = required_text(args, "newString")
        replace_all = args.get("replaceAll") is True
        n = await asyncio.to_thread(_edit, settings, raw, old, new, replace_all)
        plural = "replacement" if n == 1 else "replacements"
        return ToolResult(f"Edited {raw} ({n} {plural})", False, {"replacements": n})

    return builtin_tool("edit", EDIT_DESCRIPTION, EDIT_SCHEMA, run)
