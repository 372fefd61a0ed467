"""One MCP request, round by round: input requests, URL elicitations, resumes, stale state.

At 2026-07-28 a server may answer `tools/call`, `resources/read` or `prompts/get` with input
requests instead of a result. Each round is answered here (roots), through the host's
`wait_for` (elicitations, one at a time in server order), or handed to the host to resume
later; then the request is sent again with the responses and the echoed `requestState`. A tool
call also handles a -32042 error (URL elicitation required), the same way in either era.
Imported with the SDK.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NoReturn

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from toolnexus.errors import CallerUnavailable, McpInputError
from toolnexus.mcp_source import _input, _task_calls
from toolnexus.mcp_source._budget import CallBudget
from toolnexus.mcp_source._config import MODERN
from toolnexus.mcp_source._connection import Connection
from toolnexus.mcp_source._elicitation import ask_host, elicit_response
from toolnexus.mcp_source._input import AnswerRefused, InputPending, Resume
from toolnexus.mcp_source._results import map_call_result
from toolnexus.mcp_source._tasks import TaskHandle
from toolnexus.types import Answer, Caller, Request, ToolContext, ToolResult

_STALE_STATE = "requestState"
_TASK = "task"  # the Tasks extension's `resultType` (see `_tasks`)


def _is_task_answer(exc: ValidationError) -> bool:
    """Whether the result the SDK could not read is a Tasks-extension answer (`resultType:
    "task"`, sent although no client extension asked for it): no core result shape fits it."""
    return any(
        isinstance(problem.get("input"), Mapping) and problem["input"].get("resultType") == _TASK
        for problem in exc.errors(include_url=False)
    )


def _error_data(exc: MCPError) -> Mapping[str, Any]:
    data = exc.error.data
    return data if isinstance(data, Mapping) else {}


_RESEND = object()  # `recover`'s verdict: the request was not executed, send it again


class _Round:
    """Where a resumed exchange goes on from: the round asked, the responses gathered for it
    and the state the server echoed."""

    __slots__ = ("asked", "responses", "state")

    def __init__(self, asked: dict[str, Any], responses: dict[str, Any], state: str | None) -> None:
        self.asked = asked
        self.responses = responses
        self.state = state


class Rounds(ABC):
    """One request's exchange with a server that may ask for input first: each round answered
    here (roots), through the host's `wait_for` (elicitations, one at a time in server order)
    or handed to the host; the request sent again with the responses and the echoed
    `requestState`. The subclass sends the request and says what a result, a failure and a
    question only the host can answer become."""

    caller: Caller | None = None  # the gateway's client a call is made for, if any

    def __init__(
        self, server: str, wait_for: Callable[[Request], Any] | None, conn: Connection
    ) -> None:
        self.name = server
        self.wait_for = wait_for
        self.conn = conn

    # -- the subclass's part ------------------------------------------------------------------

    @abstractmethod
    def send(self, responses: dict[str, Any] | None, state: str | None) -> Awaitable[Any]:
        """Send the request once, with the `responses` to the last round and its `state`."""

    async def recover(self, exc: Exception) -> Any:
        """What a failed send ends the exchange with, or `_RESEND`; by default it fails."""
        raise exc

    def finished(self, result: Any) -> Any:
        """The exchange's outcome for the server's final `result`."""
        return result

    @abstractmethod
    def origin(self) -> dict[str, Any]:
        """What was asked of which server: a suspension's `Request.data["mcp"]` holds it."""

    @abstractmethod
    def failed(self, problem: str) -> Any:
        """The outcome when the exchange cannot go on, for the reason `problem`."""

    @abstractmethod
    def suspended(self, request: Request) -> Any:
        """The outcome when only the host can answer `request` and there is no `wait_for`."""

    @abstractmethod
    def over_limit(self) -> str:
        """Why an exchange that asked for input more than `MAX_ROUNDS` times stopped."""

    # -- the exchange -------------------------------------------------------------------------

    def resumed(self, request: Request, answer: Answer | None) -> _Round | Any:
        """The round a suspension's `request` stands for, the host's `answer` added: where
        `exchange` goes on from; `failed`/`suspended` when the answer breaks the form or the
        round has another question for the host."""
        problem = self.form_problem(request, answer)
        if problem is not None:
            return self.failed(problem)
        mcp = (request.data or {})["mcp"]
        asked = dict(mcp.get("inputRequests") or {})
        responses = dict(mcp.get("responses") or {})
        if request.kind == "sampling":
            if answer is None or not answer.ok or not answer.data:
                return self.failed(
                    f'MCP server "{self.name}" asked for sampling, and the client gave no reply'
                )
            responses[str(mcp.get("key"))] = dict(answer.data)
        else:
            responses[str(mcp.get("key"))] = elicit_response(request, answer)
        state = mcp.get("requestState")
        following = _input.next_host_key(asked, responses)
        if following is not None:
            return self.suspend(asked, following, responses, state)
        return _Round(asked, responses, state)

    async def exchange(self, at: _Round | None = None) -> Any:
        """The request sent until the server stops asking for input (at most `MAX_ROUNDS`
        rounds), from the resumed round `at` when given: what `finished` makes of the result."""
        asked: dict[str, Any] = {}  # the round the responses answer
        responses: dict[str, Any] | None = None
        state: str | None = None
        resumed = at is not None
        if at is not None:
            asked, responses, state = at.asked, at.responses, at.state
        reuse: tuple[dict[str, Any], dict[str, Any]] | None = None
        for round_number in range(_input.MAX_ROUNDS + 1):
            try:
                result = await self.send(responses, state)
            except Exception as exc:
                if (
                    resumed
                    and isinstance(exc, MCPError)
                    and exc.code == types.INVALID_PARAMS
                    and _STALE_STATE in exc.message
                ):
                    # The server no longer accepts the state (restart, other key, expiry): ask
                    # afresh once; questions answered before are answered the same way.
                    reuse = (asked, responses or {})
                    responses, state, resumed = None, None, False
                    continue
                result = await self.recover(exc)
                if result is _RESEND:
                    continue
                return result
            if not isinstance(result, types.InputRequiredResult):
                return self.finished(result)
            if round_number == _input.MAX_ROUNDS:
                break  # the limit: nobody is asked an answer that could not be sent
            asked = _input.wire_requests(result.input_requests or {})
            gathered: dict[str, Any] = {}
            if reuse is not None:
                gathered.update(_input.reuse_answers(asked, *reuse))
                reuse = None
            problem = await self.answer_round(asked, gathered)
            if problem is not None:
                return self.failed(problem)
            state = result.request_state
            waiting = _input.next_host_key(asked, gathered)
            if waiting is not None:  # no wait_for: the host answers later
                return self.suspend(asked, waiting, gathered, state)
            responses = gathered
        return self.failed(self.over_limit())

    def suspend(
        self,
        asked: Mapping[str, Mapping[str, Any]],
        key: str,
        responses: Mapping[str, Any],
        state: str | None,
    ) -> Any:
        """`suspended` with the Request for entry `key` of the round `asked`."""
        return self.suspended(
            _input.round_request(
                self.origin(),
                request_state=state,
                input_requests=asked,
                key=key,
                responses=responses,
            )
        )

    # -- answering a round ------------------------------------------------------------------

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
                problem = await self.sample_through_caller(key, entry, gathered)
                if problem is not None:
                    return problem
            elif method == _input.ELICIT:
                if wait_for is None:
                    continue
                request = _input.host_request(entry, key)
                answer = await self.ask(request)
                problem = self.form_problem(request, answer)
                if problem is not None:
                    return problem
                gathered[key] = elicit_response(request, answer)
            else:
                return (
                    f'MCP server "{self.name}" asked for {method}, which toolnexus does not provide'
                )
        return None

    async def sample_through_caller(
        self, key: str, entry: Mapping[str, Any], gathered: dict[str, Any]
    ) -> str | None:
        """A sampling entry, asked of the gateway's client the call is made for: its reply
        into `gathered` now, or left for a later round (the client answers that way); why
        not, when there is no client or it cannot sample."""
        caller = self.caller
        if caller is None:
            return self.no_sampling()
        params = dict(entry.get("params") or {})
        params.pop("_meta", None)
        messages = params.pop("messages", [])
        try:
            reply = await caller.sample(list(messages), params)
        except CallerUnavailable as exc:
            return f'MCP server "{self.name}" asked for sampling: {exc}'
        if reply is not None:
            gathered[key] = reply
        return None

    async def ask(self, request: Request) -> Answer | None:
        wait_for = self.wait_for
        assert wait_for is not None
        return await ask_host(wait_for, request, self.name, "an input request")

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
        data = _error_data(exc)
        required = data.get("requiredCapabilities")
        if isinstance(required, Mapping):
            if "sampling" in required:
                return self.no_sampling()
            if "roots" in required:
                return self.no_roots()
        return exc.message

    def no_sampling(self) -> str:
        if self.caller is not None:
            return (
                f'MCP server "{self.name}" asked for sampling, which the MCP client calling '
                "through toolnexus did not declare"
            )
        return f'MCP server "{self.name}" asked for sampling, which toolnexus does not provide'

    def no_roots(self) -> str:
        return (
            f'MCP server "{self.name}" asked for roots; none are configured '
            "(create_toolkit(roots=...))"
        )


Send = Callable[[dict[str, Any] | None, str | None], Awaitable[Any]]
"""Sends a request once: `(responses, request_state)` to what the server answers."""


class Fetch(Rounds):
    """A `resources/read` or `prompts/get` (`origin`: `{"method", ...}`) of `server`, sent by
    `send`, that may ask for input while doing `what` (e.g. `read <uri>`). A question only the
    host can answer, with no `wait_for` to ask it, raises `InputPending`; anything else that
    cannot be answered raises `McpInputError`."""

    def __init__(
        self,
        server: str,
        wait_for: Callable[[Request], Any] | None,
        conn: Connection,
        send: Send,
        what: str,
        origin: Mapping[str, Any],
    ) -> None:
        super().__init__(server, wait_for, conn)
        self._send = send
        self.what = what
        self._origin = {"server": server, **origin}

    def send(self, responses: dict[str, Any] | None, state: str | None) -> Awaitable[Any]:
        return self._send(responses, state)

    def origin(self) -> dict[str, Any]:
        return {**self._origin, "protocol": self.conn.protocol or MODERN}

    def failed(self, problem: str) -> NoReturn:
        raise McpInputError(problem)

    def suspended(self, request: Request) -> NoReturn:
        asked_for = request.prompt if request.url is None else f"{request.prompt} {request.url}"
        raise InputPending(
            f'MCP server "{self.name}" asked for input to {self.what}, and there is no '
            f"wait_for to ask: {asked_for}",
            request,
        )

    def over_limit(self) -> str:
        return (
            f'MCP server "{self.name}" asked for input more than {_input.MAX_ROUNDS} times '
            f"to {self.what}"
        )

    async def run(self, resume: Resume | None) -> Any:
        """What the server answers once it stops asking for input, starting from `resume` (a
        Request `InputPending` carried and the answer to it) when given."""
        at: _Round | None = None
        if resume is not None:
            request, answer = resume
            if not _input.answers(request, answer, self._origin):
                raise AnswerRefused("the answer does not belong to this request")
            problem = self.form_problem(request, answer)
            if problem is not None:
                raise AnswerRefused(problem)
            at = self.resumed(request, answer)  # `InputPending`: the round's next question
        return await self.exchange(at)


class Call(Rounds):
    """A `tools/call` of `tool` with `args` on `server`, from first round to result. What the
    server answers never raises: every outcome is a `ToolResult`."""

    # Each resend at most once per call (class defaults: a call that needs none sets none).
    negotiated_again = False  # a -32022 made the version negotiated again
    url_resent = False  # a -32042's URLs were answered and the call sent again
    relisted = False  # a -32020 made the tools listed again
    sent_at: str | None  # the protocol and the negotiation of the latest send
    negotiation: int
    task_id: str | None = None  # the task the server answered with (Tasks extension)

    def __init__(
        self,
        server: str,
        wait_for: Callable[[Request], Any] | None,
        conn: Connection,
        tool: str,
        args: dict[str, Any],
        ctx: ToolContext,
        budget: CallBudget,
    ) -> None:
        super().__init__(server, wait_for, conn)
        self.tool = tool
        self.args = args
        self.ctx = ctx
        self.budget = budget
        self.caller = ctx.caller

    def run(self, resume: Request | None) -> Awaitable[ToolResult]:
        """The call from its first round, or from the suspension `resume` (answered by
        `ctx.answer`)."""
        if resume is None:
            return self.first()
        answer = self.ctx.answer
        if "elicitationId" in (resume.data or {})["mcp"]:  # a -32042 suspension
            if answer is None or not answer.ok:
                text = _input.describe_url_elicitations(resume.prompt, [{"url": resume.url}])
                return _now(self.error(text))
            self.url_resent = True
            return self.exchange()
        resumed = self.resumed(resume, answer)
        if isinstance(resumed, ToolResult):
            return _now(resumed)
        task_id = _task_calls.task_of(resume)
        if task_id is not None:  # an input request of the task the call is waiting in
            return _task_calls.resume(self, resumed.responses, task_id)
        return self.exchange(resumed)

    async def first(self) -> ToolResult:
        """The call from its first round, unless an earlier attempt of it (a durable run
        recovered elsewhere) left a task to follow instead."""
        recalled = await _task_calls.recalled(self)
        if recalled is not None:
            return recalled
        outcome: ToolResult = await self.exchange()
        return outcome

    async def send(self, responses: dict[str, Any] | None, state: str | None) -> Any:
        """One `tools/call`; a task it is answered with is followed to its outcome here."""
        conn = self.conn
        self.sent_at, self.negotiation = conn.protocol, conn.negotiation
        result = await conn.call_tool(
            self.tool,
            self.args,
            self.budget,
            self.ctx.signal,
            responses=responses,
            request_state=state,
            caller=self.caller,
        )
        if isinstance(result, TaskHandle):
            return await _task_calls.follow(self, result)
        return result

    async def recover(self, exc: Exception) -> Any:
        """A Tasks answer, a missing capability or a -32042 the host does not answer end the
        call with a result. It is sent once more, at most once each, after negotiating again
        (-32022), after the host answered a -32042's URLs and after listing the tools again
        (-32020)."""
        if isinstance(exc, ValidationError) and _is_task_answer(exc):
            return self.error(self.answered_with_task())
        if not isinstance(exc, MCPError):
            raise exc
        if not self.negotiated_again and await self.conn.renegotiated(exc, self.negotiation):
            self.negotiated_again = True
            return _RESEND
        if exc.code == types.URL_ELICITATION_REQUIRED:
            outcome = await self.url_required(exc, self.url_resent)
            if outcome is not None:
                return outcome
            self.url_resent = True
            return _RESEND
        if exc.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY:
            return self.error(self.missing_capability(exc))
        if (
            exc.code == types.HEADER_MISMATCH
            and not self.relisted
            and self.sent_at not in HANDSHAKE_PROTOCOL_VERSIONS
        ):
            # Not executed: the listed schema the request's headers come from is missing or
            # stale. List again, then send it once more.
            self.relisted = True
            try:
                await self.conn.relist()
            except Exception:
                raise exc from None
            return _RESEND
        raise exc

    def finished(self, result: Any) -> ToolResult:
        if isinstance(result, ToolResult):  # a task's outcome
            return result
        if isinstance(result, types.CallToolResult) and result.result_type != _TASK:
            return map_call_result(result, self.name)
        return self.error(self.answered_with_task())

    def origin(self) -> dict[str, Any]:
        origin = {
            "server": self.name,
            "tool": self.tool,
            "arguments": dict(self.args),
            "protocol": self.conn.protocol or MODERN,
        }
        if self.task_id is not None:
            origin["taskId"] = self.task_id
        return origin

    def error(self, text: str) -> ToolResult:
        return ToolResult(text, True, {"server": self.name})

    def failed(self, problem: str) -> ToolResult:
        return self.error(problem)

    def suspended(self, request: Request) -> ToolResult:
        return _input.pending_result(request, self.name)

    def over_limit(self) -> str:
        return f"MCP tool {self.tool} asked for input more than {_input.MAX_ROUNDS} times"

    def answered_with_task(self) -> str:
        """Why a task answer that is no task handle toolnexus can follow ends the call."""
        if self.conn.spec.tasks == "avoid":
            why = 'although the Tasks extension was not declared ("tasks": "avoid")'
        else:
            why = "that is not a valid task handle"
        return f'MCP server "{self.name}" answered with a task {why}'

    async def url_required(self, exc: MCPError, resent: bool) -> ToolResult | None:
        """-32042: the URLs through `wait_for` (then `None`: resend once), else a result."""
        data = _error_data(exc)
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


async def _now(result: ToolResult) -> ToolResult:
    return result
