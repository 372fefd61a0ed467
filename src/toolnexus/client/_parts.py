"""Content parts on the provider wires: a canonical transcript in, request messages out.

The transcript keeps canonical part dicts (in a user message's content list, in a tool result's
`parts`); provider blocks exist only in request bodies. `PartPolicy` decides, per client, what
happens to a part a request cannot carry (size cap, no block shape for the style), and the two
`*_request_messages` functions lay the parts out the way each wire needs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from toolnexus._log import warn
from toolnexus.content import (
    OCTET_STREAM,
    ContentPart,
    ContentPartError,
    UnsupportedPartError,
    checked_limit,
    decoded_len,
    encode_part,
    get_max_part_bytes,
    is_part_dict,
    normalize_parts,
    oversize_message,
    placeholder_text,
    summarize,
    to_dict,
)
from toolnexus.errors import ConfigError

__all__ = [
    "UNSUPPORTED_PART_MODES",
    "PartPolicy",
    "Prompt",
    "anthropic_request_messages",
    "canonical_messages",
    "openai_request_messages",
    "part_dict",
    "prompt_content",
    "relocation_label",
]

UNSUPPORTED_PART_MODES = (None, "error", "text")

Message = dict[str, Any]
Prompt: TypeAlias = "str | Sequence[str | ContentPart | Mapping[str, Any]]"


def prompt_content(prompt: Prompt) -> str | list[dict[str, Any]]:
    """A user message's `content` for a prompt: a `str` as is, a list as validated part dicts
    in order (an empty list or an invalid item raises `ContentPartError`)."""
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, Sequence) or isinstance(prompt, (bytes, bytearray)):
        raise ContentPartError(
            f"a prompt is a str or a list of str and content parts, not {type(prompt).__name__}"
        )
    if not prompt:
        raise ContentPartError("a prompt needs at least one part")
    return normalize_parts(prompt)


def canonical_messages(messages: Sequence[Message]) -> list[Message]:
    """`messages` with each `ContentPart` object (in a content list or a `parts` list) replaced
    by its canonical dict, and each `str` in a user message's content list by a text part, so
    the transcript and the stores hold plain JSON. Other messages are kept as they are."""
    return [_canonical(m, m.get("role") == "user") for m in messages]


def _canonical(node: Any, texts: bool = False) -> Any:
    if isinstance(node, ContentPart):
        return to_dict(node)
    if isinstance(node, str) and texts:
        return {"type": "text", "text": node}
    if isinstance(node, dict):
        for key in ("content", "parts"):
            items = node.get(key)
            wrap = texts and key == "content"
            if isinstance(items, list) and any(_needs_canonical(i, wrap) for i in items):
                node = {**node, key: [_canonical(i, wrap) for i in items]}
    return node


def _needs_canonical(item: Any, texts: bool) -> bool:
    if isinstance(item, ContentPart) or (texts and isinstance(item, str)):
        return True
    parts = item.get("parts") if isinstance(item, dict) else None
    return isinstance(parts, list) and any(isinstance(p, ContentPart) for p in parts)


def relocation_label(name: str, call_id: str) -> str:
    """The text before each tool-derived part moved into the synthetic OpenAI user message."""
    return f"Output of tool {name} ({call_id}):"


class PartPolicy:
    """One client's rules for parts: `on_unsupported_part`, `max_part_bytes`, warn-once keys.

    An *attached* part (the caller's, in a user message) that cannot be sent raises before the
    request; a *tool-derived* part becomes a text placeholder (unless `on_unsupported_part` is
    `"error"`), so a server's choice of content never fails the caller's run.
    """

    __slots__ = ("_warned", "max_part_bytes", "on_unsupported_part")

    def __init__(self, on_unsupported_part: str | None = None, max_part_bytes: int | None = None):
        if on_unsupported_part not in UNSUPPORTED_PART_MODES:
            raise ConfigError(
                f'on_unsupported_part must be "error", "text" or None, not {on_unsupported_part!r}'
            )
        max_part_bytes = checked_limit(max_part_bytes)
        self.on_unsupported_part = on_unsupported_part
        self.max_part_bytes = max_part_bytes
        self._warned: set[tuple[str, ...]] = set()

    def limit(self) -> int | None:
        """The cap in force: this client's, else the process-wide one."""
        if self.max_part_bytes is not None:
            return self.max_part_bytes
        return get_max_part_bytes()

    def block(
        self, part: Mapping[str, Any], style: str, *, attached: bool, seen: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The block sending `part` in `style`, or a text placeholder; raises for an attached
        part that cannot be sent. Non-text parts are summarised into `seen`."""
        kind = str(part.get("type"))
        if kind != "text":
            seen.append(summarize(part))
        size = decoded_len(part.get("data"))
        limit = self.limit()
        if limit is not None and size > limit:
            message = oversize_message(size, limit)
            if attached:
                raise ContentPartError(message)
            self._warn_once(("size", kind, str(part.get("mimeType"))), message)
            return {"type": "text", "text": placeholder_text(part, style)}
        try:
            return encode_part(part, style)
        except UnsupportedPartError as exc:
            mode = self.on_unsupported_part
            if mode == "error" or (attached and mode is None):
                raise
            self._warn_once(("style", kind, style), str(exc))
            return {"type": "text", "text": placeholder_text(part, style)}

    def placeholder(self, error: UnsupportedPartError, text: str) -> dict[str, Any]:
        """A placeholder block for content `translate` found unsendable (raise in error mode)."""
        if self.on_unsupported_part == "error":
            raise error
        self._warn_once(("style", error.part_type, error.style), str(error))
        return {"type": "text", "text": text}

    def _warn_once(self, key: tuple[str, ...], reason: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warn(f"{reason} — sent as a text placeholder")


def part_dict(item: Any) -> Mapping[str, Any] | None:
    """`item` as a canonical part dict, when it is one (a `ContentPart` counts)."""
    if isinstance(item, ContentPart):
        return to_dict(item)
    return item if is_part_dict(item) else None


def _encode_content(
    content: list[Any], style: str, policy: PartPolicy, seen: list[dict[str, Any]]
) -> list[Any]:
    """A user content list with its part dicts encoded in place; provider blocks pass through
    untouched and empty text parts are left out."""
    out: list[Any] = []
    for item in content:
        part = part_dict(item)
        if part is None:
            out.append(item)
        elif part.get("type") == "text" and not part.get("text"):
            continue
        else:
            out.append(policy.block(part, style, attached=True, seen=seen))
    return out


def _tool_parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return []
    return [p for p in map(part_dict, parts) if p is not None]


def _needs_work_openai(message: Mapping[str, Any]) -> bool:
    role = message.get("role")
    if role == "tool":
        return "parts" in message or "name" in message
    return role == "user" and isinstance(message.get("content"), list)


def openai_request_messages(
    messages: Sequence[Message], policy: PartPolicy, seen: list[dict[str, Any]]
) -> list[Message]:
    """Chat Completions request messages for a canonical transcript.

    A tool message keeps its text (plus any text parts); its other parts move, labelled and in
    call order, into one synthetic user message after the run of tool messages they answer.
    """
    for message in messages:
        if _needs_work_openai(message):
            break
    else:  # the usual transcript: text and plain tool results only
        return list(messages)
    out: list[Message] = []
    moved: list[dict[str, Any]] = []  # blocks for the synthetic message of the current run
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role != "tool" and moved:
            out.append({"role": "user", "content": moved})
            moved = []
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, Mapping):
                    fn = call.get("function")
                    if isinstance(fn, Mapping) and call.get("id"):
                        names[str(call["id"])] = str(fn.get("name") or "")
        if not _needs_work_openai(message):
            out.append(message)
        elif role == "user":
            content = _encode_content(message["content"], "openai", policy, seen)
            out.append({**message, "content": content})
        else:
            out.append(_openai_tool_message(message, policy, seen, names, moved))
    if moved:
        out.append({"role": "user", "content": moved})
    return out


def _openai_tool_message(
    message: Mapping[str, Any],
    policy: PartPolicy,
    seen: list[dict[str, Any]],
    names: Mapping[str, str],
    moved: list[dict[str, Any]],
) -> Message:
    sent = {k: v for k, v in message.items() if k not in ("parts", "name")}
    parts = _tool_parts(message)
    texts = [p["text"] for p in parts if p.get("type") == "text" and p.get("text")]
    if texts:
        output = message.get("content")
        lead = [output] if isinstance(output, str) and output else []
        sent["content"] = [{"type": "text", "text": t} for t in (*lead, *texts)]
    call_id = str(message.get("tool_call_id") or "")
    name = message.get("name") or names.get(call_id, "")
    for part in parts:
        if part.get("type") != "text":
            moved.append({"type": "text", "text": relocation_label(str(name), call_id)})
            moved.append(policy.block(part, "openai", attached=False, seen=seen))
    return sent


def _needs_work_anthropic(message: Mapping[str, Any]) -> bool:
    role = message.get("role")
    if role == "system":
        return True
    content = message.get("content")
    if role != "user" or not isinstance(content, list):
        return False
    return any(part_dict(b) is not None or _is_result_with_parts(b) for b in content)


def _is_result_with_parts(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result" and "parts" in block


def anthropic_request_messages(
    messages: Sequence[Message], policy: PartPolicy, seen: list[dict[str, Any]]
) -> tuple[list[Message], list[str]]:
    """Messages API request messages for a canonical transcript, plus the texts of its
    system-role messages (which belong in the body's `system`).

    Parts of a tool result travel inside its own `tool_result` block, after the output text.
    """
    if not any(_needs_work_anthropic(m) for m in messages):
        return list(messages), []
    out: list[Message] = []
    system: list[str] = []
    for message in messages:
        if not _needs_work_anthropic(message):
            out.append(message)
        elif message.get("role") == "system":
            text = _system_text(message.get("content"))
            if text:
                system.append(text)
        else:
            content: list[Any] = []
            for block in message["content"]:
                if _is_result_with_parts(block):
                    content.append(_anthropic_tool_result(block, policy, seen))
                else:
                    content.extend(_encode_content([block], "anthropic", policy, seen))
            out.append({**message, "content": content})
    return out, system


def _anthropic_tool_result(
    block: Mapping[str, Any], policy: PartPolicy, seen: list[dict[str, Any]]
) -> dict[str, Any]:
    sent = {k: v for k, v in block.items() if k != "parts"}
    output = block.get("content")
    blocks: list[Any] = []
    if isinstance(output, list):
        blocks.extend(output)
    elif isinstance(output, str) and output:  # Anthropic rejects empty text blocks
        blocks.append({"type": "text", "text": output})
    for part in _tool_parts(block):
        if part.get("type") == "text" and not part.get("text"):
            continue
        blocks.append(policy.block(part, "anthropic", attached=False, seen=seen))
    sent["content"] = blocks
    return sent


def _system_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


# -- translate: OpenAI-shaped messages to Anthropic blocks ---------------------------------


def openai_block_part(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """The part an OpenAI `image_url` / `file` block with inline or web data stands for, as a
    canonical dict; `None` for a block with no such reading."""
    kind = block.get("type")
    if kind == "image_url":
        spec = block.get("image_url")
        url = spec.get("url") if isinstance(spec, Mapping) else spec
        if not isinstance(url, str):
            return None
        if url[:5].lower() == "data:":
            return _data_url_part("image", url)
        return {"type": "image", "mimeType": "", "url": url}
    if kind == "file":
        spec = block.get("file")
        data_url = spec.get("file_data") if isinstance(spec, Mapping) else None
        if isinstance(data_url, str) and data_url[:5].lower() == "data:":
            found = _data_url_part("file", data_url)
            if found is not None and isinstance(spec, Mapping) and spec.get("filename"):
                found["name"] = str(spec["filename"])
            return found
    return None


def _data_url_part(kind: str, url: str) -> dict[str, Any] | None:
    from toolnexus.content import incoming_part

    try:
        return to_dict(incoming_part(url=url, type=kind))
    except ContentPartError:
        return None


def _stand_in(block: Mapping[str, Any]) -> dict[str, Any]:
    """A part standing for an OpenAI block with no Anthropic reading (for its placeholder)."""
    kind = str(block.get("type") or "unknown")
    stand_in: dict[str, Any] = {"type": kind, "mimeType": OCTET_STREAM, "data": ""}
    if kind == "input_audio":
        spec = block.get("input_audio")
        data = spec.get("data") if isinstance(spec, Mapping) else None
        stand_in.update(type="audio", data=data if isinstance(data, str) else "")
    elif kind == "image_url":
        spec = block.get("image_url")
        url = spec.get("url") if isinstance(spec, Mapping) else spec
        stand_in.update(type="image", data=None, url=str(url))
    return stand_in


def _unsendable(stand_in: dict[str, Any], policy: PartPolicy, seen: list[dict[str, Any]]) -> Any:
    """The placeholder for content Anthropic cannot take (or raise in error mode)."""
    seen.append(summarize(stand_in))
    error = UnsupportedPartError(stand_in["type"], None, "anthropic")
    return policy.placeholder(error, placeholder_text(stand_in, "anthropic"))


def _translated_block(item: Any, policy: PartPolicy, seen: list[dict[str, Any]]) -> Any:
    part = part_dict(item)
    if part is None and isinstance(item, Mapping):
        part = openai_block_part(item)
        if part is not None and part.get("url") and not part.get("mimeType"):
            # An image URL carries no mime: Anthropic takes a web URL as it is.
            if not _is_web(part["url"]):
                return _unsendable(_stand_in(item), policy, seen)
            seen.append(summarize({**part, "mimeType": None}))
            return {"type": "image", "source": {"type": "url", "url": part["url"]}}
    if part is None:
        if not isinstance(item, Mapping):
            return None
        return _unsendable(_stand_in(item), policy, seen)
    return policy.block(part, "anthropic", attached=False, seen=seen)


def _is_web(url: str) -> bool:
    return url[:8].lower().startswith(("http://", "https://"))


def anthropic_translated_content(
    content: Any, policy: PartPolicy, seen: list[dict[str, Any]]
) -> Any:
    """An OpenAI message `content` for Anthropic: a string, or blocks in order when it holds
    anything but text (an all-text list stays one string)."""
    if not isinstance(content, list):
        return content
    if all(_is_text_item(item) for item in content):
        return "".join(str(item.get("text") or "") for item in content if isinstance(item, Mapping))
    blocks = []
    for item in content:
        if _is_text_item(item):
            if item.get("text"):
                blocks.append({"type": "text", "text": item["text"]})
            continue
        block = _translated_block(item, policy, seen)
        if block is not None:
            blocks.append(block)
    return blocks


def _is_text_item(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "text"


def anthropic_translated_result(
    message: Mapping[str, Any], text: str, policy: PartPolicy, seen: list[dict[str, Any]]
) -> str | list[Any]:
    """A `tool` message's `tool_result` content: its text, then its media in order."""
    content = message.get("content")
    media = [i for i in content if not _is_text_item(i)] if isinstance(content, list) else []
    parts = _tool_parts(message)
    if not media and not [p for p in parts if p.get("type") != "text" or p.get("text")]:
        return text
    blocks: list[Any] = [{"type": "text", "text": text}] if text else []
    for item in media:
        block = _translated_block(item, policy, seen)
        if block is not None:
            blocks.append(block)
    for part in parts:
        if part.get("type") == "text" and not part.get("text"):
            continue
        blocks.append(policy.block(part, "anthropic", attached=False, seen=seen))
    return blocks
