"""The OpenAI chat-completions wire: endpoint, headers, body, response and stream parsing."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from toolnexus.adapters import (
    ToolCall,
    openai_tool_result,
    parse_arguments,
    parse_openai_tool_calls,
)
from toolnexus.client._errors import is_error_payload
from toolnexus.client._model_settings import refuse_thinking_budget
from toolnexus.client._parts import PartPolicy, openai_request_messages
from toolnexus.client._wire import (
    StreamAssembler,
    Turn,
    Wire,
    append_path,
    as_int,
    decode_event,
    endpoint_given,
    response_error,
    texts,
    token_usage,
)
from toolnexus.types import ToolResult

if TYPE_CHECKING:
    from toolnexus.client._model_settings import ModelSettings
    from toolnexus.client._output import OutputSpec
    from toolnexus.toolkit import Toolkit

__all__ = [
    "OPENAI",
    "OpenAIStream",
    "OpenAIWire",
    "chat_reasoning",
    "openai_usage",
]


def openai_usage(raw: Any) -> dict[str, int] | None:
    """Normalise an OpenAI `usage` object (cached prompt tokens kept as `cache_read_tokens`)."""
    if not isinstance(raw, dict):
        return None
    get = raw.get
    usage = token_usage(get("prompt_tokens"), get("completion_tokens"), get("total_tokens"))
    details = get("prompt_tokens_details")
    if isinstance(details, dict):
        if details.get("cached_tokens") is not None:
            usage["cache_read_tokens"] = as_int(details["cached_tokens"])
        if details.get("cache_write_tokens") is not None:
            usage["cache_write_tokens"] = as_int(details["cache_write_tokens"])
    details = get("completion_tokens_details")
    if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
        usage["reasoning_tokens"] = as_int(details["reasoning_tokens"])
    return usage


def _reasoning_field(holder: dict[str, Any]) -> str:
    """The reasoning text of a message or delta: `reasoning_content` (DeepSeek, Z.ai) or
    `reasoning` (Groq, Ollama, Cerebras, vLLM, OpenRouter)."""
    for key in ("reasoning_content", "reasoning"):
        value = holder.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _detail_texts(details: Any) -> tuple[str, bool]:
    """The text of OpenRouter `reasoning_details` entries, and whether any is encrypted."""
    out: list[str] = []
    hidden = False
    for detail in details if isinstance(details, list) else ():
        if not isinstance(detail, dict):
            continue
        value = detail.get("text") if "text" in detail else detail.get("summary")
        if isinstance(value, str) and value:
            out.append(value)
        elif detail.get("type") == "reasoning.encrypted" or detail.get("data"):
            hidden = True
    return "".join(out), hidden


def chat_reasoning(message: dict[str, Any]) -> tuple[str | None, bool]:
    """A chat assistant message's reasoning text, and whether it came only encrypted."""
    text = _reasoning_field(message)
    if text:
        return text, False
    text, hidden = _detail_texts(message.get("reasoning_details"))
    return text or None, hidden and not text


def content_text(content: Any) -> str:
    """An OpenAI message `content` as text (a parts array ⇒ its text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return texts(content, "content")
    return ""


class OpenAIWire(Wire):
    """`POST …/chat/completions` with a bearer key; the transcript holds the system message."""

    style = "openai"
    provider = "openai"
    credential_header = "Authorization"
    credential_prefix = "Bearer "
    base_headers = MappingProxyType({"Content-Type": "application/json"})
    system_in_messages = True
    tool_keys = MappingProxyType({"tool_choice": "auto"})
    stream_keys = MappingProxyType({"stream": True, "stream_options": {"include_usage": True}})

    def endpoint(self, base_url: str) -> str:
        if endpoint_given(base_url, "openai"):  # `…/v1/chat/completions` as it is
            return append_path(base_url, "")
        return append_path(base_url, "/chat/completions")

    def declarations(
        self, toolkit: Toolkit, strict: bool = False, defer: bool = False
    ) -> list[dict[str, Any]]:
        return toolkit.to_openai(strict=strict, defer=defer)

    def tool_name(self, declaration: dict[str, Any]) -> Any:
        function = declaration.get("function")
        return function.get("name") if isinstance(function, dict) else declaration.get("name")

    def check_settings(self, settings: ModelSettings) -> None:
        refuse_thinking_budget(settings, self.style)

    def apply_settings(self, body: dict[str, Any], settings: ModelSettings) -> None:
        if "tools" in body:
            if settings.tool_choice is not None:
                name = settings.named_tool
                body["tool_choice"] = (
                    settings.tool_choice
                    if name is None
                    else {"type": "function", "function": {"name": name}}
                )
            if settings.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = settings.parallel_tool_calls
        if settings.reasoning_effort is not None:
            body["reasoning_effort"] = settings.reasoning_effort
        if settings.prompt_cache_key is not None:
            body["prompt_cache_key"] = settings.prompt_cache_key

    def parse(self, status: int, data: Any, raw: bytes) -> Turn:
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        # Only a body with an `error` or `type` key can be an error payload.
        if not isinstance(message, dict) or (
            ("error" in data or "type" in data) and is_error_payload(data)
        ):
            raise response_error(status, data, raw, "choices[0].message")
        assert isinstance(choice, dict)
        calls = parse_openai_tool_calls(message)
        reasoning, redacted = chat_reasoning(message)
        return Turn(
            message=_with_call_ids(message, calls),
            text=content_text(message.get("content")),
            calls=calls,
            usage=openai_usage(data.get("usage")),
            finish_reason=choice.get("finish_reason"),
            raw=data,
            refusal=_refusal(message.get("refusal")),
            reasoning=reasoning,
            reasoning_redacted=redacted,
        )

    def output_keys(self, spec: OutputSpec) -> dict[str, Any]:
        return {"response_format": spec.response_format()}

    def stream(self, status: int) -> OpenAIStream:
        return OpenAIStream(status)

    def request_messages(
        self,
        system: str,
        messages: list[dict[str, Any]],
        parts: PartPolicy,
        seen: list[dict[str, Any]],
    ) -> tuple[str, list[dict[str, Any]]]:
        return system, openai_request_messages(messages, parts, seen)

    def tool_results(self, answered: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        return [openai_tool_result(call.id, result, call.name) for call, result in answered]


def _with_call_ids(message: dict[str, Any], calls: list[ToolCall]) -> dict[str, Any]:
    """`message` with every tool call carrying the id its result answers.

    A provider that sends no id (Gemini's OpenAI endpoint sends `""`) gets the synthesized
    `call_<n>` in the echoed message too, as a streamed turn has it."""
    wire_calls = message.get("tool_calls")
    if not calls or not isinstance(wire_calls, list):
        return message
    if all(
        isinstance(w, dict) and w.get("id") == c.id for w, c in zip(wire_calls, calls, strict=True)
    ):
        return message
    fixed = [
        {**w, "id": c.id} if isinstance(w, dict) else w
        for w, c in zip(wire_calls, calls, strict=True)
    ]
    return {**message, "tool_calls": fixed}


def _refusal(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _first_choice(choices: Any) -> dict[str, Any] | None:
    """Choice 0 of a chunk: with `n>1` the choices arrive interleaved, and only one is the turn."""
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return None


# Delta keys the assembler reads itself; every other key is kept (see `_keep`).
_READ_DELTA_KEYS = frozenset({"role", "content", "tool_calls", "refusal"})
_READ_CALL_KEYS = frozenset({"index", "id", "type", "function"})
# Keys of a `reasoning_details` entry that name it rather than grow with each delta.
_DETAIL_NAME_KEYS = frozenset({"type", "format", "id", "index"})


def _keep(into: dict[str, Any], key: str, value: Any) -> None:
    """Fold one streamed value of a field we do not interpret into `into`.

    Strings grow (`reasoning_content`, `reasoning`), `reasoning_details` entries merge by their
    `index`, objects merge key by key; anything else is replaced by its latest value.
    """
    if value is None:
        return
    before = into.get(key)
    if isinstance(value, str) and isinstance(before, str):
        into[key] = before + value
    elif key == "reasoning_details" and isinstance(value, list):
        into[key] = _merge_details(before if isinstance(before, list) else [], value)
    elif isinstance(value, dict) and isinstance(before, dict):
        into[key] = {**before, **value}
    else:
        into[key] = value


def _merge_details(before: list[Any], pieces: list[Any]) -> list[Any]:
    out = list(before)
    for piece in pieces:
        index = piece.get("index") if isinstance(piece, dict) else None
        same = next(
            (
                i
                for i, d in enumerate(out)
                if isinstance(d, dict) and index is not None and d.get("index") == index
            ),
            None,
        )
        if same is None or not isinstance(piece, dict):
            out.append(dict(piece) if isinstance(piece, dict) else piece)
            continue
        merged = dict(out[same])
        for key, value in piece.items():
            if key in _DETAIL_NAME_KEYS:
                merged.setdefault(key, value)
            else:
                _keep(merged, key, value)
        out[same] = merged
    return out


class _PartialCall:
    __slots__ = ("args", "extra", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: list[str] = []
        self.args: list[str] = []
        self.extra: dict[str, Any] = {}  # fields we do not read (Gemini's `extra_content`)


class OpenAIStream(StreamAssembler):
    """Assembles one streamed turn from `chat.completion.chunk` events (tool calls by `index`)."""

    __slots__ = ("_calls", "_extra", "_text")

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        # Message fields we do not interpret (reasoning and provider extras), sent back as-is.
        self._extra: dict[str, Any] = {}

    def feed(self, event: str, data: str) -> str | None:
        """Take one SSE event; return its text delta, if any."""
        if data == "[DONE]":
            self.done = True
            return None
        obj = decode_event(self._status, data)
        if not isinstance(obj, dict):
            return None
        usage = openai_usage(obj.get("usage"))
        if usage is not None:
            self.usage.append(usage)
        choice = _first_choice(obj.get("choices"))
        if choice is None:
            return None
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return None
        parts = delta.get("tool_calls") or ()
        if not isinstance(parts, list | tuple):
            raise ValueError(f"delta.tool_calls is not a list (got {type(parts).__name__})")
        for position, part in enumerate(parts):
            if isinstance(part, dict):
                self._add_call_part(part.get("index", position), part)
        piece = _reasoning_field(delta)
        if piece:
            self.add_reasoning(piece)
        else:  # OpenRouter's structured form, when no plain reasoning text came with it
            piece, hidden = _detail_texts(delta.get("reasoning_details"))
            if piece:
                self.add_reasoning(piece)
            elif hidden and not self._redacted:
                self.add_redacted()
        for key, value in delta.items():
            if key not in _READ_DELTA_KEYS:
                _keep(self._extra, key, value)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self.add_refusal(refusal)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text.append(content)
            return content
        return None

    def _add_call_part(self, index: Any, part: dict[str, Any]) -> None:
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"a streamed tool call has an index that is not a number: {index!r}")
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _PartialCall()
        if part.get("id"):
            call.id = str(part["id"])
        for key, value in part.items():
            if key not in _READ_CALL_KEYS:
                _keep(call.extra, key, value)
        fn = part.get("function") or {}
        if not isinstance(fn, dict):
            raise ValueError("a streamed tool call has a function that is not an object")
        for key, into in (("name", call.name), ("arguments", call.args)):
            value = fn.get(key)
            if value is None or value == "":
                continue
            if not isinstance(value, str):
                raise ValueError(
                    f"a streamed tool call has function.{key} that is not a string "
                    f"(got {type(value).__name__})"
                )
            into.append(value)

    def turn(self) -> Turn:
        text = "".join(self._text)
        wire_calls: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        for n, index in enumerate(sorted(self._calls)):
            partial = self._calls[index]
            call_id = partial.id or f"call_{n}"
            name = "".join(partial.name)
            raw_args = "".join(partial.args)
            wire_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": raw_args},
                    **partial.extra,
                }
            )
            args, error = parse_arguments(raw_args)
            calls.append(ToolCall(id=call_id, name=name, args=args, error=error))
        message: dict[str, Any]
        if wire_calls:
            message = {"role": "assistant", "content": text or None, **self._extra}
            message["tool_calls"] = wire_calls
        else:
            message = {"role": "assistant", "content": text, **self._extra}
        refusal = self.refusal()
        if refusal is not None:
            message["refusal"] = refusal
        return self.assembled(message, text, calls, refusal, chat_reasoning(message))


OPENAI = OpenAIWire()
