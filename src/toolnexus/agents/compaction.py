"""Context compaction as a `before_llm` hook: a summary head, the system prompt, a recent tail.

The published `toolnexus.agents.compaction` path: `compactor`, the hook, and `estimate_tokens`.
The split never orphans a tool result: the tail starts at a user message that is not an
Anthropic tool-result carrier.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from toolnexus._aio import call_maybe_async
from toolnexus.content import decoded_len, is_part_dict
from toolnexus.content import estimate_tokens as part_tokens
from toolnexus.errors import ConfigError, ConfigTypeError

__all__ = ["CountTokens", "Message", "Summarize", "compactor", "estimate_tokens"]

Message = dict[str, Any]
Summarize = Callable[[list[Message]], "str | Awaitable[str]"]
CountTokens = Callable[[list[Message]], int]

SUMMARY_HEADER = "[Summary of earlier conversation]\n"
_MEASURED_CAP = 4096
FLUSH_REMINDER = (
    "Before continuing: if anything from earlier is worth keeping, save it with the memory "
    "tool now — the earlier transcript is about to be summarized."
)


def _media_tokens(block: Any) -> int | None:
    """Tokens of a media block (a part dict or a provider's base64 block), else `None`."""
    if not isinstance(block, Mapping):
        return None
    if is_part_dict(block) and block.get("type") != "text":
        return part_tokens(block)
    kind = block.get("type")
    if kind == "image_url":
        url = (block.get("image_url") or {}).get("url")
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            return max(85, decoded_len(url.split(";base64,", 1)[1]) // 750)
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        return max(85, decoded_len(source.get("data")) // 750)
    return None


def _lighten(value: Any, media: list[int]) -> Any:
    """`value` with every media block replaced by its type (its tokens collected apart)."""
    if isinstance(value, list):
        out = []
        for item in value:
            tokens = _media_tokens(item)
            if tokens is not None:
                media.append(tokens)
                out.append({"type": item.get("type")})
            else:
                out.append(_lighten(item, media))
        return out
    if isinstance(value, dict):
        return {
            k: _lighten(v, media) if isinstance(v, list | dict) else v for k, v in value.items()
        }
    return value


def _message_tokens(message: Mapping[str, Any]) -> int:
    media: list[int] = []
    light = _lighten(dict(message), media) if _has_list(message) else message
    text = json.dumps(light, separators=(",", ":"), ensure_ascii=False)
    return math.ceil(len(text) / 4) + sum(media)


def _has_list(message: Mapping[str, Any]) -> bool:
    return any(isinstance(v, list) for v in message.values())


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """A rough token count of a transcript; not `toolnexus.estimate_tokens`: one part's.

    A quarter of each message's compact JSON length, with media parts counted by their size
    rather than their base64 text."""
    return sum(_message_tokens(m) for m in messages)


def _is_boundary(message: Mapping[str, Any]) -> bool:
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list):
        return not any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)
    return True


def _split(messages: list[Message], head: int, keep_tail: int, counts: list[int]) -> int:
    split: int | None = None
    tail = 0
    for i in range(len(messages) - 1, head, -1):
        tail += counts[i]
        if tail > keep_tail:
            break
        if _is_boundary(messages[i]):
            split = i
    if split is not None:
        return split
    for i in range(len(messages) - 1, head, -1):
        if _is_boundary(messages[i]):
            return i
    return len(messages)


def compactor(
    *,
    max_tokens: int,
    summarize: Summarize,
    keep_tail: int | None = None,
    count_tokens: CountTokens | None = None,
    flush_to_memory: bool = False,
) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]:
    """A `before_llm` hook that, once the transcript exceeds `max_tokens`, replaces everything
    between the leading system message and a recent tail of about `keep_tail` tokens with one
    system message holding `summarize(older)` (sync or async; it may call a model)."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"compactor: max_tokens must be an integer >= 1, not {max_tokens!r}")
    if not callable(summarize):
        raise ConfigTypeError("compactor: summarize must be callable")
    tail_budget = max_tokens // 2 if keep_tail is None else keep_tail
    if isinstance(tail_budget, bool) or not isinstance(tail_budget, int) or tail_budget < 0:
        raise ConfigError(f"compactor: keep_tail must be an integer >= 0, not {keep_tail!r}")

    # A transcript grows by appending: each message is measured once, then looked up by
    # identity (bounded, so a long-lived hook does not pin old transcripts).
    measured: OrderedDict[int, tuple[Message, int]] = OrderedDict()

    def measure(message: Message) -> int:
        key = id(message)
        hit = measured.get(key)
        if hit is not None and hit[0] is message:
            measured.move_to_end(key)
            return hit[1]
        tokens = _message_tokens(message)
        measured[key] = (message, tokens)
        if len(measured) > _MEASURED_CAP:
            measured.popitem(last=False)
        return tokens

    async def before_llm(event: dict[str, Any]) -> dict[str, Any] | None:
        messages: list[Message] = list(event.get("messages") or ())
        if count_tokens is None:
            counts = [measure(m) for m in messages]
            total = sum(counts)
        else:
            total = count_tokens(messages)
        if total <= max_tokens:
            return None
        if count_tokens is not None:
            counts = _suffix_counts(messages, count_tokens)
        head = 1 if messages and messages[0].get("role") == "system" else 0
        split = _split(messages, head, tail_budget, counts)
        older = messages[head:split]
        if not older:
            return None
        summary = await call_maybe_async(summarize, older)
        out: list[Message] = list(messages[:head])
        out.append({"role": "system", "content": SUMMARY_HEADER + str(summary)})
        if flush_to_memory:
            out.append({"role": "system", "content": FLUSH_REMINDER})
        out.extend(messages[split:])
        return {"messages": out}

    return before_llm


def _suffix_counts(messages: list[Message], count_tokens: CountTokens) -> list[int]:
    """Per-message counts for a custom counter, as differences of its suffix totals."""
    counts = [0] * len(messages)
    after = 0
    for i in range(len(messages) - 1, -1, -1):
        total = count_tokens(messages[i:])
        counts[i] = total - after
        after = total
    return counts
