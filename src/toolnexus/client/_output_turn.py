"""The output check of a typed run: each answer's `OutputVerdict`, the re-asks, the value.

A run with an `output_type` reads each model answer as its final result when it is one (text,
or a `final_result` call); a value that does not validate is sent back with its errors until
`output_retries` is spent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolnexus.client._output import FINAL_RESULT
from toolnexus.client._run_state import AGAIN, Next, RunEnd
from toolnexus.types import ToolResult

if TYPE_CHECKING:
    from toolnexus.adapters import ToolCall
    from toolnexus.client._events import StreamEvent
    from toolnexus.client._output import OutputSpec
    from toolnexus.client._wire import Dialect, Turn

__all__ = ["OutputCheck", "OutputVerdict", "close_calls", "judge"]

_NOT_RUN = "Not run: the final result was given in the same turn."


@dataclass(slots=True)
class OutputVerdict:
    """One answer read as the run's final result."""

    final: ToolCall | None  # the `final_result` call that carried it (`tool` mode), if any
    value: Any
    errors: list[dict[str, Any]] | None  # why `value` does not validate; `None`: it does


def judge(out: OutputSpec, turn: Turn) -> OutputVerdict | None:
    """Read a turn as a final result, or `None` when it is not one (tool calls to run, with no
    `final_result` among them)."""
    final = next((call for call in turn.calls if call.name == FINAL_RESULT), None)
    if final is not None:
        if final.error is not None:
            return OutputVerdict(
                final, None, [{"type": "json_invalid", "loc": [], "msg": final.error}]
            )
        value, errors = out.validate_args(final.args)
        return OutputVerdict(final, value, errors)
    if turn.calls:
        return None
    value, errors = out.validate_text(turn.text)
    return OutputVerdict(None, value, errors)


def close_calls(
    wire: Dialect,
    calls: list[ToolCall],
    final: ToolCall,
    errors: list[dict[str, Any]] | None = None,
    out: OutputSpec | None = None,
) -> list[dict[str, Any]]:
    """Answers to every call of a final turn, so the transcript stays valid for the next run."""
    answered: list[tuple[ToolCall, ToolResult]] = []
    for call in calls:
        if call is not final:
            answered.append((call, ToolResult(_NOT_RUN, True)))
        elif errors is not None and out is not None:
            answered.append((call, ToolResult(out.retry_prompt(errors), True)))
        else:
            answered.append((call, ToolResult("Final result accepted.")))
    return wire.tool_results(answered)


class OutputCheck:
    """The typed output of one run: judges each answer and re-asks within `retries`.

    `value` and `errors` are the last verdict's; `sink` (a streamed run's) gets the `output`
    event of a value that validates."""

    __slots__ = ("errors", "failures", "out", "retries", "sink", "value", "wire")

    def __init__(
        self, out: OutputSpec, retries: int, wire: Dialect, sink: list[StreamEvent] | None
    ) -> None:
        self.out = out
        self.retries = retries
        self.wire = wire
        self.sink = sink
        self.value: Any = None
        self.errors: list[dict[str, Any]] | None = None
        self.failures = 0

    def check(self, turn: Turn, messages: list[dict[str, Any]]) -> Next:
        """The run's end when `turn` settles the output, `AGAIN` to re-ask for it, else `None`
        (the turn's tools run; a `final_result` that failed is answered there, `set_aside`)."""
        verdict = judge(self.out, turn)
        if verdict is None:
            return None
        final, self.value, errors = verdict.final, verdict.value, verdict.errors
        self.errors = errors
        if errors is None:
            if final is not None:
                messages.extend(close_calls(self.wire, turn.calls, final))
            if self.sink is not None:
                self.sink.append({"type": "output", "output": self.value})
            return RunEnd("done", None, turn.text)
        self.failures += 1
        retry = self.failures <= self.retries
        if final is None:
            if not retry:
                return RunEnd("incomplete", "output", turn.text)
            messages.append({"role": "user", "content": self.out.retry_prompt(errors)})
            return AGAIN
        if not retry:
            messages.extend(close_calls(self.wire, turn.calls, final, errors, self.out))
            return RunEnd("incomplete", "output", turn.text)
        return None

    def set_aside(
        self, calls: list[ToolCall], answered: list[tuple[ToolCall, ToolResult]]
    ) -> list[ToolCall]:
        """The calls a tool turn runs: in `tool` mode, a `final_result` call is not one of them
        (after a failed value it is answered with the errors, into `answered`)."""
        out = self.out
        if out.mode != "tool":
            return calls
        finals = [call for call in calls if call.name == FINAL_RESULT]
        if finals and self.errors is not None:
            reply = ToolResult(out.retry_prompt(self.errors), True)
            answered += [(call, reply) for call in finals]
        return [call for call in calls if call.name != FINAL_RESULT]
