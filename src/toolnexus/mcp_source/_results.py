"""Mapping an MCP `tools/call` result onto a `ToolResult`: text first, structure kept aside,
binary content as content parts (never base64 in the text the model reads)."""

from __future__ import annotations

import re
from typing import Any

from toolnexus._json import compact_json
from toolnexus.content import ContentPart, ContentPartError, decoded_len, incoming_part
from toolnexus.types import ToolResult

ERROR_FALLBACK = "MCP tool returned an error"

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")
_DATA_URL = re.compile(r"data:[^;,]*;base64,", re.IGNORECASE)
_MIN_BASE64 = 256


def map_call_result(result: Any, server: str) -> ToolResult:
    """`isError` ⇒ error with the non-blank texts. Otherwise the text blocks, when any has
    text, are what the model sees; without them a lone `structuredContent` is rendered as
    compact JSON with base64 scrubbed. Each non-text block adds one line (`[image: <mime>, <n>
    bytes]`, `[resource link: <uri>]`, ...) and, when binary or a link, a content part.

    `metadata` keeps `server`, the `structuredContent` as received (under `structured` and
    `structuredContent`) and the upstream `content` as wire dicts."""
    texts: list[str] = []
    parts: list[ContentPart] = []
    lines: list[str] = []
    others = False
    content = getattr(result, "content", None) or ()
    for block in content:
        if getattr(block, "type", None) == "text":
            texts.append(block.text)
            continue
        others = True
        line, part = _describe_block(block)
        lines.append(line)
        if part is not None:
            parts.append(part)
    is_error = bool(getattr(result, "is_error", False))
    structured = getattr(result, "structured_content", None)
    if is_error:
        body = "\n\n".join(t for t in texts if t.strip())
        if not body:
            body = compact_json(scrub_base64(structured)) if structured is not None else ""
        body = body or ERROR_FALLBACK
    elif any(map(str.strip, texts)):
        body = "\n".join(texts)
    elif structured is not None and not others:
        body = compact_json(scrub_base64(structured))
    else:
        body = ""
    if lines:
        body = "\n".join([body, *lines]) if body else "\n".join(lines)
    metadata: dict[str, Any] = {"server": server}
    if structured is not None:
        metadata["structured"] = structured
        metadata["structuredContent"] = structured
    metadata["content"] = list(map(wire, content))
    return ToolResult(output=body, is_error=is_error, metadata=metadata, parts=parts or None)


def scrub_base64(value: Any) -> Any:
    """`value` with every long base64 string (or base64 data URL) replaced by a placeholder."""
    if isinstance(value, str):
        if len(value) >= _MIN_BASE64:
            match = _DATA_URL.match(value)
            if match is not None:
                return f"[base64: {_size(value[match.end() :])} bytes]"
            if _BASE64.fullmatch(value):
                return f"[base64: {_size(value)} bytes]"
        return value
    if isinstance(value, dict):
        return {k: scrub_base64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_base64(v) for v in value]
    return value


def _describe_block(block: Any) -> tuple[str, ContentPart | None]:
    """A non-text content block's line for the output, and its content part (if any)."""
    kind = str(getattr(block, "type", "unknown"))
    if kind in ("image", "audio"):
        data = str(getattr(block, "data", "") or "")
        mime = getattr(block, "mime_type", None) or "application/octet-stream"
        return f"[{kind}: {mime}, {_size(data)} bytes]", _part(data=data, mime_type=mime, type=kind)
    if kind == "resource":
        resource = getattr(block, "resource", None)
        uri = str(getattr(resource, "uri", ""))
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource: {uri}]\n{text}", None
        blob = getattr(resource, "blob", None)
        mime = getattr(resource, "mime_type", None)
        part = _part(data=str(blob), mime_type=mime, name=uri) if blob is not None else None
        return f"[resource: {uri}]", part
    if kind == "resource_link":
        uri = str(getattr(block, "uri", ""))
        name = getattr(block, "name", None) or None
        return f"[resource link: {uri}]", _part(
            url=uri, mime_type=getattr(block, "mime_type", None), name=name
        )
    return f"[unsupported MCP content: {kind}]", None


def _part(**fields: Any) -> ContentPart | None:
    try:
        return incoming_part(**fields)
    except ContentPartError:
        return None  # described by its line; nothing the model could use


def wire(value: Any) -> dict[str, Any]:
    """An SDK model as its wire form (wire keys, no nulls); a dict as a copy."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped: dict[str, Any] = dump(by_alias=True, mode="json", exclude_none=True)
        return dumped
    return dict(value) if isinstance(value, dict) else {"type": str(getattr(value, "type", ""))}


def _size(data: str) -> int:
    """Decoded size of base64 text (whitespace ignored), computed without decoding it."""
    return decoded_len("".join(data.split()))
