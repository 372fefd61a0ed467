"""Content parts: images, documents and audio as one portable value.

A `ContentPart` holds bytes (as standard base64 in `data`) or a provider-fetchable `url`, never a
path or a handle: the constructors `image`, `file` and `audio` read their source at once, so a
part survives persistence, replay and process boundaries. Transcripts and stores keep parts as
their canonical dicts (`to_dict`); provider blocks are made per request (`encode_part`).

Turning another protocol's payload into parts (MCP content, A2A file parts, HTTP bodies): call
`incoming_part(data=<base64>, mime_type=..., name=...)` or `incoming_part(url=..., ...)`. It
types the part by mime (`image/*`, `audio/*`, else `file`), falls back to the media table for a
missing mime and then to `application/octet-stream`, strips whitespace from the base64 without
re-encoding it, turns a `data:` URL into `data`, and validates. A result with parts but no text
uses `describe_parts(parts)` as its output. Use `to_dict`/`from_dict` to cross a JSON boundary.

Mime types come only from `MEDIA_TYPES` or an explicit argument: never sniffed from the bytes and
never from the platform's mime database, which differs between machines. Standard library only,
so importing this module stays cheap.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

from toolnexus.errors import ConfigError, ToolnexusError

__all__ = [
    "MEDIA_TYPES",
    "ContentPart",
    "ContentPartError",
    "UnsupportedPartError",
    "audio",
    "decoded_len",
    "describe_part",
    "describe_parts",
    "encode_part",
    "estimate_tokens",
    "file",
    "from_dict",
    "get_max_part_bytes",
    "image",
    "incoming_part",
    "is_part_dict",
    "kind_for_mime",
    "media_part",
    "mime_for_name",
    "normalize_parts",
    "part",
    "placeholder_text",
    "set_max_part_bytes",
    "summarize",
    "text",
    "to_dict",
    "validate",
]

PartType: TypeAlias = Literal["text", "image", "file", "audio"]
ContentStyle: TypeAlias = Literal["openai", "anthropic"]
OCTET_STREAM = "application/octet-stream"

#: Lower-case extension (no dot) -> (mimeType, part type). The only source of inferred mimes.
MEDIA_TYPES: dict[str, tuple[str, str]] = {
    "png": ("image/png", "image"),
    "jpg": ("image/jpeg", "image"),
    "jpeg": ("image/jpeg", "image"),
    "gif": ("image/gif", "image"),
    "webp": ("image/webp", "image"),
    "pdf": ("application/pdf", "file"),
    "mp3": ("audio/mpeg", "audio"),
    "wav": ("audio/wav", "audio"),
}

_TYPES = ("text", "image", "file", "audio")
_MEDIA_KINDS = ("image", "file", "audio")


class ContentPartError(ToolnexusError, ValueError):
    """A content part could not be built or is invalid (bad fields, source, or size)."""


class UnsupportedPartError(ToolnexusError, ValueError):
    """A provider style has no block shape for a part; names the part's type, mime and style."""

    def __init__(self, part_type: str, mime_type: str | None, style: str) -> None:
        self.part_type = part_type
        self.mime_type = mime_type
        self.style = style
        suffix = f" ({mime_type})" if mime_type else ""
        super().__init__(f'no "{style}" block shape for a {part_type} part{suffix}')


@dataclass(slots=True, repr=False)
class ContentPart:
    """One piece of content: `text`, or an `image`/`file`/`audio` with a `mimeType` and exactly
    one of `data` (standard padded base64) or `url` (fetched by the provider, never by us)."""

    type: str
    text: str | None = None
    mimeType: str | None = None
    data: str | None = None
    url: str | None = None
    name: str | None = None

    def __repr__(self) -> str:
        # Never the base64 itself: a repr ends up in logs and tracebacks.
        fields = [f"type={self.type!r}"]
        if self.text is not None:
            fields.append(f"text={self.text!r}")
        if self.mimeType is not None:
            fields.append(f"mimeType={self.mimeType!r}")
        if self.data is not None:
            fields.append(f"data=<{decoded_len(self.data)} bytes>")
        if self.url is not None:
            fields.append(f"url={self.url!r}")
        if self.name is not None:
            fields.append(f"name={self.name!r}")
        return f"ContentPart({', '.join(fields)})"


class BinaryReadable(Protocol):
    """A binary file-like source: `read()` returns bytes."""

    def read(self, size: int = ..., /) -> bytes: ...


PartSource: TypeAlias = (
    "str | os.PathLike[str] | os.PathLike[bytes] | bytes | bytearray | memoryview | BinaryReadable"
)
PartLike: TypeAlias = "ContentPart | Mapping[str, Any] | str"


# ---------------------------------------------------------------------------------------------
# validation and the canonical dict form


def validate(p: ContentPart) -> ContentPart:
    """Check a part's fields; return it unchanged or raise `ContentPartError`."""
    kind = p.type
    if kind == "text":
        if p.text is None:
            raise ContentPartError("a text part needs text")
        if not isinstance(p.text, str):
            raise ContentPartError(f"a text part's text must be a str, not {type(p.text).__name__}")
        return p
    if kind not in _TYPES:
        raise ContentPartError(f'unknown content part type "{kind}"')
    if not p.mimeType:
        raise ContentPartError(f"a {kind} part needs a mimeType")
    if p.data is not None and p.url is not None:
        raise ContentPartError(f"a {kind} part carries both data and url — exactly one is allowed")
    if p.data is None and p.url is None:
        raise ContentPartError(
            f"a {kind} part carries neither data nor url — exactly one is required"
        )
    for field in ("mimeType", "data", "url", "name"):
        value = getattr(p, field)
        if value is not None and not isinstance(value, str):
            raise ContentPartError(
                f"a {kind} part's {field} must be a str, not {type(value).__name__}"
            )
    if p.url is not None and p.url[:5].lower() == "data:":
        raise ContentPartError(
            "a data: URL belongs in data — build the part with image()/file()/audio()"
        )
    return p


def part(
    *,
    type: str,
    mimeType: str | None = None,
    data: str | None = None,
    url: str | None = None,
    name: str | None = None,
    text: str | None = None,
) -> ContentPart:
    """A validated part from already-normalised fields (base64 `data` or a `url`)."""
    return validate(
        ContentPart(type=type, text=text, mimeType=mimeType, data=data, url=url, name=name)
    )


def to_dict(p: ContentPart | Mapping[str, Any]) -> dict[str, Any]:
    """The canonical dict of a part: only the keys it carries, every value a `str`."""
    if not isinstance(p, ContentPart):
        p = from_dict(p)
    if p.type == "text":
        return {"type": "text", "text": p.text or ""}
    out: dict[str, Any] = {"type": p.type}
    if p.mimeType is not None:
        out["mimeType"] = p.mimeType
    if p.data is not None:
        out["data"] = p.data
    if p.url is not None:
        out["url"] = p.url
    if p.name:
        out["name"] = p.name
    return out


def from_dict(d: Mapping[str, Any]) -> ContentPart:
    """A part from its canonical dict (missing keys are `None`, a missing type `""`); not
    validated — use `validate` or `normalize_parts` for input you did not produce."""
    return ContentPart(
        type=d.get("type", ""),
        text=d.get("text"),
        mimeType=d.get("mimeType"),
        data=d.get("data"),
        url=d.get("url"),
        name=d.get("name"),
    )


def is_part_dict(d: Any) -> bool:
    """True for a canonical part dict; a provider block (`image_url`, `source`, ...) is not one."""
    if not isinstance(d, Mapping):
        return False
    kind = d.get("type")
    if kind == "text":
        return isinstance(d.get("text"), str)
    return kind in _MEDIA_KINDS and isinstance(d.get("mimeType"), str)


def normalize_parts(parts: Iterable[PartLike]) -> list[dict[str, Any]]:
    """Validated canonical dicts from `ContentPart`s, part dicts and `str`s (text parts), in
    order; anything else raises `ContentPartError`."""
    if isinstance(parts, (str, bytes, Mapping, ContentPart)):
        raise ContentPartError(
            f"parts must be a list of str, ContentPart or part dicts, not {type(parts).__name__}"
        )
    return [_normalize_one(item) for item in parts]


def _normalize_one(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if isinstance(item, ContentPart):
        return to_dict(validate(item))
    if isinstance(item, Mapping) and is_part_dict(item):
        return to_dict(validate(from_dict(item)))
    raise ContentPartError(f"not a content part: {type(item).__name__}")


def _as_part(p: Any) -> ContentPart:
    """A `ContentPart` view of a part, part dict or `str` (a text part)."""
    if isinstance(p, ContentPart):
        return p
    if isinstance(p, str):
        return ContentPart(type="text", text=p)
    if isinstance(p, Mapping):
        return from_dict(p)
    raise ContentPartError(f"not a content part: {type(p).__name__}")


# ---------------------------------------------------------------------------------------------
# sizes


_max_part_bytes: int | None = None


def decoded_len(b64: str | None) -> int:
    """Decoded byte length of standard base64 text, computed without decoding it."""
    if not b64:
        return 0
    padding = 2 if b64.endswith("==") else 1 if b64.endswith("=") else 0
    return (len(b64) // 4) * 3 - padding


def checked_limit(limit: Any) -> int | None:
    """`limit` when it is a usable size cap (`None` or an `int` >= 0), else `ConfigError`."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ConfigError(f"max_part_bytes must be an int or None, not {type(limit).__name__}")
    if limit < 0:
        raise ConfigError(f"max_part_bytes must not be negative, got {limit}")
    return limit


def set_max_part_bytes(limit: int | None) -> None:
    """Set the process-wide cap on a part's decoded size in bytes (`None`: no cap)."""
    global _max_part_bytes
    _max_part_bytes = checked_limit(limit)


def get_max_part_bytes() -> int | None:
    """The process-wide cap on a part's decoded size in bytes, or `None`."""
    return _max_part_bytes


def oversize_message(size: int, limit: int) -> str:
    """The message for a part of `size` decoded bytes over `limit`."""
    return f"content part is {size} decoded bytes, over the maxPartBytes limit of {limit}"


def _enforce_cap(size: int, max_part_bytes: int | None) -> None:
    limit = checked_limit(max_part_bytes) if max_part_bytes is not None else _max_part_bytes
    if limit is not None and size > limit:
        raise ContentPartError(oversize_message(size, limit))


# ---------------------------------------------------------------------------------------------
# edge constructors


def text(value: str) -> ContentPart:
    """A text part."""
    return validate(ContentPart(type="text", text=value))


def image(
    source: PartSource,
    *,
    mime_type: str | None = None,
    name: str | None = None,
    max_part_bytes: int | None = None,
) -> ContentPart:
    """An image part from a path (`str` or path-like), bytes, a binary file-like object (read
    now, left open), a base64 `data:` URL, or an http(s) URL (kept as `url`, never fetched).

    The mime is `mime_type`, else the `MEDIA_TYPES` entry for the path's, handle name's or URL
    path's extension; bytes need `mime_type`. Raises `ContentPartError` (a missing file raises
    `OSError`) and refuses a part over `max_part_bytes` or the process-wide cap."""
    return _build("image", source, mime_type, name, max_part_bytes)


def file(
    source: PartSource,
    *,
    mime_type: str | None = None,
    name: str | None = None,
    max_part_bytes: int | None = None,
) -> ContentPart:
    """A document part (a PDF, say); takes the same sources as `image`."""
    return _build("file", source, mime_type, name, max_part_bytes)


def audio(
    source: PartSource,
    *,
    mime_type: str | None = None,
    name: str | None = None,
    max_part_bytes: int | None = None,
) -> ContentPart:
    """An audio part; takes the same sources as `image`."""
    return _build("audio", source, mime_type, name, max_part_bytes)


def media_part(
    source: PartSource,
    *,
    mime_type: str | None = None,
    name: str | None = None,
    max_part_bytes: int | None = None,
) -> ContentPart:
    """A part from the same sources as `image`, typed by its mime (`kind_for_mime`): a `.pdf`
    is a file, a `.mp3` audio, an `image/*` mime an image."""
    return _build("", source, mime_type, name, max_part_bytes)


def mime_for_name(name: str) -> str | None:
    """The `MEDIA_TYPES` mime for a file name's extension (any case), or `None`."""
    ext = _extension(name)
    entry = MEDIA_TYPES.get(ext.lower()) if ext else None
    return entry[0] if entry else None


def kind_for_mime(mime_type: str) -> str:
    """The part type a mime implies: `image/*` is an image, `audio/*` audio, anything else a
    file."""
    major = mime_type.split("/", 1)[0].strip().lower()
    return major if major in ("image", "audio") else "file"


def _extension(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    return ext if dot and stem else ""


def _mime_from_name(name: str) -> str:
    ext = _extension(name)
    if not ext:
        raise ContentPartError("file has no extension — pass an explicit mime_type")
    entry = MEDIA_TYPES.get(ext.lower())
    if entry is None:
        raise ContentPartError(f'unknown file extension ".{ext}" — pass an explicit mime_type')
    return entry[0]


def _build(
    kind: str,
    source: Any,
    mime_type: str | None,
    name: str | None,
    max_part_bytes: int | None,
) -> ContentPart:
    if isinstance(source, str) and source:
        head = source[:8].lower()
        if head.startswith("data:"):
            mime, payload = _parse_data_url(source)
            _enforce_cap(decoded_len(payload), max_part_bytes)
            mime = mime_type or mime
            return part(type=kind or kind_for_mime(mime), mimeType=mime, data=payload, name=name)
        if head.startswith(("http://", "https://")):
            mime = mime_type or _mime_for_url(source)
            return part(type=kind or kind_for_mime(mime), mimeType=mime, url=source, name=name)
    if (isinstance(source, str) and source) or isinstance(source, os.PathLike):
        path = os.fsdecode(os.fspath(source))
        base = os.path.basename(path)
        mime = mime_type or _mime_from_name(base)
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            _enforce_cap(size, max_part_bytes)  # before reading a huge file
            raw = handle.read()
        return _from_bytes(kind, raw, mime, name if name is not None else base, max_part_bytes)
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not mime_type:
            raise ContentPartError("mime_type is required when building a part from bytes")
        return _from_bytes(kind, source, mime_type, name, max_part_bytes)
    if callable(getattr(source, "read", None)) and not isinstance(source, str):
        handle_name = getattr(source, "name", None)
        handle_name = handle_name if isinstance(handle_name, str) and handle_name else None
        if mime_type:
            mime = mime_type
        elif handle_name is None:
            raise ContentPartError("mime_type is required for a file-like source with no name")
        else:
            mime = _mime_from_name(handle_name)
        raw = source.read()
        if not isinstance(raw, (bytes, bytearray, memoryview)):
            raise ContentPartError(
                "a file-like content part source must be opened in binary mode — its read() "
                f"returned {type(raw).__name__}, not bytes"
            )
        default_name = os.path.basename(handle_name) if handle_name else None
        return _from_bytes(
            kind, raw, mime, name if name is not None else default_name, max_part_bytes
        )
    raise ContentPartError("a content part needs a path, bytes, or a URL")


def _from_bytes(
    kind: str, raw: bytes | bytearray | memoryview, mime: str, name: str | None, cap: int | None
) -> ContentPart:
    _enforce_cap(memoryview(raw).nbytes, cap)
    data = base64.b64encode(raw).decode("ascii")
    return part(type=kind or kind_for_mime(mime), mimeType=mime, data=data, name=name)


def _parse_data_url(url: str) -> tuple[str, str]:
    """`(mime, base64 payload)` of a `data:<mime>;base64,<payload>` URL."""
    header, comma, payload = url[5:].partition(",")
    params = [p.strip() for p in header.split(";")]
    if not comma or len(params) < 2 or params[-1].lower() != "base64":
        raise ContentPartError("only base64 data: URLs are supported")
    mime = params[0]
    if not mime:
        raise ContentPartError("data: URL carries no mime type")
    return mime, _strip_whitespace(payload)


def _mime_for_url(url: str) -> str:
    path = url.split("#", 1)[0].split("?", 1)[0]
    scheme_end = path.find("://")
    slash = path.find("/", scheme_end + 3) if scheme_end >= 0 else -1
    mime = mime_for_name(path[slash:]) if slash >= 0 else None
    if mime is None:
        raise ContentPartError(
            "mime_type is required for a URL whose extension is not in the media table"
        )
    return mime


_WHITESPACE = str.maketrans("", "", " \t\n\r\f\v")


def _strip_whitespace(b64: str) -> str:
    return b64.translate(_WHITESPACE)


def incoming_part(
    *,
    data: str | None = None,
    url: str | None = None,
    mime_type: str | None = None,
    name: str | None = None,
    type: str | None = None,
) -> ContentPart:
    """A validated part from another protocol's payload: base64 `data` (whitespace removed,
    otherwise verbatim) or a `url` (a `data:` URL becomes `data`).

    The mime is `mime_type`, else the media table by `name`'s extension, else
    `application/octet-stream`; the type is `type`, else implied by the mime (`kind_for_mime`).
    No size cap is applied here: the client enforces caps when it assembles a request."""
    if url is not None and url[:5].lower() == "data:":
        url_mime, data = _parse_data_url(url)
        mime_type = mime_type or url_mime
        url = None
    elif data is not None:
        data = _strip_whitespace(data)
    mime = mime_type or (mime_for_name(name) if name else None) or OCTET_STREAM
    kind = type or kind_for_mime(mime)
    return part(type=kind, mimeType=mime, data=data, url=url, name=name or None)


# ---------------------------------------------------------------------------------------------
# what text-only readers see


def describe_part(p: PartLike) -> str:
    """One line standing for a part in a tool's `output`: `<type> (<mimeType>, <n> bytes)`, or
    `<type> (<mimeType>, <url>)` for a URL part. A text part is its text."""
    cp = _as_part(p)
    if cp.type == "text":
        return cp.text or ""
    return f"{cp.type} ({_detail(cp)})"


def describe_parts(parts: Iterable[PartLike]) -> str:
    """The `describe_part` lines of several parts, joined by newlines."""
    return "\n".join(describe_part(p) for p in parts)


def placeholder_text(p: PartLike, style: str) -> str:
    """The text sent to a `style` provider in place of a part it does not receive:
    `[unsupported <type> part (<mimeType>, <n> bytes)]`, or with the URL for a URL part."""
    return f"[unsupported {_as_part(p).type} part ({_detail(_as_part(p))})]"


def _detail(p: ContentPart) -> str:
    mime = p.mimeType or OCTET_STREAM
    if p.data is None and p.url is not None:
        return f"{mime}, {p.url}"
    return f"{mime}, {decoded_len(p.data)} bytes"


def summarize(part: PartLike) -> dict[str, Any]:
    """`{"type", "mimeType", "bytes"}` of a part: the only form in which parts appear in logs
    and events (never their data)."""
    p = _as_part(part)
    if p.type == "text":
        return {"type": "text", "mimeType": None, "bytes": 0}
    return {"type": p.type, "mimeType": p.mimeType, "bytes": decoded_len(p.data)}


def estimate_tokens(part: PartLike) -> int:
    """A rough token count of one part; not `toolnexus.agents.estimate_tokens`: a transcript's.

    For budgeting: a quarter of a text's characters (at least 1); for any other part its decoded
    bytes / 750, at least 85 (a URL part counts 85)."""
    p = _as_part(part)
    if p.type == "text":
        return max(1, len(p.text or "") // 4)
    return max(85, decoded_len(p.data) // 750)


# ---------------------------------------------------------------------------------------------
# provider blocks


_IMAGE_MIMES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_AUDIO_FORMATS = {"audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/wav": "wav", "audio/x-wav": "wav"}
_PDF = "application/pdf"


def _web_url(url: str | None) -> bool:
    return url is not None and url[:8].lower().startswith(("http://", "https://"))


def encode_part(p: PartLike, style: str) -> dict[str, Any]:
    """The provider block for a part in `style` (`"openai"`, `"anthropic"` or
    `"openai-responses"`), or raise `UnsupportedPartError` when that style has no shape for it."""
    cp = _as_part(p)
    block = _encode(cp, style)
    if block is None:
        raise UnsupportedPartError(cp.type, cp.mimeType, style)
    return block


def _encode(p: ContentPart, style: str) -> dict[str, Any] | None:
    if p.type == "text":
        if style in ("openai", "anthropic") and isinstance(p.text, str):
            return {"type": "text", "text": p.text}
        if style == "openai-responses" and isinstance(p.text, str):
            return {"type": "input_text", "text": p.text}
        return None
    mime = (p.mimeType or "").strip().lower()
    has_data = isinstance(p.data, str) and p.url is None
    has_url = p.data is None and _web_url(p.url)
    if style == "openai-responses":
        if p.type == "image" and mime in _IMAGE_MIMES:
            if has_data:
                url = f"data:{mime};base64,{p.data}"
                return {"type": "input_image", "image_url": url, "detail": "auto"}
            if has_url:
                # `detail` is required by the Responses request type; "auto" lets the model pick.
                return {"type": "input_image", "image_url": p.url, "detail": "auto"}
        elif p.type == "file" and mime == _PDF and has_data:
            filename = (p.name or "").rsplit("/", 1)[-1] or "file"
            return {
                "type": "input_file",
                "filename": filename,
                "file_data": f"data:{_PDF};base64,{p.data}",
            }
        return None
    if style == "openai":
        if p.type == "image" and mime in _IMAGE_MIMES:
            if has_data:
                return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{p.data}"}}
            if has_url:
                return {"type": "image_url", "image_url": {"url": p.url}}
        elif p.type == "file" and mime == _PDF and has_data:
            filename = (p.name or "").rsplit("/", 1)[-1] or "file"
            return {
                "type": "file",
                "file": {"filename": filename, "file_data": f"data:{_PDF};base64,{p.data}"},
            }
        elif p.type == "audio" and mime in _AUDIO_FORMATS and has_data:
            return {
                "type": "input_audio",
                "input_audio": {"data": p.data, "format": _AUDIO_FORMATS[mime]},
            }
        return None
    if style == "anthropic":
        kind = (
            "image"
            if p.type == "image" and mime in _IMAGE_MIMES
            else "document"
            if p.type == "file" and mime == _PDF
            else None
        )
        if kind is None:
            return None
        if has_data:
            return {"type": kind, "source": {"type": "base64", "media_type": mime, "data": p.data}}
        if has_url:
            return {"type": kind, "source": {"type": "url", "url": p.url}}
    return None
