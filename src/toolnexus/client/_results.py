"""What a run or a translation hands back, and the token-usage arithmetic they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, cast

from typing_extensions import TypeVar

from toolnexus.errors import ConfigError, ConfigTypeError, OutputError
from toolnexus.types import Request

OutputT = TypeVar("OutputT", default=Any)

__all__ = [
    "ModelTurn",
    "RunResult",
    "TranslateResult",
    "TranslatedToolCall",
    "UsageLimits",
    "add_usage",
    "empty_usage",
]


def empty_usage() -> dict[str, int]:
    """Usage before any call: the three contract keys at 0 (cache counts appear when reported)."""
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def add_usage(total: dict[str, int], part: dict[str, int]) -> None:
    """Add one call's normalised usage into a running total (in place)."""
    for key, value in part.items():
        total[key] = total.get(key, 0) + value


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """Caps on one run, checked as it goes; `None` means no cap.

    `total_tokens` and `request_tokens` (prompt tokens) count the whole run; `tool_calls` the
    tool calls it executes. A run that would go past one stops before its next model call or
    tool call, `status="incomplete"` with the limit named in `limit`.
    """

    total_tokens: int | None = None
    request_tokens: int | None = None
    tool_calls: int | None = None

    def __post_init__(self) -> None:
        for name in ("total_tokens", "request_tokens", "tool_calls"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigTypeError(f"UsageLimits.{name} must be an int or None, not {value!r}")
            if value is not None and value < 0:
                raise ConfigError(f"UsageLimits.{name} must be >= 0, not {value}")


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One model call of a run: why it ended and what the model reasoned.

    `finish_reason` is normalised across wires: `stop`, `tool_calls`, `length` (a token limit
    cut the answer), `content_filter`, `refusal` or `pause` (Anthropic `pause_turn`, which the
    run continues); `raw_finish_reason` is the provider's own value. `reasoning` is the
    reasoning text the provider showed; `reasoning_redacted` says it reasoned but sent that
    only encrypted or redacted (it still goes back to that provider, verbatim, in `messages`).
    """

    finish_reason: str
    raw_finish_reason: str | None = None
    reasoning: str | None = None
    reasoning_redacted: bool = False


_NO_OUTPUT: Any = object()  # `RunResult.output` of a run that has none


@dataclass(slots=True)
class RunResult(Generic[OutputT]):
    """The outcome of `run`/`ask`/`stream`: the answer, the transcript and what happened.

    `output` is the run's final value: validated against `output_type` when the run had one,
    otherwise the answer's text. `text` is always the raw text of the last answer.
    """

    text: str
    messages: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_count: int = 0
    turns: int = 0
    usage: dict[str, int] = field(default_factory=empty_usage)
    model: str = ""
    status: str = "done"
    limit: str | None = None
    pending: Request | None = None
    refusal: str | None = None  # `status="refused"`: the model declined, saying this
    output_errors: list[dict[str, Any]] | None = None  # why the last answer did not validate
    value: Any = field(default=_NO_OUTPUT, repr=False)  # set by the run: see `output`
    model_turns: list[ModelTurn] = field(default_factory=list)  # one per model call, in order

    @property
    def finish_reason(self) -> str | None:
        """Why the last model call ended (normalised; `None` before any call)."""
        return self.model_turns[-1].finish_reason if self.model_turns else None

    @property
    def output(self) -> OutputT:
        """The final value; raises `OutputError` when the run ended without one."""
        if self.value is not _NO_OUTPUT:
            return cast("OutputT", self.value)
        if self.status == "done":
            return cast("OutputT", self.text)
        detail = f" (limit {self.limit})" if self.limit else ""
        raise OutputError(
            f"the run has no output: it ended {self.status}{detail}",
            self.status,
            self.output_errors,
        )


@dataclass(slots=True)
class TranslatedToolCall:
    """One tool call of a translated response; `arguments` is a JSON string."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class TranslateResult:
    """The outcome of `translate`: one provider call in OpenAI shapes."""

    text: str = ""
    tool_calls: list[TranslatedToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: dict[str, int] = field(default_factory=empty_usage)
    model: str = ""
    raw: Any = None

    def tool_calls_json(self) -> list[dict[str, Any]]:
        """The calls as an OpenAI `tool_calls` array (plain JSON data, ready for a message)."""
        return [c.to_openai() for c in self.tool_calls]
