"""Mapping an MCP `tools/call` result onto a `ToolResult` (mcp.md §3)."""

from __future__ import annotations

from typing import Any

from toolnexus._json import compact_json
from toolnexus.types import ToolResult

ERROR_FALLBACK = "MCP tool returned an error"


def map_call_result(result: Any, server: str) -> ToolResult:
    """`isError` ⇒ error with the non-blank texts; `structuredContent` ⇒ its compact JSON;
    else the texts joined. Non-text parts are kept in `metadata["parts"]`, one line each."""
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    lines: list[str] = []
    for block in getattr(result, "content", None) or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        else:
            part, line = _describe_part(block)
            parts.append(part)
            lines.append(line)
    is_error = bool(getattr(result, "is_error", False))
    structured = getattr(result, "structured_content", None)
    if is_error:
        body = "\n\n".join(t for t in texts if t.strip()) or ERROR_FALLBACK
    elif structured is not None:
        body = compact_json(structured)
    else:
        body = "\n".join(texts)
    metadata: dict[str, Any] = {"server": server}
    if parts:
        metadata["parts"] = parts
        body = "\n".join([body, *lines]) if body else "\n".join(lines)
    return ToolResult(output=body, is_error=is_error, metadata=metadata)


def _describe_part(block: Any) -> tuple[dict[str, Any], str]:
    """A non-text content block as a plain dict (wire keys) and its one-line summary."""
    kind = str(getattr(block, "type", "unknown"))
    if kind in ("image", "audio"):
        data = str(getattr(block, "data", "") or "")
        mime = str(getattr(block, "mime_type", "") or "")
        return (
            {"type": kind, "mimeType": mime, "data": data},
            f"[{kind}: {mime}, {_base64_size(data)} bytes]",
        )
    if kind == "resource":
        resource = getattr(block, "resource", None)
        uri = str(getattr(resource, "uri", ""))
        part: dict[str, Any] = {"type": "resource", "uri": uri}
        resource_mime = getattr(resource, "mime_type", None)
        if resource_mime:
            part["mimeType"] = resource_mime
        for key in ("text", "blob"):
            value = getattr(resource, key, None)
            if value is not None:
                part[key] = value
        return part, f"[resource: {uri}]"
    if kind == "resource_link":
        uri = str(getattr(block, "uri", ""))
        part = {"type": "resource_link", "uri": uri}
        for attr, key in (("name", "name"), ("mime_type", "mimeType")):
            value = getattr(block, attr, None)
            if value:
                part[key] = value
        return part, f"[resource link: {uri}]"
    dump = getattr(block, "model_dump", None)
    raw = dump(mode="json", by_alias=True, exclude_none=True) if callable(dump) else {"type": kind}
    return dict(raw), f"[{kind}]"


def _base64_size(data: str) -> int:
    """Decoded size of base64 text, computed without decoding it."""
    core = data.strip()
    chars = len(core) - core.count("\n") - core.count("\r") - core.count(" ")
    padding = len(core) - len(core.rstrip("="))
    return max(0, (chars - padding) * 3 // 4)
