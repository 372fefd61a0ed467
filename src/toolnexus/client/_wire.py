"""What both wire dialects share: the parsed turn, the body layout, URL and header rules."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from toolnexus.adapters import ToolCall
from toolnexus.client._errors import ProviderError, is_error_payload
from toolnexus.client._parts import canonical_messages
from toolnexus.client._results import add_usage
from toolnexus.errors import ConfigError, ToolnexusError, WireFormatError

if TYPE_CHECKING:
    from toolnexus.client._model_settings import ModelSettings
    from toolnexus.client._output import OutputSpec
    from toolnexus.client._parts import PartPolicy
    from toolnexus.toolkit import Toolkit
    from toolnexus.types import ToolResult

__all__ = [
    "CREDENTIAL_HEADERS",
    "Assembler",
    "Dialect",
    "ReasoningDelta",
    "StreamAssembler",
    "Turn",
    "Wire",
    "append_path",
    "as_int",
    "decode_event",
    "merge_headers",
    "normal_finish",
    "response_error",
    "token_usage",
    "url_path",
]

# Header names that carry credentials (lower-cased).
CREDENTIAL_HEADERS = frozenset({"authorization", "api-key", "x-api-key"})


# Every wire's reason for ending a turn, normalised (client.md; the raw value is kept too).
_FINISH = {
    "stop": "stop",  # openai chat
    "end_turn": "stop",  # anthropic
    "stop_sequence": "stop",
    "completed": "stop",  # responses
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "model_context_window_exceeded": "length",
    "content_filter": "content_filter",
    "refusal": "refusal",
    "pause_turn": "pause",
}


def normal_finish(raw: Any, has_calls: bool, refused: bool) -> str:
    """Why a turn ended, as one of `stop`, `tool_calls`, `length`, `content_filter`,
    `refusal`, `pause`; an unknown or missing raw value reads from the turn itself."""
    found = _FINISH.get(raw) if isinstance(raw, str) else None
    if found is not None:
        return found
    if refused:
        return "refusal"
    return "tool_calls" if has_calls else "stop"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of a model's reasoning as it streams: its text, or a marker (`redacted`) where
    the provider sends only encrypted or redacted reasoning."""

    text: str
    redacted: bool = False


@dataclass(slots=True)
class Turn:
    """One assistant turn, parsed from a response or assembled from a stream."""

    message: dict[str, Any]  # the transcript entry, as the provider returned it
    text: str
    calls: list[ToolCall]
    usage: dict[str, int] | None  # this call's normalised usage; `None` when none was reported
    finish_reason: str | None
    raw: Any  # the decoded response (`None` for a streamed turn)
    refusal: str | None = None  # the model declined to answer; its stated reason
    # The transcript entries of a wire whose answer is several of them (Responses output
    # items); `None`: the answer is the one entry `message`.
    items: list[dict[str, Any]] | None = None
    reasoning: str | None = None  # the reasoning text the provider showed, if any
    reasoning_redacted: bool = False  # reasoning was produced but only encrypted/redacted

    def entries(self) -> list[dict[str, Any]]:
        """What this turn adds to the transcript."""
        return self.items if self.items is not None else [self.message]

    @property
    def finish(self) -> str:
        """Why the turn ended, normalised (`normal_finish`)."""
        return normal_finish(self.finish_reason, bool(self.calls), self.refusal is not None)

    def reasoning_deltas(self) -> list[ReasoningDelta]:
        """The turn's reasoning as stream pieces (a whole answer gives them at once)."""
        if self.reasoning:
            return [ReasoningDelta(self.reasoning)]
        return [ReasoningDelta("", redacted=True)] if self.reasoning_redacted else []


class Assembler(Protocol):
    """Collects one streamed answer from its server-sent events."""

    done: bool  # the dialect's end-of-stream event was seen
    finish_reason: str | None

    def feed(self, event: str, data: str) -> str | None:
        """Take one SSE event; return its text delta, if any."""
        ...

    def take_reasoning(self) -> list[ReasoningDelta]:
        """The reasoning pieces fed since the last call (they come before the text delta)."""
        ...

    def turn(self) -> Turn:
        """The assembled turn."""
        ...


class Dialect(Protocol):
    """One wire dialect: where requests go, how bodies are laid out and answers are read.

    The loop, retries, transport and metrics are the same for every dialect. A new one (for
    instance a provider's own API) is one module with a class implementing these members --
    usually a `Wire` subclass, as `_openai.py`, `_anthropic.py` and `_responses.py` are -- plus
    its entry in
    `toolnexus.client._endpoint.DIALECTS` under the `style` name clients select it by.
    """

    @property
    def style(self) -> str:
        """The name clients select this dialect by."""
        ...

    @property
    def native_tool_search(self) -> bool:
        """Whether the provider searches deferred tools itself (docs/tools-search.md)."""
        ...

    @property
    def base_headers(self) -> Mapping[str, str]:
        """Headers sent on every request, after the credential."""
        ...

    @property
    def provider(self) -> str:
        """Who serves this wire, as telemetry names it (`openai` for both OpenAI wires)."""
        ...

    @property
    def transcript_key(self) -> str:
        """The body key holding the transcript (`messages`; `input` for Responses)."""
        ...

    def endpoint(self, base_url: str) -> str:
        """The request URL for a client's `base_url`."""
        ...

    def auth_headers(self, key: str) -> dict[str, str]:
        """The headers of a request authenticated with API key `key`."""
        ...

    def start_messages(
        self,
        system: str,
        history: Sequence[dict[str, Any]] | None,
        prompt: str | list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """The first request's transcript: `history` (or the system message) and the prompt."""
        ...

    def declarations(
        self, toolkit: Toolkit, strict: bool = False, defer: bool = False
    ) -> list[dict[str, Any]]:
        """The toolkit's tools in this dialect's declaration shape (`strict`: strict schemas;
        `defer`: the deferred form with the provider's search tool, where `native_tool_search`)."""
        ...

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse, with a `ConfigError`, a setting this dialect's provider has no equivalent for."""
        ...

    def body(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        stream: bool,
        *,
        parts: PartPolicy | None = None,
        seen: list[dict[str, Any]] | None = None,
        settings: ModelSettings | None = None,
    ) -> dict[str, Any]:
        """One request body; with `parts`, content parts are encoded as this dialect's blocks;
        with `settings`, the model settings are mapped onto it."""
        ...

    def parse(self, status: int, data: Any, raw: bytes) -> Turn:
        """The turn of a whole (non-streamed) answer; a malformed one raises `ProviderError`."""
        ...

    def stream(self, status: int) -> Assembler:
        """A fresh assembler for one streamed answer."""
        ...

    def tool_results(self, answered: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        """The transcript entries that answer a turn's tool calls, in call order."""
        ...

    def output_keys(self, spec: OutputSpec) -> dict[str, Any]:
        """Body keys asking for `spec` as native structured output (where the wire has it)."""
        ...


class Wire:
    """The request side both dialects build the same way; subclasses add the differences."""

    style: str
    provider: str  # telemetry's `gen_ai.provider.name`
    credential_header: str  # the header carrying the API key: `<credential_prefix><key>`
    credential_prefix: str
    base_headers: Mapping[str, str]  # sent after the credential on every request
    system_in_messages: bool  # openai: the system prompt is the transcript's first message
    transcript_key: str = "messages"  # the body key holding the transcript
    tool_keys: Mapping[str, Any]  # body keys that accompany a non-empty `tools`
    stream_keys: Mapping[str, Any]  # body keys that ask for a stream
    native_tool_search: bool = False  # the provider searches deferred tools itself

    def auth_headers(self, key: str) -> dict[str, str]:
        """The library's headers for a request authenticated with `key`."""
        return {self.credential_header: self.credential_prefix + key, **self.base_headers}

    def request_messages(
        self,
        system: str,
        messages: list[dict[str, Any]],
        parts: PartPolicy,
        seen: list[dict[str, Any]],
    ) -> tuple[str, list[dict[str, Any]]]:
        """The system text and request messages for a canonical transcript."""
        return system, messages

    def preamble(self, system: str) -> dict[str, Any]:
        """Body keys between `model` and `messages`."""
        return {}

    def output_keys(self, spec: OutputSpec) -> dict[str, Any]:
        """Body keys asking for native structured output; a wire without it has none."""
        raise ConfigError(f"the {self.style} wire has no native structured output")

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse, with a `ConfigError`, a setting this wire's provider has no equivalent for."""

    def apply_settings(self, body: dict[str, Any], settings: ModelSettings) -> None:
        """Map `settings` onto `body` (built with the provider tools already in its tools)."""

    def tool_name(self, declaration: dict[str, Any]) -> Any:
        """The name a `tool_choice` would call the declared tool by."""
        return declaration.get("name")

    def start_messages(
        self,
        system: str,
        history: Sequence[dict[str, Any]] | None,
        prompt: str | list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """The first request's transcript: `history` (or the system message) and the prompt."""
        messages = canonical_messages(history) if history else []
        if self.system_in_messages and system and not history:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        return messages

    def body(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        stream: bool,
        *,
        parts: PartPolicy | None = None,
        seen: list[dict[str, Any]] | None = None,
        settings: ModelSettings | None = None,
    ) -> dict[str, Any]:
        """The base body, keys in the wire order the providers document.

        With `parts`, the canonical transcript is encoded for this wire (content parts become
        provider blocks, under the policy's rules) and the summaries of its parts go to `seen`.
        With `settings`, their provider tools follow `tools` and the rest map onto the body.
        """
        if settings is not None and settings.provider_tools:
            tools = [*tools, *(dict(t) for t in settings.provider_tools)]
        if parts is not None:
            system, messages = self.request_messages(
                system, messages, parts, seen if seen is not None else []
            )
        body: dict[str, Any] = {"model": model, **self.preamble(system)}
        body[self.transcript_key] = messages
        if tools:  # an empty tool list leaves every tool key out
            body["tools"] = tools
            body.update(_fresh(self.tool_keys))
        if stream:
            body.update(_fresh(self.stream_keys))
        if settings is not None:
            self._check_choice(settings, tools)
            self.apply_settings(body, settings)
        return body

    def _check_choice(self, settings: ModelSettings, tools: list[dict[str, Any]]) -> None:
        """A forcing `tool_choice` needs tools; a named one, a tool of that name."""
        if not settings.forced_tool:
            return
        if not tools:
            raise ConfigError(
                f"tool_choice={settings.tool_choice!r} forces a tool call, but the request "
                "declares no tools"
            )
        name = settings.named_tool
        if name is not None and all(self.tool_name(t) != name for t in tools):
            declared = ", ".join(str(self.tool_name(t)) for t in tools)
            raise ConfigError(
                f"tool_choice names the tool {name!r}, which the request does not declare "
                f"(declared: {declared})"
            )


def _fresh(keys: Mapping[str, Any]) -> dict[str, Any]:
    # A nested dict per body: `body_transform` may change what it is given.
    return {k: dict(v) if isinstance(v, dict) else v for k, v in keys.items()}


class StreamAssembler:
    """Collects one streamed turn: usage objects, the finish reason, whether the stream ended."""

    __slots__ = (
        "_reasoning",
        "_reasoning_new",
        "_redacted",
        "_refusal",
        "_status",
        "done",
        "finish_reason",
        "usage",
    )

    def __init__(self, status: int) -> None:
        self._status = status
        self.usage: list[dict[str, int]] = []  # every usage object the stream carried
        self.finish_reason: str | None = None
        self.done = False
        self._refusal: list[str] = []  # refusal deltas, in order
        self._reasoning: list[str] = []  # reasoning text deltas, in order
        self._redacted = False  # reasoning came only encrypted or redacted
        self._reasoning_new: list[ReasoningDelta] = []  # not yet taken by `take_reasoning`

    def add_reasoning(self, text: str) -> None:
        """Keep one piece of reasoning text the model streamed."""
        if text:
            self._reasoning.append(text)
            self._reasoning_new.append(ReasoningDelta(text))

    def add_redacted(self) -> None:
        """Note reasoning the provider sent only encrypted or redacted (one marker)."""
        self._redacted = True
        self._reasoning_new.append(ReasoningDelta("", redacted=True))

    def take_reasoning(self) -> list[ReasoningDelta]:
        """The reasoning pieces fed since the last call."""
        if not self._reasoning_new:
            return []
        taken, self._reasoning_new = self._reasoning_new, []
        return taken

    def reasoned(self, turn: Turn) -> Turn:
        """`turn` with the streamed reasoning (when its own parse found none)."""
        if turn.reasoning is None and self._reasoning:
            turn.reasoning = "".join(self._reasoning)
        if turn.reasoning is None and self._redacted:
            turn.reasoning_redacted = True
        return turn

    def assembled(
        self,
        message: dict[str, Any],
        text: str,
        calls: list[ToolCall],
        refusal: str | None,
        reasoning: tuple[str | None, bool],
    ) -> Turn:
        """The streamed turn: what the wire assembled, with the stream's usage and finish reason
        (`reasoning`: the text and whether it was redacted, as the wire reads its message)."""
        shown, redacted = reasoning
        return Turn(
            message,
            text,
            calls,
            self.usage_total(),
            self.finish_reason,
            None,
            refusal,
            reasoning=shown,
            reasoning_redacted=redacted,
        )

    def add_refusal(self, delta: str) -> None:
        """Keep one piece of a refusal the model streamed."""
        self._refusal.append(delta)

    def refusal(self) -> str | None:
        """The whole refusal the stream carried; `None` for none."""
        return "".join(self._refusal) or None

    def usage_total(self) -> dict[str, int] | None:
        """The sum of every usage object the stream carried; `None` for none."""
        if not self.usage:
            return None
        total: dict[str, int] = {}
        for part in self.usage:
            add_usage(total, part)
        return total


def response_error(status: int, data: Any, raw: bytes, expected: str) -> ProviderError:
    """The error for a 2xx body that is an error object or lacks `expected`."""
    text = raw.decode("utf-8", "replace")
    if is_error_payload(data):
        return ProviderError(status, text)
    return ProviderError(status, text, provider_message=f"response has no {expected}")


def url_path(base_url: str) -> str:
    """The path of `base_url` without one trailing `/`."""
    path = urlsplit(base_url).path
    return path[:-1] if path.endswith("/") else path


def append_path(base_url: str, path: str) -> str:
    """`base_url` with one trailing `/` removed and `path` appended; a query string is kept."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=url_path(base_url) + path))


_ENDPOINTS = {
    "openai": "/chat/completions",
    "anthropic": "/messages",
    "openai-responses": "/responses",
}


def endpoint_given(base_url: str, style: str) -> bool:
    """Whether `base_url` already is the full endpoint of `style` (then it is used as it is).

    A base URL ending in the other style's endpoint is refused with what to pass instead.
    """
    path = url_path(base_url)
    for other, suffix in _ENDPOINTS.items():
        if path.endswith(suffix):
            if other == style:
                return True
            example = (
                "https://api.anthropic.com" if style == "anthropic" else "https://api.openai.com/v1"
            )
            raise ConfigError(
                f"base_url {base_url!r} ends in {suffix}, the {other} endpoint, but "
                f'style="{style}": pass the provider\'s base URL (e.g. {example}) or '
                f'style="{other}"'
            )
    return False


def merge_headers(library: Mapping[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    """The library's headers, then `extra`; an extra header replaces one of the same name."""
    if not extra:
        return dict(library)
    overridden = {k.lower() for k in extra}
    out = {k: v for k, v in library.items() if k.lower() not in overridden}
    out.update(extra)
    return out


def token_usage(prompt: Any, completion: Any, total: Any = None) -> dict[str, int]:
    """The three usage counts from provider values; the total is their sum when not given."""
    prompt, completion = as_int(prompt), as_int(completion)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": as_int(total) if total is not None else prompt + completion,
    }


def as_int(value: Any) -> int:
    """A token count from provider data; anything unusable counts 0."""
    if type(value) is int:  # the usual case
        return value
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


_MALFORMED = (TypeError, AttributeError, KeyError, IndexError, ValueError)


class provider_data:
    """Reading provider data: whatever shape it has, a failure ends as a `ProviderError`
    naming what was wrong (never a bare `TypeError`, `AttributeError`, `RecursionError`...).

    A class rather than a generator context manager: it wraps every reply a client parses."""

    __slots__ = ("_raw", "_status")

    def __init__(self, status: int, raw: bytes | str = b"") -> None:
        self._status = status
        self._raw = raw

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        if exc is None:
            return
        if isinstance(exc, _MALFORMED) and (
            isinstance(exc, WireFormatError) or not isinstance(exc, ToolnexusError)
        ):
            reason = f"malformed response ({exc})"
        elif isinstance(exc, RecursionError):
            reason = "malformed response (nested too deeply)"
        else:
            return  # ours (already a clear error) or not about the data: as it is
        raise ProviderError(self._status, _text(self._raw), provider_message=reason) from None


def texts(blocks: Sequence[Any], where: str) -> str:
    """The `text` of every `{"type": "text"}` block joined; one whose text is not a string
    raises `ValueError` naming it (reported as a `ProviderError`)."""
    out: list[str] = []
    for i, block in enumerate(blocks):
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text", "")
            if not isinstance(text, str):
                raise ValueError(f"{where}[{i}].text is not a string (got {type(text).__name__})")
            out.append(text)
    return "".join(out)


def _text(raw: bytes | str) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return text[:2000]


def decode_event(status: int, data: str) -> Any:
    """Decode one SSE `data:` payload; an error event or bad JSON raises `ProviderError`."""
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise ProviderError(
            status, data, provider_message=f"malformed stream event ({exc})"
        ) from None
    except RecursionError:
        raise ProviderError(
            status, data[:2000], provider_message="malformed stream event (nested too deeply)"
        ) from None
    if is_error_payload(obj):
        raise ProviderError(status, data)
    return obj
