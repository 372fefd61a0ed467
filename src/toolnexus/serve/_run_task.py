"""`start_a2a_server`: the A2A (and MCP) endpoint for a host that fulfils tasks itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from toolnexus._aio import call_in_thread_maybe_async
from toolnexus._json import compact_json
from toolnexus.errors import ConfigError

if TYPE_CHECKING:
    from toolnexus.client import RunResult
    from toolnexus.serve._app import ServeHandle
    from toolnexus.serve._mcp import OnCall
    from toolnexus.skill import SkillInfo
    from toolnexus.types import Tool

__all__ = ["RunTask", "start_a2a_server"]

RunTask: TypeAlias = Callable[..., Any]
"""`run_task(text, context_id)` (sync or async): the answer to one task, as text (or any JSON
value, or a `RunResult`); `context_id` is the peer's `contextId`, `None` without one."""


class _RunTaskClient:
    """What the A2A endpoint asks of a client, answered by the host's `run_task`."""

    def __init__(self, run_task: RunTask) -> None:
        self._run_task = run_task

    async def ask(self, prompt: str, toolkit: Any = None, *, id: str | None = None) -> RunResult:
        return await self._answer(prompt, id)

    async def run(self, prompt: str, toolkit: Any = None) -> RunResult:
        return await self._answer(prompt, None)

    async def _answer(self, prompt: str, context_id: str | None) -> RunResult:
        from toolnexus.client import RunResult

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


async def start_a2a_server(
    addr: str,
    a2a: Mapping[str, Any] | None,
    skills: Sequence[SkillInfo],
    run_task: RunTask,
    on_task: Callable[[dict[str, Any]], Any] | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
    mcp: Mapping[str, Any] | None = None,
    mcp_tools: Sequence[Tool] | None = None,
    on_call: OnCall | None = None,
) -> ServeHandle:
    """Serve on `addr` (`"host:port"`) what `Toolkit.serve` serves, with the tasks answered by
    `run_task` instead of a client: the A2A profile `a2a` (its card lists `skills`) and, with
    `mcp`, the MCP profile exposing `mcp_tools`. Without either profile nothing is mounted.

    The server runs on the running event loop; `loop`, when given, must be that loop.
    """
    from toolnexus.serve import serve_toolkit
    from toolnexus.toolkit import Toolkit

    if loop is not None and loop is not asyncio.get_running_loop():
        raise ConfigError("start_a2a_server serves on the running event loop; pass loop=None")
    if a2a is not None and not callable(run_task):
        raise TypeError(f"run_task must be callable, not {type(run_task).__name__}")
    return await serve_toolkit(
        Toolkit(extra_tools=list(mcp_tools or ())),
        addr,
        client=_RunTaskClient(run_task) if a2a is not None else None,
        a2a=a2a,
        on_task=on_task,
        mcp=mcp,
        on_call=on_call,
        card_skills=list(skills),
    )
