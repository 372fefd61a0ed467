"""`webfetch`: an HTTP(S) GET through the shared pooled client, as html, markdown or text."""

from __future__ import annotations

import asyncio
import codecs
import re
from typing import Any

from toolnexus._aio import Signalled, until_signalled
from toolnexus._numbers import format_number
from toolnexus.builtin._common import (
    Settings,
    ToolError,
    budget,
    builtin_tool,
    optional_number,
    prop,
    required_str,
    tool_schema,
)
from toolnexus.builtin._output import HINT_WEB, cap_text, human_size
from toolnexus.types import Tool, ToolContext, ToolResult, error_message

DEFAULT_TIMEOUT_SECONDS = 30.0
FORMATS = ("text", "markdown", "html")
# A body larger than this is cut while downloading (the output cap is usually far smaller).
MAX_DOWNLOAD_BYTES = 5 * 1024 * 1024
# HTML beyond this many characters is not converted to markdown: the conversion's time and
# memory grow with its input (about 4 s and 120 MB per MiB), and the output cap is far smaller.
MAX_MARKDOWN_INPUT = 1024 * 1024
_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.8,*/*;q=0.5",
    "User-Agent": "toolnexus-webfetch",
}

DESCRIPTION = (
    "Fetch an http(s) URL with GET and return the body: `markdown` (default; HTML converted to "
    "markdown), `text` (HTML reduced to plain text) or `html` (unchanged). `timeout` is in "
    "seconds (default 30). Long pages are cut."
)
SCHEMA = tool_schema(
    {
        "url": prop("string", "The http:// or https:// URL to fetch."),
        "format": prop("string", "Output format (default markdown).", enum=list(FORMATS)),
        "timeout": prop("number", "Time limit in seconds (default 30)."),
    },
    required=["url"],
)

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)


def _charset(content_type: str, head: bytes) -> str:
    declared = re.search(r"charset\s*=\s*\"?([^\s;\"]+)", content_type, re.I)
    names = [declared.group(1)] if declared else []
    sniffed = _META_CHARSET.search(head[:4096])
    if sniffed:
        names.append(sniffed.group(1).decode("ascii"))
    for name in names:
        try:
            return codecs.lookup(name).name
        except LookupError:
            continue
    return "utf-8"


def _is_html(content_type: str, body: str) -> bool:
    if content_type:
        return "html" in content_type.lower()
    start = body.lstrip()[:64].lower()
    return start.startswith(("<!doctype html", "<html"))


def _convert(body: str, html: bool, fmt: str) -> str:
    if fmt == "html" or not html:
        return body
    from toolnexus.builtin._html import html_to_markdown, html_to_text

    if fmt == "markdown":
        try:
            return html_to_markdown(body[:MAX_MARKDOWN_INPUT])
        except RecursionError:  # nested deeper than the converter can follow: plain text
            pass
    return html_to_text(body)


async def _fetch(url: str, fmt: str, timeout: float, settings: Settings) -> ToolResult:
    import httpx2

    from toolnexus._http import shared_client

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        async with (
            asyncio.timeout_at(deadline),
            shared_client().stream("GET", url, headers=_HEADERS, timeout=timeout) as response,
        ):
            status = response.status_code
            if not 200 <= status < 300:
                return ToolResult(f"HTTP {status}", True, {"status": status})
            chunks: list[bytes] = []
            size = 0
            cut = False
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size >= MAX_DOWNLOAD_BYTES:
                    cut = True
                    break
            content_type = response.headers.get("content-type", "")
    except (TimeoutError, httpx2.TimeoutException):
        raise ToolError(f"request timed out after {format_number(timeout)}s") from None
    except httpx2.HTTPError as exc:
        raise ToolError(error_message(exc)) from None

    data = b"".join(chunks)[:MAX_DOWNLOAD_BYTES]
    body = data.decode(_charset(content_type, data), "replace")
    html = _is_html(content_type, body)
    try:
        async with asyncio.timeout_at(deadline):  # the time limit covers the conversion too
            text = await asyncio.to_thread(_convert, body, html, fmt)
    except TimeoutError:
        raise ToolError(f"converting the page timed out after {format_number(timeout)}s") from None
    text = cap_text(text, settings.max_output_bytes, HINT_WEB)
    if cut:
        text += f"\n[truncated: download stopped at {human_size(MAX_DOWNLOAD_BYTES)}]"
    elif html and fmt == "markdown" and len(body) > MAX_MARKDOWN_INPUT:
        text += f"\n[truncated: converted the first {human_size(MAX_MARKDOWN_INPUT)} of the page]"
    return ToolResult(text, False, {"status": status, "format": fmt})


def webfetch_tool(settings: Settings) -> Tool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        url = required_str(args, "url")
        fmt = args.get("format")
        if fmt not in FORMATS:
            fmt = "markdown"
        from urllib.parse import urlsplit

        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            shown = f"{scheme}:" if scheme else "none"
            raise ToolError(f"unsupported URL scheme ({shown}); only http and https URLs")
        if not parts.hostname:
            raise ToolError(f"invalid URL (no host): {url}")
        if ctx.cancelled:
            raise ToolError("cancelled")
        timeout = budget(optional_number(args, "timeout"), ctx, DEFAULT_TIMEOUT_SECONDS, 1.0)
        try:
            return await until_signalled(_fetch(url.strip(), fmt, timeout, settings), ctx.signal)
        except Signalled:
            raise ToolError("cancelled") from None

    return builtin_tool("webfetch", DESCRIPTION, SCHEMA, run)
