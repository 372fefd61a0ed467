"""Mapping an MCP `tools/call` result onto a `ToolResult`: text first, structure kept aside."""

from __future__ import annotations

import re
from typing import Any

from toolnexus._json import compact_json
from toolnexus.types import ToolResult

ERROR_FALLBACK = "MCP tool returned an error"


_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")
_DATA_URL = re.compile(r"data:[^;,]*;base64,", re.IGNORECASE)
_MIN_BASE64 = 256


def map_call_result(result: Any, server: str) -> ToolResult:
    """`isError` ⇒ error with the non-blank texts. Otherwise the text blocks, when any has
    text, are what the model sees; without them a lone `structuredContent` is rendered as
    compact JSON with base64 scrubbed. Each non-text block adds one line. `metadata` keeps
    `server`, `structured` and the upstream `content` (wire dicts) verbatim."""
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    lines: list[str] = []
    content = getattr(result, "content", None) or ()
    for block in content:
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
    elif any(t.strip() for t in texts):
        body = "\n".join(texts)
    elif structured is not None and not parts:
        body = compact_json(scrub_base64(structured))
    else:
        body = ""
    metadata: dict[str, Any] = {"server": server}
    if structured is not None:
        metadata["structured"] = structured
    metadata["content"] = [_wire(block) for block in content]
    if parts:
        metadata["parts"] = parts
        body = "\n".join([body, *lines]) if body else "\n".join(lines)
    return ToolResult(output=body, is_error=is_error, metadata=metadata)


def scrub_base64(value: Any) -> Any:
    """`value` with every long base64 string (or base64 data URL) replaced by a placeholder."""
    if isinstance(value, str):
        if len(value) >= _MIN_BASE64:
            match = _DATA_URL.match(value)
            if match is not None:
                return f"[base64: {_base64_size(value[match.end() :])} bytes]"
            if _BASE64.fullmatch(value):
                return f"[base64: {_base64_size(value)} bytes]"
        return value
    if isinstance(value, dict):
        return {k: scrub_base64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_base64(v) for v in value]
    return value


def _wire(block: Any) -> dict[str, Any]:
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        wire: dict[str, Any] = dump(by_alias=True, mode="json", exclude_none=True)
        return wire
    return dict(block) if isinstance(block, dict) else {"type": str(getattr(block, "type", ""))}


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
    core = "".join(data.split())
    chars = len(core)
    padding = len(core) - len(core.rstrip("="))
    return max(0, (chars - padding) * 3 // 4)
