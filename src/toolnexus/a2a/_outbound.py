"""Remote A2A agents as tools: one tool per advertised skill, in the dialect the card offers.

`agent_tools` turns a discovered card (`_discovery.py`) into tools; the rest is one call's
exchange: submit, stream or poll, input and sign-in suspensions, cancel.

Over 600 lines in one module because one call's exchange (submit, stream or poll, suspensions,
cancel) is one state machine over one remote task.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from toolnexus._aio import Expired, Signalled, bounded, until_signalled
from toolnexus._env import expand_env_headers
from toolnexus._log import warn
from toolnexus._numbers import format_number
from toolnexus._secrets import remember_url
from toolnexus.a2a import _wire as wire
from toolnexus.a2a._auth import AgentCredentials, Placed, unanswered
from toolnexus.a2a._discovery import (
    Agent,
    AgentEndpoint,
    card_url_of,
    check_auth,
    fetch_card,
    json_answer,
    resolve_endpoint,
)
from toolnexus.a2a._wire import Dialect
from toolnexus.errors import A2AError as A2AError  # re-exported: its old home
from toolnexus.types import Request, Tool, ToolContext, ToolResult, error_message, sanitize

__all__ = ["TASK_INPUT_SCHEMA", "A2AError", "agent_tools", "cancel_waiting"]

# How long a best-effort CancelTask may take before we stop waiting for the peer.
CANCEL_TIMEOUT_S = 2.0
# How long the token exchange after a person's sign-in answer may take (HTTP backstop).
SIGN_IN_TIMEOUT_S = 60.0
METHOD_NOT_FOUND = -32601
_OWN_HEADERS = frozenset({"content-type", "accept", "a2a-version"})

TASK_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "The task to send to the agent, in natural language.",
        }
    },
    "required": ["task"],
    "additionalProperties": False,
}
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "Your reply to the agent."}},
    "required": ["text"],
}

T = TypeVar("T")


class _RpcFailure(A2AError):
    """A JSON-RPC error answer: its `code` decides the legacy fallback."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message)
        self.code = code


# -- the tools ----------------------------------------------------------------------------------


async def agent_tools(agent: Agent) -> list[Tool]:
    """Fetch the agent's card and make one tool per advertised skill (raises on failure)."""
    remember_url(agent.card)  # userinfo in the card URL is a secret like any header
    auth = check_auth(agent.auth, agent.headers, agent.card)
    given = expand_env_headers(agent.headers) or {}
    headers = {k: v for k, v in given.items() if k.lower() != "accept"}
    headers["Accept"] = "application/json"
    if auth is not None:
        headers.update(AgentCredentials.card_headers(auth))
    url = card_url_of(agent.card)
    card = await fetch_card(url, headers, agent.timeout / 1000)
    if not isinstance(card, dict):
        raise A2AError(f"the Agent Card at {url} is not a JSON object")
    endpoint = resolve_endpoint(card, url, streaming=agent.streaming)
    card_name = card.get("name") if isinstance(card.get("name"), str) else ""
    credentials = None
    if auth is not None:
        credentials = AgentCredentials(
            auth, card=card, card_url=url, endpoint=endpoint.url, name=card_name or agent.card
        )
    elif wanted := unanswered(card, given):
        warn(
            f'A2A agent "{agent.card}" asks for credentials ({", ".join(wanted)}) and none are '
            'configured: give it an "auth" entry (or the headers)'
        )
    remote = _RemoteAgent(agent, card_name or "", endpoint, credentials)
    skills = card.get("skills")
    tools: list[Tool] = []
    for skill in skills if isinstance(skills, list) else []:
        if not isinstance(skill, dict):
            continue
        skill_id = skill.get("id") or skill.get("name") or ""
        skill_name = skill.get("name")
        label = f"{card_name or 'agent'}_{skill_id}"
        description = skill.get("description") or skill_name or skill_id
        tools.append(
            Tool(
                sanitize(card_name or "agent") + "_" + sanitize(str(skill_id)),
                str(description),
                TASK_INPUT_SCHEMA,
                "a2a",
                remote.execute,
                original_name=label,
                defer_loading=agent.defer_loading,
            )
        )
    return tools


# -- one agent, one call ------------------------------------------------------------------------


class _Stop(Exception):
    """The call ended without a settled state: `reason` is `timeout` or `cancel`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_background: set[asyncio.Task[None]] = set()

_METHODS: dict[Dialect, dict[str, str]] = {
    "1.0": {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "get": "GetTask",
        "cancel": "CancelTask",
    },
    "0.3": {
        "send": "message/send",
        "stream": "message/stream",
        "get": "tasks/get",
        "cancel": "tasks/cancel",
    },
    "legacy": {"send": "SendMessage", "get": "GetTask", "cancel": "CancelTask"},
}


@dataclass(eq=False)
class _RemoteAgent:
    """One agent's endpoint; `execute` is shared by all of its skill tools."""

    agent: Agent
    name: str
    endpoint: AgentEndpoint
    credentials: AgentCredentials | None = None
    dialect: Dialect = "1.0"
    # Request.id of a suspension -> (taskId, contextId, the status it stopped at).
    waiting: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    # Request.id of a sign-in -> the request whose OAuth flow waits for the person's answer.
    signing_in: dict[str, asyncio.Task[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.dialect = self.endpoint.dialect

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await _Call(self, ctx).run(args)


def _submission(
    dialect: Dialect,
    text: str,
    *,
    stream: bool,
    task_id: str = "",
    context_id: str = "",
    tenant: str = "",
) -> dict[str, Any]:
    """The `params` of a submit, key for key as the contract spells them."""
    resume = {"contextId": context_id, "taskId": task_id} if task_id else {}
    params: dict[str, Any]
    if dialect == "1.0":
        message: dict[str, Any] = {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **resume,
        }
        params = {"message": message}
        if not stream:
            params["configuration"] = {"returnImmediately": True}
        if tenant:
            params["tenant"] = tenant
        return params
    if dialect == "0.3":
        message = {
            "kind": "message",
            "messageId": str(uuid.uuid4()),
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
            **resume,
        }
        params = {"message": message}
        if not stream:
            params["configuration"] = {"blocking": False}
        return params
    message = {
        "role": "user",
        "messageId": str(uuid.uuid4()),
        "parts": [{"kind": "text", "text": text}],
        **resume,
    }
    return {"message": message, "configuration": {"blocking": False}}


def _result_object(result: Any, dialect: Dialect) -> tuple[str, dict[str, Any]]:
    """(`task`|`message`|`status`|`artifact`, the 1.0 form) of a result or stream event."""
    if not isinstance(result, dict):
        raise A2AError("the agent answered without a task")
    for key, name in (
        ("task", "task"),
        ("message", "message"),
        ("statusUpdate", "status"),
        ("artifactUpdate", "artifact"),
    ):
        if isinstance(result.get(key), dict) and (dialect == "1.0" or "kind" not in result):
            return name, result[key]
    kind = result.get("kind")
    if kind == "status-update" or (kind is None and "taskId" in result and "status" in result):
        return "status", result
    if kind == "artifact-update" or (kind is None and "artifact" in result):
        return "artifact", result
    if kind == "task" or (kind is None and "status" in result):
        return "task", result
    if kind == "message" or (kind is None and isinstance(result.get("parts"), list)):
        return "message", result
    raise A2AError("the agent answered without a task")


class _Call:
    """One `execute`: submit (stream or poll), follow the task within the budget, map it."""

    def __init__(self, remote: _RemoteAgent, ctx: ToolContext) -> None:
        self.remote = remote
        self.ctx = ctx
        self.signal = ctx.signal
        self.budget_ms = ctx.timeout * 1000 if ctx.timeout is not None else remote.agent.timeout
        self.started = time.monotonic()
        self.task: dict[str, Any] | None = None
        self.task_id = ""
        self.context_id = ""
        self.state = ""
        self.polls = 0
        self.headers: dict[str, str] = {}
        self.query: dict[str, str] = {}
        self.answer_message: dict[str, Any] = {"parts": []}
        # On a resume, the status the task was suspended at: seeing it again (a peer that
        # answers before it has read the reply) does not settle the call.
        self.stale = ""
        self.signed_with: set[str] = set()  # the answer ids that completed a sign-in

    # -- time and cancellation ------------------------------------------------------------------

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000

    def remaining_s(self) -> float:
        return (self.budget_ms - self.elapsed_ms()) / 1000

    def cancelled(self) -> bool:
        return self.signal is not None and self.signal.is_set()

    async def bounded(self, work: Awaitable[T], limit_s: float) -> T:
        """`work`, abandoned on cancellation (`_Stop("cancel")`) or after `limit_s` (timeout)."""
        try:
            return await bounded(work, signal=self.signal, timeout=max(limit_s, 0))
        except Signalled:
            raise _Stop("cancel") from None
        except Expired:
            raise _Stop("timeout") from None

    # -- HTTP -----------------------------------------------------------------------------------

    @property
    def dialect(self) -> Dialect:
        return self.remote.dialect

    def request_headers(self, accept: str) -> dict[str, str]:
        """The agent's headers with ours winning over any spelling of the same name."""
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _OWN_HEADERS}
        headers["Content-Type"] = "application/json"
        headers["Accept"] = accept
        if self.dialect != "legacy":
            headers["A2A-Version"] = self.dialect
        return headers

    def envelope(self, operation: str, params: dict[str, Any]) -> bytes:
        method = _METHODS[self.dialect][operation]
        body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
        return wire.dumps(body)

    @staticmethod
    def unwrap(reply: Any) -> Any:
        if not isinstance(reply, dict):
            raise A2AError("the agent's reply is not a JSON-RPC object")
        error = reply.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else None
            code = error.get("code") if isinstance(error, dict) else None
            raise _RpcFailure(
                message if isinstance(message, str) and message else f"JSON-RPC error {code}",
                code if isinstance(code, int) else None,
            )
        return reply.get("result")

    async def place_credentials(self) -> None:
        """The agent's headers plus its credentials (which win over a header of the same name)."""
        self.headers = expand_env_headers(self.remote.agent.headers) or {}
        credentials = self.remote.credentials
        if credentials is not None:
            placed: Placed = await credentials.place()
            names = {n.lower() for n in placed.headers}
            self.headers = {k: v for k, v in self.headers.items() if k.lower() not in names}
            self.headers.update(placed.headers)
            self.query = placed.params

    def httpx_auth(self) -> Any:
        credentials = self.remote.credentials
        return credentials.httpx_auth if credentials is not None else None

    async def renewed(self, status: int) -> bool:
        """After a `401`, whether fresh credentials are in place for one more try."""
        credentials = self.remote.credentials
        if status != 401 or credentials is None or not credentials.renewable:
            return False
        await credentials.renew()
        await self.place_credentials()
        return True

    async def post(self, body: bytes, timeout_s: float) -> Any:
        from toolnexus._http import shared_client

        for attempt in (1, 2):
            response = await shared_client().post(
                self.remote.endpoint.url,
                content=body,
                headers=self.request_headers("application/json"),
                params=self.query or None,
                timeout=timeout_s,
                auth=self.httpx_auth(),
            )
            if attempt == 1 and await self.renewed(response.status_code):
                continue
            break
        return json_answer(response.status_code, response.text, self.remote.endpoint.url)

    async def rpc(self, operation: str, params: dict[str, Any]) -> Any:
        remaining = self.remaining_s()
        if remaining <= 0:
            raise _Stop("timeout")
        # The budget is enforced around the request; the HTTP timeout is a backstop.
        reply = await self.bounded(
            self.post(self.envelope(operation, params), remaining + 1), remaining
        )
        return self.unwrap(reply)

    def params(self, **extra: Any) -> dict[str, Any]:
        tenant = self.remote.endpoint.tenant
        return {**extra, "tenant": tenant} if tenant and self.dialect == "1.0" else dict(extra)

    # -- the call -------------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        return {
            "agent": self.remote.name,
            "taskId": self.task_id,
            "contextId": self.context_id,
            "state": self.state,
            "polls": self.polls,
            "ms": int(self.elapsed_ms()),
            "protocol": self.dialect,
        }

    def result(
        self, output: str, is_error: bool, parts: list[dict[str, Any]] | None = None
    ) -> ToolResult:
        return ToolResult(output, is_error, self.metadata(), parts=parts)

    async def run(self, args: dict[str, Any]) -> ToolResult:
        task_text = args.get("task") if isinstance(args, dict) else None
        try:
            await self.place_credentials()
            answer = self.ctx.answer
            signing = await self.sign_in()
            if signing is not None:
                return signing
            if answer is not None and answer.id in self.signed_with:
                answer = None  # it was the sign-in's: the task is sent as asked
            resume: tuple[str, str, str] | None = None
            if answer is not None and answer.ok:
                resume = self.remote.waiting.pop(answer.id, None)
                if resume is None:
                    return self.result(f"A2A answer {answer.id} matches no pending task", True)
                data = answer.data
                reply = data.get("text") if isinstance(data, dict) else None
                task_text = reply if isinstance(reply, str) else wire.dumps(data or {}).decode()
                self.task_id, self.context_id, self.stale = resume
            if not isinstance(task_text, str):
                return self.result('missing required argument "task" (a string)', True)
            if self.cancelled():
                raise _Stop("cancel")
            await self.submit(task_text)
            if self.task is not None:
                await self.poll()
            return self.outcome()
        except _Stop as stop:
            await self.cancel_remote()
            if stop.reason == "cancel":
                self.state = "canceled"
                return self.result(f"A2A task {self.task_id} canceled", True)
            return self.result(
                f"A2A task {self.task_id} timed out after {format_number(self.budget_ms)}ms "
                f"(state={self.state})",
                True,
            )
        except asyncio.CancelledError:
            self.cancel_remote_later()
            raise
        except Exception as exc:
            credentials = self.remote.credentials
            if credentials is not None and credentials.signed_in and _needs_sign_in(exc):
                # The stored sign-in ran out (a refused refresh): ask the person again.
                credentials.signed_in = False
                if not self.task_id:
                    with contextlib.suppress(Exception):
                        again = await self.sign_in()
                        if again is not None:
                            return again
            return self.result(error_message(exc), True)

    # -- OAuth sign-in (type oauth) --------------------------------------------------------------

    async def sign_in(self) -> ToolResult | None:
        """For an agent that needs a person's OAuth sign-in: `None` once signed in, else the
        suspension asking for it (an `authorization` Request with the URL to open).

        The first call probes the agent; its `401` starts the SDK's flow, whose authorization
        URL is parked for the host. The answer (`ctx.answer`: the callback URL, or code and
        state) resumes that flow, and the task is then sent as asked."""
        credentials = self.remote.credentials
        authorization = credentials.authorization if credentials is not None else None
        if credentials is None or authorization is None:
            return None
        answer = self.ctx.answer
        probe = self.remote.signing_in.pop(answer.id, None) if answer is not None else None
        if probe is not None:
            assert answer is not None
            self.signed_with.add(answer.id)
            if not authorization.answer(answer):
                probe.cancel()
                return self.result(f"A2A answer {answer.id} matches no pending sign-in", True)
        elif credentials.signed_in:
            return None
        else:
            authorization.hold = True
            probe = asyncio.ensure_future(self.probe())
        parked = asyncio.ensure_future(authorization.wait_parked())
        try:
            done, _ = await asyncio.wait(
                {probe, parked}, timeout=max(self.remaining_s(), 0), return_when="FIRST_COMPLETED"
            )
        except asyncio.CancelledError:
            probe.cancel()
            raise
        finally:
            parked.cancel()
        if probe in done:
            authorization.hold = False
            probe.result()  # a declined or failed sign-in raises here
            credentials.signed_in = True
            return None
        if not done:
            probe.cancel()
            authorization.cancel()
            authorization.hold = False
            raise _Stop("timeout")
        request = parked.result()
        self.remote.signing_in[request.id] = probe
        metadata = {**self.metadata(), "pending": request}
        output = request.prompt if request.url is None else f"{request.prompt}\n{request.url}"
        return ToolResult(output, True, metadata)

    async def probe(self) -> None:
        """A request that only has to get through (any JSON-RPC answer will do)."""
        body = self.envelope("get", self.params(id="toolnexus-sign-in"))
        await self.post(body, SIGN_IN_TIMEOUT_S)

    async def submit(self, text: str) -> None:
        """Send the message (streaming when offered) and take in the first answer."""
        stream = self.remote.endpoint.streaming and self.dialect != "legacy"
        resume = {"task_id": self.task_id, "context_id": self.context_id}
        tenant = self.remote.endpoint.tenant
        try:
            params = _submission(self.dialect, text, stream=stream, tenant=tenant, **resume)
            if stream:
                await self.follow_stream(self.envelope("stream", params))
            else:
                self.observe(await self.rpc("send", params))
        except _RpcFailure as exc:
            if self.dialect != "0.3" or exc.code != METHOD_NOT_FOUND:
                raise
            # A toolnexus peer of the previous contract: legacy from now on, for this agent.
            self.remote.dialect = "legacy"
            self.observe(
                await self.rpc("send", _submission("legacy", text, stream=False, **resume))
            )

    def observe(self, result: Any) -> None:
        kind, body = _result_object(result, self.dialect)
        if kind == "message":
            message = wire.read_message(body)
            self.task = None
            self.task_id = message.get("taskId", "") or self.task_id
            self.context_id = message.get("contextId", "") or self.context_id
            self.state = "completed"
            self.answer_message = message
            return
        if kind == "task":
            if not isinstance(body.get("id"), str) or not body.get("id"):
                raise A2AError("the agent's answer is a task without an id")
            if "status" not in body:
                body = {**body, "status": {"state": "submitted"}}
            self.task = wire.read_task(body)
            if "contextId" not in body:
                self.task["contextId"] = self.context_id
        elif self.task is None:
            task_id = body.get("taskId")
            if not isinstance(task_id, str) or not task_id:
                raise A2AError("the agent's stream names no task")
            self.task = {
                "id": task_id,
                "contextId": body.get("contextId") or "",
                "status": {"state": "TASK_STATE_SUBMITTED"},
            }
        if kind == "status":
            self.task["status"] = wire.read_task({"id": "x", "status": body.get("status")})[
                "status"
            ]
        elif kind == "artifact" and isinstance(body.get("artifact"), Mapping):
            self.merge_artifact(wire.read_artifact(body["artifact"]), body.get("append") is True)
        self.task_id = self.task["id"]
        self.context_id = self.task.get("contextId") or self.context_id
        self.state = wire.state_name(self.task["status"]["state"])

    def merge_artifact(self, artifact: dict[str, Any], append: bool) -> None:
        assert self.task is not None
        artifacts = self.task.setdefault("artifacts", [])
        for index, known in enumerate(artifacts):
            if known["artifactId"] == artifact["artifactId"]:
                if append:
                    known["parts"] = [*known["parts"], *artifact["parts"]]
                else:
                    artifacts[index] = artifact
                return
        artifacts.append(artifact)

    def settled(self) -> bool:
        if self.state in wire.INTERRUPTED_STATES and self.stale and self.task is not None:
            # A new question comes with a new message; anything else is the old status (or the
            # SDK's message-less copy of it) seen before the peer has taken in the reply.
            mark = _status_mark(self.task["status"])
            return bool(mark) and mark != self.stale
        return self.state in wire.TERMINAL_STATES or self.state in wire.INTERRUPTED_STATES

    async def follow_stream(self, body: bytes) -> None:
        """Read the SSE answer; one that ends early leaves the rest to polling."""
        remaining = self.remaining_s()
        if remaining <= 0:
            raise _Stop("timeout")
        try:
            await self.bounded(self.read_stream(body), remaining)
        except (_Stop, A2AError):
            raise
        except Exception:
            if not self.task_id:
                raise
        if not self.settled() and not self.task_id:
            raise A2AError("the agent's stream ended before it named a task")

    async def read_stream(self, body: bytes, *, retried: bool = False) -> None:
        from toolnexus._http import shared_client

        headers = self.request_headers("text/event-stream")
        async with shared_client().stream(
            "POST",
            self.remote.endpoint.url,
            content=body,
            headers=headers,
            params=self.query or None,
            timeout=None,
            auth=self.httpx_auth(),
        ) as response:
            if not 200 <= response.status_code < 300:
                text = (await response.aread()).decode("utf-8", "replace")
                if not retried and await self.renewed(response.status_code):
                    await self.read_stream(body, retried=True)
                    return
                raise A2AError(f"HTTP {response.status_code}: {text}")
            kind = response.headers.get("content-type", "")
            if not kind.lower().startswith("text/event-stream"):
                raw = await response.aread()
                try:
                    reply = wire.repair(wire.loads(raw))
                except wire.WireError:
                    raise A2AError("the agent did not answer JSON") from None
                self.observe(self.unwrap(reply))
                return
            async for data in _sse_data(response.aiter_lines()):
                try:
                    reply = wire.repair(wire.loads(data))
                except wire.WireError:
                    continue
                result = self.unwrap(reply)
                self.observe(result)
                final = isinstance(result, dict) and result.get("final") is True
                if self.settled() or final or self.task is None:
                    return

    async def poll(self) -> None:
        while not self.settled():
            if self.cancelled():
                raise _Stop("cancel")
            if self.elapsed_ms() >= self.budget_ms:
                raise _Stop("timeout")
            pause = min(self.remote.agent.poll_every / 1000, self.remaining_s())
            try:
                await until_signalled(asyncio.sleep(pause), self.signal)
            except Signalled:
                raise _Stop("cancel") from None
            if self.cancelled():
                raise _Stop("cancel")
            if self.remaining_s() <= 0:
                raise _Stop("timeout")
            self.polls += 1  # a poll counts once sent, even if its answer is abandoned
            self.observe(await self.rpc("get", self.params(id=self.task_id)))

    # -- the outcome ----------------------------------------------------------------------------

    def outcome(self) -> ToolResult:
        if self.task is None:  # a direct Message
            return self.answer_of([self.answer_message["parts"]])
        if self.state == "completed":
            return self.completed(self.task)
        if self.state in wire.INTERRUPTED_STATES:
            return self.suspension(self.task)
        detail = wire.message_text(self.task["status"].get("message"))
        output = f"A2A task {self.task_id} {self.state}"
        return self.result(f"{output}: {detail}" if detail else output, True)

    def answer_of(self, part_lists: list[list[dict[str, Any]]]) -> ToolResult:
        from toolnexus import content

        lines: list[str] = []
        parts: list[dict[str, Any]] = []
        for part_list in part_lists:
            lines.extend(wire.texts_and_data(part_list))
            for part in part_list:
                if "raw" in part or "url" in part:
                    try:
                        made = content.incoming_part(
                            data=part.get("raw"),
                            url=part.get("url") if "raw" not in part else None,
                            mime_type=part.get("mediaType") or None,
                            name=part.get("filename"),
                        )
                    except content.ContentPartError:
                        continue
                    parts.append(content.to_dict(made))
        output = "\n".join(lines) if lines else content.describe_parts(parts) if parts else ""
        return self.result(output, False, parts or None)

    @staticmethod
    def _useful(parts: list[dict[str, Any]]) -> bool:
        return any(key in part for part in parts for key in ("text", "data", "raw", "url"))

    def completed(self, task: dict[str, Any]) -> ToolResult:
        artifact_parts = [a.get("parts") or [] for a in task.get("artifacts") or []]
        if any(self._useful(p) for p in artifact_parts):
            return self.answer_of(artifact_parts)
        message = task["status"].get("message")
        if (
            isinstance(message, dict)
            and message.get("role") == "ROLE_AGENT"
            and self._useful(message.get("parts") or [])
        ):
            return self.answer_of([message["parts"]])
        for message in reversed(task.get("history") or []):
            if message.get("role") == "ROLE_AGENT" and self._useful(message.get("parts") or []):
                return self.answer_of([message["parts"]])
        return self.result("", False)

    def suspension(self, task: dict[str, Any]) -> ToolResult:
        message = task["status"].get("message")
        a2a = {"agent": self.remote.name, "taskId": self.task_id, "contextId": self.context_id}
        kind = "authorization" if self.state == "auth-required" else "input"
        prompt = wire.message_text(message) or f"A2A task {self.task_id} is {self.state}"
        url = expires = None
        data: dict[str, Any] = {"schema": REPLY_SCHEMA}
        offered = message.get("metadata", {}).get("toolnexusRequest") if message else None
        if isinstance(offered, Mapping):
            try:
                remote = Request.from_dict(offered)
            except (ValueError, TypeError):
                remote = None
            if remote is not None:
                kind, prompt, url, expires = (
                    remote.kind,
                    remote.prompt,
                    remote.url,
                    remote.expiresAt,
                )
                data = dict(remote.data) if isinstance(remote.data, Mapping) else {}
        data["a2a"] = a2a
        request = Request(
            id="a2a-" + str(uuid.uuid4()),
            kind=kind,
            prompt=prompt,
            url=url if isinstance(url, str) else None,
            data=data,
            expiresAt=expires if isinstance(expires, str) else None,
        )
        stopped_at = _status_mark(task["status"])
        self.remote.waiting[request.id] = (self.task_id, self.context_id, stopped_at)
        metadata = {**self.metadata(), "pending": request}
        output = prompt if request.url is None else f"{prompt}\n{request.url}"
        return ToolResult(output, True, metadata)

    # -- remote cancellation (best effort) ------------------------------------------------------

    async def send_cancel(self) -> None:
        body = self.envelope("cancel", self.params(id=self.task_id))
        # The peer may not support cancelling (method not found) or be gone: nothing to do.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.post(body, CANCEL_TIMEOUT_S), CANCEL_TIMEOUT_S)

    def _cancellable(self) -> bool:
        return bool(self.task_id) and self.state not in wire.TERMINAL_STATES

    async def cancel_remote(self) -> None:
        if self._cancellable():
            await self.send_cancel()

    def cancel_remote_later(self) -> None:
        if self._cancellable():
            job = asyncio.get_running_loop().create_task(self.send_cancel())
            _background.add(job)
            job.add_done_callback(_background.discard)


def _needs_sign_in(exc: BaseException) -> bool:
    from toolnexus.oauth import SignInRequired

    return isinstance(exc, SignInRequired)


def _status_mark(status: Mapping[str, Any]) -> str:
    """What tells one interrupted status from another: the id of its message."""
    message = status.get("message")
    return str(message.get("messageId", "")) if isinstance(message, Mapping) else ""


async def cancel_waiting(tools: Iterable[Tool]) -> None:
    """Ask the agents behind `tools` to cancel the tasks still waiting for a reply (best effort,
    one bounded request each); the toolkit does this when it closes."""
    calls = []
    for tool in tools:
        remote = getattr(getattr(tool, "_execute", None), "__self__", None)
        if not isinstance(remote, _RemoteAgent):
            continue
        for task_id, context_id, _ in remote.waiting.values():
            call = _Call(remote, ToolContext())
            call.task_id, call.context_id, call.state = task_id, context_id, "input-required"
            calls.append(_cancel_with_credentials(call))
        remote.waiting.clear()
    if calls:
        await asyncio.gather(*calls, return_exceptions=True)


async def _cancel_with_credentials(call: _Call) -> None:
    try:
        async with asyncio.timeout(CANCEL_TIMEOUT_S):
            await call.place_credentials()
    except Exception:  # e.g. an unset ${VAR} or a token endpoint gone: nothing can reach it
        return
    await call.send_cancel()


async def _sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data` of each server-sent event (comments and other fields skipped)."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
