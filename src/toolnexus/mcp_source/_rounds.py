"""One MCP tool call, round by round: input requests, URL elicitations, resumes, stale state.

At 2026-07-28 a server may answer `tools/call` with input requests instead of a result. Each
round is answered here (roots), through the host's `wait_for` (elicitations, one at a time in
server order), or handed to the host as a suspension to resume later; then the call is retried
with the responses and the echoed `requestState`. A -32042 error (URL elicitation required) is
handled the same way in either era. Imported with the SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from toolnexus._aio import call_in_thread_maybe_async
from toolnexus._log import warn
from toolnexus.errors import McpInputError
from toolnexus.mcp_source import _input
from toolnexus.mcp_source._config import MODERN
from toolnexus.mcp_source._connection import Budget, Connection, input_responses
from toolnexus.mcp_source._input import InputPending, Resume
from toolnexus.mcp_source._results import map_call_result
from toolnexus.types import Answer, Request, ToolContext, ToolResult, error_message

_STALE_STATE = "requestState"
_TASK = "task"  # the Tasks extension's `resultType`, never declared by toolnexus


def _is_task_answer(exc: ValidationError) -> bool:
    """Whether the result the SDK could not read is a Tasks-extension answer (`resultType:
    "task"`, sent although no client extension asked for it): no core result shape fits it."""
    return any(
        isinstance(problem.get("input"), Mapping) and problem["input"].get("resultType") == _TASK
        for problem in exc.errors(include_url=False)
    )


class Rounds:
    """Answers a server's rounds of input requests: roots itself, elicitations through the
    host's `wait_for` (one at a time, in server order), sampling and anything else never."""

    def __init__(
        self, server: str, wait_for: Callable[[Request], Any] | None, conn: Connection
    ) -> None:
        self.name = server
        self.wait_for = wait_for
        self.conn = conn

    async def answer_round(
        self, asked: Mapping[str, Mapping[str, Any]], gathered: dict[str, Any]
    ) -> str | None:
        """Answer, into `gathered`, what toolnexus answers itself and (with `wait_for`) what
        the host answers; the reason when the round cannot be answered."""
        wait_for = self.wait_for
        for key, entry in asked.items():
            if key in gathered:
                continue
            method = entry.get("method")
            if method == _input.ROOTS:
                if not self.conn.roots:
                    return self.no_roots()
                gathered[key] = {"roots": list(self.conn.roots)}
            elif method == _input.SAMPLING:
                return self.no_sampling()
            elif method == _input.ELICIT:
                if wait_for is None:
                    continue
                request = _input.host_request(entry, key)
                answer = await self.ask(request)
                problem = self.form_problem(request, answer)
                if problem is not None:
                    return problem
                gathered[key] = _input.elicit_response(request, answer)
            else:
                return (
                    f'MCP server "{self.name}" asked for {method}, which toolnexus does not provide'
                )
        return None

    async def ask(self, request: Request) -> Answer | None:
        wait_for = self.wait_for
        assert wait_for is not None
        try:
            return Answer.coerce(await call_in_thread_maybe_async(wait_for, request))
        except Exception as exc:
            warn(
                f'MCP server "{self.name}": wait_for raised while answering an input request: '
                f"{error_message(exc)}"
            )
            return None

    def form_problem(self, request: Request, answer: Answer | None) -> str | None:
        """A form answer that breaks the requested schema is never sent: why."""
        if request.kind != "input" or answer is None or not answer.ok:
            return None
        schema = (request.data or {}).get("schema")
        invalid = _input.invalid_fields(schema, answer.data)
        if not invalid:
            return None
        return (
            f'The answer does not fit the form MCP server "{self.name}" asked for; invalid: '
            + ", ".join(invalid)
        )

    def missing_capability(self, exc: MCPError) -> str:
        data = exc.error.data if isinstance(exc.error.data, Mapping) else {}
        required = data.get("requiredCapabilities")
        if isinstance(required, Mapping):
            if "sampling" in required:
                return self.no_sampling()
            if "roots" in required:
                return self.no_roots()
        return exc.message

    def no_sampling(self) -> str:
        return f'MCP server "{self.name}" asked for sampling, which toolnexus does not provide'

    def no_roots(self) -> str:
        return (
            f'MCP server "{self.name}" asked for roots; none are configured '
            "(create_toolkit(roots=...))"
        )


async def with_input(
    rounds: Rounds,
    what: str,
    send: Callable[[Any, str | None], Awaitable[Any]],
    *,
    origin: Mapping[str, Any],
    resume: Resume | None = None,
) -> Any:
    """What `send(responses, request_state)` answers once it stops asking for input (at most
    10 rounds, each answered by `rounds`), starting from `resume` when given. `origin` names
    the request (`{"method", ...}`, the server added) in the Request of an `InputPending`: a
    question only the host can answer, with no `wait_for` to ask it, raises one naming what
    the server asked while doing `what` (e.g. `read <uri>`). Anything else that cannot be
    answered raises `McpInputError`."""
    origin = {"server": rounds.name, **origin, "protocol": rounds.conn.protocol or MODERN}
    responses: dict[str, Any] | None = None
    state: str | None = None
    asked: dict[str, Any] = {}
    resumed = False
    reuse: tuple[dict[str, Any], dict[str, Any]] | None = None

    def pending(round_: dict[str, Any], key: str, gathered: dict[str, Any]) -> InputPending:
        request = _input.round_request(
            origin, request_state=state, input_requests=round_, key=key, responses=gathered
        )
        asked_for = request.prompt if request.url is None else f"{request.prompt} {request.url}"
        return InputPending(
            f'MCP server "{rounds.name}" asked for input to {what}, and there is no '
            f"wait_for to ask: {asked_for}",
            request,
        )

    if resume is not None:
        request, answer = resume
        mcp = (request.data or {}).get("mcp")
        if (
            answer is None
            or answer.id != request.id
            or not isinstance(mcp, Mapping)
            or any(mcp.get(k) != v for k, v in origin.items() if k != "protocol")
        ):
            raise McpInputError("the answer does not belong to this request")
        problem = rounds.form_problem(request, answer)
        if problem is not None:
            raise McpInputError(problem)
        asked = dict(mcp.get("inputRequests") or {})
        responses = dict(mcp.get("responses") or {})
        responses[str(mcp.get("key"))] = _input.elicit_response(request, answer)
        state = mcp.get("requestState")
        following = _input.next_host_key(asked, responses)
        if following is not None:
            raise pending(asked, following, responses)
        resumed = True
    for round_number in range(_input.MAX_ROUNDS + 1):
        try:
            result = await send(input_responses(responses), state)
        except MCPError as exc:
            if resumed and exc.code == types.INVALID_PARAMS and _STALE_STATE in exc.message:
                # as for a tool call: ask afresh once, reusing the answers given
                reuse = (asked, responses or {})
                responses, state, resumed = None, None, False
                continue
            raise
        if not isinstance(result, types.InputRequiredResult):
            return result
        if round_number == _input.MAX_ROUNDS:
            break  # the limit: nobody is asked an answer that could not be sent
        asked = _input.wire_requests(result.input_requests or {})
        gathered: dict[str, Any] = {}
        if reuse is not None:
            gathered.update(_input.reuse_answers(asked, *reuse))
            reuse = None
        problem = await rounds.answer_round(asked, gathered)
        if problem is not None:
            raise McpInputError(problem)
        state = result.request_state
        waiting = _input.next_host_key(asked, gathered)
        if waiting is not None:
            raise pending(asked, waiting, gathered)
        responses = gathered
    raise McpInputError(
        f'MCP server "{rounds.name}" asked for input more than {_input.MAX_ROUNDS} times to {what}'
    )


class Call(Rounds):
    """A `tools/call` of `tool` with `args` on `server`, from first round to result."""

    def __init__(
        self,
        server: str,
        wait_for: Callable[[Request], Any] | None,
        conn: Connection,
        tool: str,
        args: dict[str, Any],
        ctx: ToolContext,
        budget: Budget,
    ) -> None:
        super().__init__(server, wait_for, conn)
        self.tool = tool
        self.args = args
        self.ctx = ctx
        self.budget = budget
        self.meta: dict[str, Any] = {"server": server}

    def error(self, text: str) -> ToolResult:
        return ToolResult(text, True, dict(self.meta))

    async def run(self, resume: Request | None) -> ToolResult:
        responses: dict[str, Any] | None = None
        state: str | None = None
        asked: dict[str, dict[str, Any]] = {}  # the round the responses answer
        url_resent = False
        resumed = False
        if resume is not None:
            mcp = dict((resume.data or {})["mcp"])
            answer = self.ctx.answer
            if "elicitationId" in mcp:  # a -32042 suspension
                if answer is None or not answer.ok:
                    return self.error(
                        _input.describe_url_elicitations(resume.prompt, [{"url": resume.url}])
                    )
                url_resent = True
            else:
                asked = dict(mcp.get("inputRequests") or {})
                responses = dict(mcp.get("responses") or {})
                key = str(mcp.get("key"))
                refused = self.check_form(resume, answer)
                if refused is not None:
                    return refused
                responses[key] = _input.elicit_response(resume, answer)
                state = mcp.get("requestState")
                following = _input.next_host_key(asked, responses)
                if following is not None:
                    return self.suspend(asked, following, responses, state)
                resumed = True
        reuse: tuple[dict[str, Any], dict[str, Any]] | None = None
        renegotiated = relisted = False
        for round_number in range(_input.MAX_ROUNDS + 1):
            sent_at, negotiation = self.conn.protocol, self.conn.negotiation
            try:
                result = await self.conn.call_tool(
                    self.tool,
                    self.args,
                    self.budget,
                    self.ctx.signal,
                    responses=responses,
                    request_state=state,
                )
            except ValidationError as exc:
                if not _is_task_answer(exc):
                    raise
                return self.error(self.answered_with_task())
            except MCPError as exc:
                if exc.code == types.URL_ELICITATION_REQUIRED:
                    outcome = await self.url_required(exc, url_resent)
                    if outcome is not None:
                        return outcome
                    url_resent = True
                    continue
                if resumed and exc.code == types.INVALID_PARAMS and _STALE_STATE in exc.message:
                    # The server no longer accepts the state (restart, other key, expiry): ask
                    # afresh once; questions answered before are answered the same way.
                    reuse = (asked, responses or {})
                    responses, state, resumed = None, None, False
                    continue
                if exc.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY:
                    return self.error(self.missing_capability(exc))
                if exc.code == types.UNSUPPORTED_PROTOCOL_VERSION and not renegotiated:
                    # The server no longer accepts the version (upgraded, restarted): the
                    # request was not executed. Negotiate again, then send it once more.
                    await self.conn.renegotiate(negotiation)
                    renegotiated = True
                    continue
                if (
                    exc.code == types.HEADER_MISMATCH
                    and not relisted
                    and sent_at not in HANDSHAKE_PROTOCOL_VERSIONS
                ):
                    # Not executed either: the listed schema the request's headers come from
                    # is missing or stale. List again, then send it once more.
                    relisted = True
                    try:
                        await self.conn.relist()
                    except Exception:
                        raise exc from None
                    continue
                raise
            if isinstance(result, types.CallToolResult) and result.result_type != _TASK:
                return map_call_result(result, self.name)
            if not isinstance(result, types.InputRequiredResult):
                return self.error(self.answered_with_task())
            if round_number == _input.MAX_ROUNDS:
                break
            asked = _input.wire_requests(result.input_requests or {})
            gathered: dict[str, Any] = {}
            if reuse is not None:
                gathered.update(_input.reuse_answers(asked, *reuse))
                reuse = None
            problem = await self.answer_round(asked, gathered)
            if problem is not None:
                return self.error(problem)
            state = result.request_state
            following = _input.next_host_key(asked, gathered)
            if following is not None:  # no wait_for: the host answers later
                return self.suspend(asked, following, gathered, state)
            responses = gathered
        return self.error(
            f"MCP tool {self.tool} asked for input more than {_input.MAX_ROUNDS} times"
        )

    def answered_with_task(self) -> str:
        return f'MCP server "{self.name}" answered with a task, which toolnexus does not support'

    def check_form(self, request: Request, answer: Answer | None) -> ToolResult | None:
        problem = self.form_problem(request, answer)
        return None if problem is None else self.error(problem)

    def suspend(
        self,
        asked: Mapping[str, Mapping[str, Any]],
        key: str,
        responses: Mapping[str, Any],
        state: str | None,
    ) -> ToolResult:
        return _input.suspension(
            server=self.name,
            tool=self.tool,
            arguments=self.args,
            protocol=self.conn.protocol or "2026-07-28",
            request_state=state,
            input_requests=asked,
            key=key,
            responses=responses,
        )

    async def url_required(self, exc: MCPError, resent: bool) -> ToolResult | None:
        """-32042: the URLs through `wait_for` (then `None`: resend once), else a result."""
        data = exc.error.data if isinstance(exc.error.data, Mapping) else {}
        elicitations = [e for e in data.get("elicitations") or () if isinstance(e, Mapping)]
        text = _input.describe_url_elicitations(exc.message, elicitations)
        if resent or not elicitations:
            return self.error(text)
        if self.wait_for is None:
            return _input.url_suspension(
                server=self.name, tool=self.tool, arguments=self.args, elicitation=elicitations[0]
            )
        for elicitation in elicitations:
            request = _input.host_request({"params": {**elicitation, "mode": "url"}})
            answer = await self.ask(request)
            if answer is None or not answer.ok:
                return self.error(text)
        return None
