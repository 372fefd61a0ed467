"""A frozen copy of the previous toolnexus A2A outbound (submit-then-poll, 0.3 shapes under 1.0
method names): the peer every card we serve must still work with."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

from toolnexus._aio import Signalled, until_signalled
from toolnexus._env import expand_env_headers
from toolnexus._json import compact_json
from toolnexus._log import warn
from toolnexus.types import Tool, ToolContext, ToolResult, error_message, sanitize

__all__ = [
    "DEFAULT_POLL_EVERY_MS",
    "DEFAULT_TIMEOUT_MS",
    "TASK_INPUT_SCHEMA",
    "Agent",
    "agent",
    "agent_tools",
    "parse_agents_config",
]

DEFAULT_TIMEOUT_MS = 300_000
DEFAULT_POLL_EVERY_MS = 1_000
TERMINAL_STATES = frozenset({"completed", "failed", "canceled"})
# How long a best-effort CancelTask may take before we stop waiting for the peer.
CANCEL_TIMEOUT_S = 2.0

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

T = TypeVar("T")


@dataclass(slots=True)
class Agent:
    """A remote A2A agent: its card URL, request headers (`${ENV}` expanded per request) and
    its time budget and polling interval in milliseconds."""

    card: str
    headers: dict[str, str] | None = None
    timeout: float = DEFAULT_TIMEOUT_MS
    poll_every: float = DEFAULT_POLL_EVERY_MS


def _positive_ms(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{what} must be a positive number of milliseconds, not {value!r}")
    return value  # type: ignore[no-any-return]


def agent(
    card: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    poll_every: float | None = None,
) -> Agent:
    """Declare a remote agent by its Agent Card URL (`timeout`/`poll_every` in milliseconds)."""
    if not isinstance(card, str) or not card:
        raise ValueError(f"agent() needs the Agent Card URL as a string, not {card!r}")
    return Agent(
        card=card,
        headers=dict(headers) if headers is not None else None,
        timeout=DEFAULT_TIMEOUT_MS if timeout is None else _positive_ms(timeout, "timeout"),
        poll_every=(
            DEFAULT_POLL_EVERY_MS if poll_every is None else _positive_ms(poll_every, "poll_every")
        ),
    )


def parse_agents_config(block: Any) -> list[Agent]:
    """Agents from a config's `agents` block: `{"<id>": {"card", "headers"?, "timeout"?,
    "pollEvery"?, "enabled"?, "disabled"?}}`. Entries without a string `card` are ignored."""
    if block is None:
        return []
    if not isinstance(block, Mapping):
        warn(f'the config\'s "agents" block must be an object, not {type(block).__name__}; ignored')
        return []
    agents: list[Agent] = []
    for key, entry in block.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("card"), str):
            continue
        if entry.get("disabled") is True or entry.get("enabled") is False:
            continue
        headers = entry.get("headers")
        try:
            agents.append(
                agent(
                    entry["card"],
                    headers=headers if isinstance(headers, Mapping) else None,
                    timeout=entry.get("timeout"),
                    poll_every=entry.get("pollEvery"),
                )
            )
        except ValueError as exc:
            warn(f'A2A agent "{key}" skipped: {exc}')
    return agents


def _fmt_ms(ms: float) -> str:
    return str(int(ms)) if float(ms).is_integer() else str(ms)


class A2AError(Exception):
    """A failed exchange with an A2A agent (HTTP status, JSON-RPC error, malformed reply)."""


async def _http_json(
    method: str, url: str, *, headers: dict[str, str], timeout_s: float, body: Any = None
) -> Any:
    from toolnexus._http import shared_client

    client = shared_client()
    if method == "GET":
        response = await client.get(url, headers=headers, timeout=timeout_s)
    else:
        response = await client.post(
            url, content=compact_json(body).encode("utf-8"), headers=headers, timeout=timeout_s
        )
    text = response.text
    if not 200 <= response.status_code < 300:
        raise A2AError(f"HTTP {response.status_code}: {text}")
    try:
        return json.loads(text)
    except ValueError:
        raise A2AError(f"{url} did not answer JSON: {text[:200]}") from None


async def agent_tools(agent: Agent) -> list[Tool]:
    """Fetch the agent's card and make one tool per advertised skill (raises on failure)."""
    headers = expand_env_headers(agent.headers) or {}
    card = await _http_json("GET", agent.card, headers=headers, timeout_s=agent.timeout / 1000)
    if not isinstance(card, dict):
        raise A2AError(f"the Agent Card at {agent.card} is not a JSON object")
    card_name = card.get("name") if isinstance(card.get("name"), str) else ""
    url = card.get("url")
    if isinstance(url, str) and url:
        endpoint = urljoin(agent.card, url)
    else:
        parts = urlsplit(agent.card)
        endpoint = f"{parts.scheme}://{parts.netloc}"
    remote = _RemoteAgent(agent, card_name or "", endpoint)
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
            )
        )
    return tools


class _Stop(Exception):
    """The poll loop ended without a terminal state: `reason` is `timeout` or `cancel`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_background: set[asyncio.Task[None]] = set()


class _RemoteAgent:
    """One agent's JSON-RPC endpoint; `execute` is shared by all of its skill tools."""

    def __init__(self, agent: Agent, name: str, endpoint: str) -> None:
        self.agent = agent
        self.name = name
        self.endpoint = endpoint

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await _Call(self, ctx).run(args)


class _Call:
    """One `execute`: submit, poll within the budget, map the outcome (serve.md §2)."""

    def __init__(self, remote: _RemoteAgent, ctx: ToolContext) -> None:
        self.remote = remote
        self.signal = ctx.signal
        self.budget_ms = ctx.timeout * 1000 if ctx.timeout is not None else remote.agent.timeout
        self.started = time.monotonic()
        self.task_id = ""
        self.state = ""
        self.polls = 0
        self.headers: dict[str, str] = {}

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
            return await asyncio.wait_for(until_signalled(work, self.signal), max(limit_s, 0))
        except Signalled:
            raise _Stop("cancel") from None
        except TimeoutError:
            raise _Stop("timeout") from None

    async def rpc(self, method: str, params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
        remaining = self.remaining_s()
        if remaining <= 0:
            raise _Stop("timeout")
        reply = await self.bounded(
            _http_json(
                "POST",
                self.remote.endpoint,
                headers=self.headers,
                # The budget is enforced around the request; the HTTP timeout is a backstop.
                timeout_s=remaining + 1,
                body=body,
            ),
            remaining,
        )
        if not isinstance(reply, dict):
            raise A2AError(f"{method}: the agent's reply is not a JSON-RPC object")
        error = reply.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else None
            code = error.get("code") if isinstance(error, dict) else None
            raise A2AError(message if message else f"JSON-RPC error {code}")
        return reply.get("result")

    # -- the call -------------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        return {
            "agent": self.remote.name,
            "taskId": self.task_id,
            "state": self.state,
            "polls": self.polls,
            "ms": int(self.elapsed_ms()),
        }

    def result(self, output: str, is_error: bool) -> ToolResult:
        return ToolResult(output, is_error, self.metadata())

    async def run(self, args: dict[str, Any]) -> ToolResult:
        task_text = args.get("task") if isinstance(args, dict) else None
        if not isinstance(task_text, str):
            return self.result('missing required argument "task" (a string)', True)
        try:
            self.headers = {
                "Content-Type": "application/json",
                **(expand_env_headers(self.remote.agent.headers) or {}),
            }
            if self.cancelled():
                raise _Stop("cancel")
            task = await self.rpc("SendMessage", self._submission(task_text))
            self._observe(task, submitted=True)
            if self._is_message(task):
                return self.result(_text_parts(task.get("parts")), False)
            while self.state not in TERMINAL_STATES:
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
                polled = await self.rpc("GetTask", {"id": self.task_id})
                self._observe(polled)
                task = polled
            return self._outcome(task)
        except _Stop as stop:
            await self._cancel_remote()
            if stop.reason == "cancel":
                self.state = "canceled"
                return self.result(f"A2A task {self.task_id} canceled", True)
            return self.result(
                f"A2A task {self.task_id} timed out after {_fmt_ms(self.budget_ms)}ms "
                f"(state={self.state})",
                True,
            )
        except asyncio.CancelledError:
            self._cancel_remote_later()
            raise
        except Exception as exc:
            return self.result(error_message(exc), True)

    @staticmethod
    def _submission(text: str) -> dict[str, Any]:
        return {
            "message": {
                "role": "user",
                "messageId": str(uuid.uuid4()),
                "parts": [{"kind": "text", "text": text}],
            },
            "configuration": {"blocking": False},
        }

    @staticmethod
    def _is_message(result: Any) -> bool:
        # A peer may answer SendMessage with a direct Message instead of a Task.
        return (
            isinstance(result, dict)
            and (result.get("kind") == "message" or "status" not in result)
            and isinstance(result.get("parts"), list)
        )

    def _observe(self, task: Any, *, submitted: bool = False) -> None:
        if not isinstance(task, dict):
            raise A2AError("the agent answered without a task")
        if self._is_message(task):
            self.task_id = str(task.get("taskId") or "")
            self.state = "completed"
            return
        task_id = task.get("id")
        if submitted:
            if not isinstance(task_id, str) or not task_id:
                raise A2AError("the agent's SendMessage result has no task id")
            self.task_id = task_id
        status = task.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        self.state = state if isinstance(state, str) and state else "submitted"

    def _outcome(self, task: dict[str, Any]) -> ToolResult:
        if self.state == "completed":
            return self.result(_completed_text(task), False)
        message = task.get("status", {}).get("message")
        detail = _text_parts(message.get("parts")) if isinstance(message, dict) else ""
        output = f"A2A task {self.task_id} {self.state}"
        return self.result(f"{output}: {detail}" if detail else output, True)

    # -- remote cancellation (best effort) ------------------------------------------------------

    async def _send_cancel(self) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": str(uuid.uuid4()),
            "method": "CancelTask",
            "params": {"id": self.task_id},
        }
        # The peer may not support CancelTask (method not found) or be gone: nothing to do.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                _http_json(
                    "POST",
                    self.remote.endpoint,
                    headers=self.headers,
                    timeout_s=CANCEL_TIMEOUT_S,
                    body=body,
                ),
                CANCEL_TIMEOUT_S,
            )

    async def _cancel_remote(self) -> None:
        if self.task_id and self.state not in TERMINAL_STATES:
            await self._send_cancel()

    def _cancel_remote_later(self) -> None:
        if self.task_id and self.state not in TERMINAL_STATES:
            job = asyncio.get_running_loop().create_task(self._send_cancel())
            _background.add(job)
            job.add_done_callback(_background.discard)


def _text_parts(parts: Any) -> str:
    return "\n".join(_text_list(parts))


def _completed_text(task: dict[str, Any]) -> str:
    texts = [
        text
        for artifact in task.get("artifacts") or []
        if isinstance(artifact, dict)
        for text in _text_list(artifact.get("parts"))
    ]
    if texts:
        return "\n".join(texts)
    for message in reversed(task.get("history") or []):
        if isinstance(message, dict) and message.get("role") == "agent":
            text = _text_list(message.get("parts"))
            if text:
                return "\n".join(text)
    return ""


def _text_list(parts: Any) -> list[str]:
    if not isinstance(parts, list):
        return []
    return [
        p["text"]
        for p in parts
        if isinstance(p, dict) and p.get("kind") == "text" and isinstance(p.get("text"), str)
    ]
