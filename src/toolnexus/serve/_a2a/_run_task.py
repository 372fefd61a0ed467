"""What `start_a2a_server` asks of a host: `run_task(text, context_id)`, seen as a client."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from toolnexus._aio import call_in_thread_maybe_async
from toolnexus._json import compact_json

if TYPE_CHECKING:
    from toolnexus.client._results import RunResult

__all__ = ["RunTask", "RunTaskClient"]

RunTask: TypeAlias = Callable[..., Any]
"""`run_task(text, context_id)` (sync or async): the answer to one task, as text (or any JSON
value, or a `RunResult`); `context_id` is the peer's `contextId`, `None` without one."""


class RunTaskClient:
    """What the A2A endpoint asks of a client, answered by the host's `run_task`."""

    def __init__(self, run_task: RunTask) -> None:
        self._run_task = run_task

    async def ask(
        self,
        prompt: Any,
        toolkit: Any = None,
        *,
        id: str | None = None,
        cancel: Any = None,
    ) -> RunResult:
        return await self._answer(prompt, id)

    async def run(self, prompt: Any, toolkit: Any = None, **_: Any) -> RunResult:
        return await self._answer(prompt, None)

    async def _answer(self, prompt: Any, context_id: str | None) -> RunResult:
        from toolnexus.client._results import RunResult

        if not isinstance(prompt, str):  # a message of parts: its text parts
            prompt = "".join(
                str(p.get("text", "")) for p in prompt if isinstance(p, dict) and "text" in p
            )
        value = await call_in_thread_maybe_async(self._run_task, prompt, context_id)
        if isinstance(value, RunResult):
            return value
        text = value if isinstance(value, str) else "" if value is None else compact_json(value)
        return RunResult(
            text=text,
            messages=[
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": text},
            ],
        )
