"""The harness pieces: guardrails ("may it?") and the completion gate ("did it?")."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolnexus._aio import call_maybe_async
from toolnexus.agents._constants import LIMIT_COMPLETION, TASK_STATUS_DONE, TASK_STATUS_PENDING
from toolnexus.client._hooks import HOOK_NAMES
from toolnexus.errors import ConfigError, ConfigTypeError
from toolnexus.types import ToolResult

__all__ = [
    "LOOP_UNSUPPORTED_FIELDS",
    "Completion",
    "Guardrail",
    "Verdict",
    "all_todos_done",
    "guarded_hooks",
    "harness",
    "hook_of",
    "loop_unsupported",
    "run_gated",
]

Guardrail = Callable[[dict[str, Any]], Any]

_RETRY_PROMPT = "Your work did not verify: {reason}. Fix it and finish."


def harness(**spec: Any) -> dict[str, Any]:
    """A harness is just an agent spec: returned unchanged."""
    return spec


@dataclass(slots=True, frozen=True)
class Verdict:
    """A completion check's answer: `ok`, and when not, why."""

    ok: bool
    reason: str = ""


@dataclass(slots=True, frozen=True)
class Completion:
    """A gate on a finished run: `verify(result) -> Verdict` (sync or async), retried up to
    `max_attempts` times with the reason fed back to the model."""

    verify: Callable[[Any], Verdict | Awaitable[Verdict]]
    max_attempts: int = 0

    def __post_init__(self) -> None:
        if not callable(self.verify):
            raise ConfigError("toolnexus: Completion.verify is required")
        attempts = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ConfigError("toolnexus: Completion.max_attempts must be an integer >= 1")


def _verdict(value: Any) -> Verdict:
    if isinstance(value, Verdict):
        return value
    if isinstance(value, bool):
        return Verdict(value)
    ok = getattr(value, "ok", None)
    if isinstance(ok, bool):
        return Verdict(ok, str(getattr(value, "reason", "") or ""))
    raise ConfigTypeError(f"Completion.verify must return a Verdict, not {type(value).__name__}")


async def run_gated(
    ask: Callable[[str], Awaitable[Any]], prompt: str, completion: Completion | None
) -> Any:
    """Run `ask(prompt)`, then re-ask while `completion.verify` fails, up to its attempts.

    The returned result sums tool calls, turns and usage over every attempt. A result that is
    not `done` returns at once; all attempts failing ends `incomplete` with `limit="completion"`.
    """
    if completion is None:
        return await ask(prompt)
    calls: list[dict[str, Any]] = []
    turns = 0
    usage: dict[str, int] = {}
    reason = ""
    result: Any = None
    for attempt in range(1, completion.max_attempts + 1):
        text = prompt if attempt == 1 else _RETRY_PROMPT.format(reason=reason)
        result = await ask(text)
        calls.extend(result.tool_calls)
        turns += result.turns
        for key, value in result.usage.items():
            usage[key] = usage.get(key, 0) + value
        summed = dataclasses.replace(
            result,
            tool_calls=list(calls),
            tool_call_count=len(calls),
            turns=turns,
            usage=dict(usage),
        )
        if result.status != TASK_STATUS_DONE:
            if reason and result.status != TASK_STATUS_PENDING:
                summed.text += f" [while verifying: attempt {attempt} last failed: {reason}]"
            return summed
        verdict = _verdict(await call_maybe_async(completion.verify, summed))
        if verdict.ok:
            return summed
        reason = verdict.reason or "unspecified"
        result = summed
    return dataclasses.replace(
        result,
        status="incomplete",
        limit=LIMIT_COMPLETION,
        text=f"completion.verify failed {completion.max_attempts}x: {reason}",
    )


def all_todos_done(result: Any) -> Verdict:
    """Ok unless the run's last `todowrite` plan still has items not `completed`."""
    last = None
    for call in getattr(result, "tool_calls", None) or ():
        if isinstance(call, Mapping) and call.get("name") == "todowrite":
            last = call
    if last is None:
        return Verdict(True)
    todos = (last.get("metadata") or {}).get("todos")
    if not isinstance(todos, list):
        return Verdict(True)
    open_items = [t for t in todos if not (isinstance(t, Mapping) and t.get("completed"))]
    if not open_items:
        return Verdict(True)
    texts = "; ".join(
        str(t.get("text", "")) if isinstance(t, Mapping) else str(t) for t in open_items
    )
    return Verdict(False, f"{len(open_items)} item(s) still open: {texts}")


def hook_of(hooks: Any, name: str) -> Any:
    """One hook from a mapping or an object (methods included), else `None`."""
    if hooks is None:
        return None
    if isinstance(hooks, Mapping):
        return hooks.get(name)
    return getattr(hooks, name, None)


def guarded_hooks(guardrails: Sequence[Guardrail] | None, hooks: Any) -> Any:
    """`hooks` with guardrails run ahead of its `before_tool`; the first deny wins.

    A guardrail gets the `before_tool` event and returns `None`/`""`/`"allow"` to pass, or a
    reason string to deny (the tool never runs; the model reads `denied: <reason>`).
    """
    if not guardrails:
        return hooks
    rails = list(guardrails)
    for rail in rails:
        if not callable(rail):
            raise ConfigTypeError(f"a guardrail must be callable, not {type(rail).__name__}")
    composed: dict[str, Any] = {}
    for name in HOOK_NAMES:
        fn = hook_of(hooks, name)
        if fn is not None:
            composed[name] = fn
    prior = composed.get("before_tool")

    async def before_tool(event: dict[str, Any]) -> Any:
        for rail in rails:
            verdict = rail(event)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict is None or verdict == "" or verdict == "allow":
                continue
            if isinstance(verdict, str):
                return {"result": ToolResult(f"denied: {verdict}", True)}
            raise ConfigTypeError(
                f"a guardrail must return None or a reason string, not {type(verdict).__name__}"
            )
        if prior is not None:
            return await call_maybe_async(prior, event)
        return None

    composed["before_tool"] = before_tool
    return composed


LOOP_UNSUPPORTED_FIELDS = (("uses", "tools"), ("team", "team"))
"""The agent fields a `Loop` cannot honour (a Loop runs one agent on the caller's toolkit),
with the name `loop_unsupported` reports for each."""


def loop_unsupported(spec: Any) -> list[str]:
    """What a `Loop` cannot honour in an agent spec: `"tools"` and/or `"team"`."""

    def field(name: str) -> Any:
        return spec.get(name) if isinstance(spec, Mapping) else getattr(spec, name, None)

    missing: list[str] = []
    for name, reported in LOOP_UNSUPPORTED_FIELDS:
        value = field(name)
        if name == "uses":
            value = value.get("tools") if isinstance(value, Mapping) else None
        if value:
            missing.append(reported)
    return missing
