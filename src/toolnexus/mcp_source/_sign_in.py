"""A sign-in needed in the middle of a tool call when there is no `wait_for` to ask: a step-up
to more scopes, or a new sign-in after the refresh token was refused.

The call's request waits in the OAuth flow, and the tool returns a suspension at once: an
`authorization` Request with the URL to open. Resuming the call with the host's answer
(`Context(answer=…, request=…)`) completes the sign-in, and the waiting request goes on to the
call's result. Calls made while that sign-in waits get a suspension for the same sign-in.
Everything lives in this process: the PKCE verifier is in memory, so a resume elsewhere (or
after the sign-in expired) simply makes the call again, which asks again when it must.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolnexus._aio import mark_seen
from toolnexus.mcp_source import _input
from toolnexus.types import Answer, Request, ToolResult

if TYPE_CHECKING:
    from toolnexus.oauth._authorization import Authorization

__all__ = ["CallSignIns", "park_for", "resumes_sign_in"]

SIGN_IN_WAIT_S = 600.0
"""How long a call waits for its host's answer (the Request's `expiresAt` says the same)."""


class _Handoff:
    """One call that can hand a sign-in to its host, until it has handed one."""

    open = True


_HANDOFF: ContextVar[_Handoff | None] = ContextVar("toolnexus_mcp_sign_in", default=None)


def park_for() -> object | None:
    """For the server's `Authorization.park_for`: the call a request is made for, while it can
    still hand a sign-in to its host (a call resent after a declined sign-in cannot)."""
    handoff = _HANDOFF.get()
    return handoff if handoff is not None and handoff.open else None


def resumes_sign_in(request: Request) -> bool:
    """`request` is a mid-call sign-in's suspension."""
    mcp = (request.data or {}).get("mcp")
    return isinstance(mcp, Mapping) and mcp.get("signIn") is True


@dataclass
class _Waiting:
    sign_in: Request  # the Authorization's own pending Request
    call: asyncio.Task[ToolResult] | None  # the call waiting in the OAuth flow, if this one's
    expiry: asyncio.TimerHandle


class CallSignIns:
    """The calls of one server waiting for a person's sign-in, by the id of the suspension
    each one's host holds."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._waiting: dict[str, _Waiting] = {}

    async def run(
        self,
        oauth: Authorization,
        call: Callable[[], Awaitable[ToolResult]],
        tool: str,
        args: dict[str, Any],
    ) -> ToolResult:
        """Make the call; when its request parks a sign-in, return the suspension for it."""
        parked = oauth.pending
        if parked is not None and oauth.parked_for is not None:
            return self._suspend(oauth, parked, None, tool, args)  # another call's sign-in
        handoff = _Handoff()
        token = _HANDOFF.set(handoff)
        try:
            task = asyncio.ensure_future(call())
        finally:
            _HANDOFF.reset(token)
        # Any sign-in parked for a call will do: a call whose request queued behind another's
        # sign-in goes on once that one is answered.
        waiting = asyncio.ensure_future(oauth.wait_parked())
        try:
            await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            handoff.open = False
            waiting.cancel()
        if task.done() or not waiting.done() or oauth.parked_for is None:
            return await task
        return self._suspend(oauth, waiting.result(), task, tool, args)

    async def resume(
        self,
        oauth: Authorization,
        answer: Answer,
        call_again: Callable[[], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Resume a call suspended for a sign-in with the host's `answer`."""
        waiting = self._waiting.pop(answer.id, None)
        if waiting is not None:
            waiting.expiry.cancel()
            sign_in = waiting.sign_in
            if oauth.pending is sign_in:
                oauth.answer(Answer(sign_in.id, answer.ok, answer.data, answer.reason))
            if waiting.call is not None:
                try:
                    result = await waiting.call
                except asyncio.CancelledError:
                    result = None
                return result if answer.ok and result is not None else self._declined(answer)
        if not answer.ok:
            return self._declined(answer)
        return await call_again()  # signed in meanwhile, or the sign-in is gone: call afresh

    def close(self) -> None:
        """Give up every waiting call (the toolkit is closing)."""
        for waiting in self._waiting.values():
            waiting.expiry.cancel()
            if waiting.call is not None:
                waiting.call.cancel()
        self._waiting.clear()

    def _suspend(
        self,
        oauth: Authorization,
        sign_in: Request,
        call: asyncio.Task[ToolResult] | None,
        tool: str,
        args: dict[str, Any],
    ) -> ToolResult:
        request = Request(
            id=f"auth-{secrets.token_hex(8)}",
            kind="authorization",
            prompt=sign_in.prompt,
            url=sign_in.url,
            data={
                **(sign_in.data or {}),
                "mcp": {"server": self.server, "tool": tool, "arguments": args, "signIn": True},
            },
            expiresAt=sign_in.expiresAt,
        )
        if call is not None:
            call.add_done_callback(mark_seen)  # it may end on its own before anyone resumes
        loop = asyncio.get_running_loop()
        expiry = loop.call_later(SIGN_IN_WAIT_S, self._expire, oauth, request.id)
        self._waiting[request.id] = _Waiting(sign_in, call, expiry)
        return _input.pending_result(request, self.server)

    def _expire(self, oauth: Authorization, request_id: str) -> None:
        waiting = self._waiting.pop(request_id, None)
        if waiting is None:
            return
        if oauth.pending is waiting.sign_in and not any(
            w.sign_in is waiting.sign_in for w in self._waiting.values()
        ):
            oauth.cancel()  # nobody answered in time: the waiting request fails
        if waiting.call is not None:
            waiting.call.cancel()

    def _declined(self, answer: Answer) -> ToolResult:
        reason = f" ({answer.reason})" if answer.reason else ""
        return ToolResult(
            f'MCP server "{self.server}" authorization declined{reason}',
            True,
            {"server": self.server},
        )
