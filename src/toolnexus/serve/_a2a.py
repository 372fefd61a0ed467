"""The A2A profile: the Agent Card and the JSON-RPC endpoint (`SendMessage`, `GetTask`)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from toolnexus._aio import call_maybe_async
from toolnexus._json import compact_json
from toolnexus._log import warn
from toolnexus.serve._tasks import TaskStore
from toolnexus.types import error_message

if TYPE_CHECKING:
    from toolnexus.toolkit import Toolkit

__all__ = ["A2AConfig", "A2AEndpoint", "build_agent_card"]

PROTOCOL_VERSION = "0.3.0"
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_RESUMABLE = -32002


class A2AConfig(TypedDict, total=False):
    """The A2A profile: card identity, the advertised skills and the task store."""

    name: str
    description: str
    version: str
    provider: dict[str, str]
    skills: list[str]
    store: Any


def _skill_fields(skill: Any) -> tuple[str, str | None]:
    if isinstance(skill, Mapping):
        return str(skill["name"]), skill.get("description")
    return str(skill.name), getattr(skill, "description", None)


def build_agent_card(
    cfg: Mapping[str, Any] | None, skills: Iterable[Any], url: str
) -> dict[str, Any]:
    """The Agent Card for `skills` (objects or dicts with `name`/`description`, or a name→skill
    mapping) served at base URL `url`; `cfg` is the A2A profile."""
    cfg = cfg or {}
    if isinstance(skills, Mapping):
        skills = skills.values()
    listed = cfg.get("skills")
    wanted = None if listed is None else set(listed)
    entries = []
    for skill in skills:
        name, description = _skill_fields(skill)
        if wanted is None or name in wanted:
            entries.append({"id": name, "name": name, "description": description or ""})

    def value(key: str, default: str) -> Any:
        got = cfg.get(key)
        return default if got is None else got

    card: dict[str, Any] = {
        "name": value("name", "toolnexus-agent"),
        "description": value("description", ""),
        "version": value("version", "0.1.0"),
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {"streaming": False, "pushNotifications": False},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": entries,
        "url": url if url.endswith("/") else url + "/",
    }
    if cfg.get("provider") is not None:
        card["provider"] = cfg["provider"]
    return card


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _agent_message(text: str) -> dict[str, Any]:
    return {"role": "agent", "parts": [{"kind": "text", "text": text}]}


class A2AEndpoint:
    """Answers A2A JSON-RPC bodies and fulfils tasks in background tasks through `client`."""

    def __init__(
        self,
        toolkit: Toolkit,
        client: Any,
        store: TaskStore,
        on_task: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        self.toolkit = toolkit
        self.client = client
        self.store = store
        self.on_task = on_task
        self._background: set[asyncio.Task[None]] = set()
        # Tasks being resumed right now: a second reply to the same prompt is refused.
        self._resuming: set[str] = set()

    # -- JSON-RPC -------------------------------------------------------------------------------

    async def handle(self, body: bytes) -> bytes:
        """The JSON-RPC answer (always a single response object) to one request body."""
        try:
            request = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than Python parses
            return self._error(None, PARSE_ERROR, "Parse error")
        if not isinstance(request, dict):
            return self._error(None, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC object")
        rid = request.get("id")
        if not isinstance(rid, (str, int, float)) or isinstance(rid, bool):
            rid = None
        method = request.get("method")
        params = request.get("params")
        try:
            if method == "SendMessage":
                result = await self._send_message(params)
            elif method == "GetTask":
                result = await self._get_task(params)
            else:
                raise _RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        except _RpcError as exc:
            return self._error(rid, exc.code, exc.message)
        except Exception as exc:  # e.g. the task store failed: an answer, never a crash
            return self._error(rid, INTERNAL_ERROR, f"Internal error: {error_message(exc)}")
        return compact_json({"jsonrpc": "2.0", "id": rid, "result": result}).encode("utf-8")

    @staticmethod
    def _error(rid: Any, code: int, message: str) -> bytes:
        body = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
        return compact_json(body).encode("utf-8")

    async def _get_task(self, params: Any) -> dict[str, Any]:
        task_id = params.get("id") if isinstance(params, dict) else None
        if not isinstance(task_id, str):
            raise _RpcError(INVALID_PARAMS, "Invalid params: GetTask needs params.id (a task id)")
        task = await self.store.get(task_id)
        if task is None:
            raise _RpcError(TASK_NOT_FOUND, f"Task not found: {task_id}")
        return task

    async def _send_message(self, params: Any) -> dict[str, Any]:
        message = params.get("message") if isinstance(params, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise _RpcError(
                INVALID_PARAMS, "Invalid params: SendMessage needs params.message with a parts list"
            )
        text = "".join(
            part["text"]
            for part in message["parts"]
            if isinstance(part, dict)
            and part.get("kind") == "text"
            and isinstance(part.get("text"), str)
        )
        context_id = message.get("contextId")
        if not isinstance(context_id, str):
            context_id = None
        task_id = message.get("taskId")
        if isinstance(task_id, str):
            return await self._resume(task_id, text)

        task: dict[str, Any] = {"id": str(uuid.uuid4()), "status": {"state": "submitted"}}
        if context_id is not None:
            task["contextId"] = context_id
        await self.store.save(task)
        self._spawn(self._fulfil(task["id"], text, context_id, conversation=context_id))
        return task

    async def _resume(self, task_id: str, text: str) -> dict[str, Any]:
        task = await self.store.get(task_id)
        if task is None:
            raise _RpcError(TASK_NOT_FOUND, f"Task not found: {task_id}")
        status = task.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        if task_id in self._resuming:
            state = "working"
        if state != "input-required":
            raise _RpcError(TASK_NOT_RESUMABLE, f"Task {task_id} is {state}, not input-required")
        self._resuming.add(task_id)
        try:
            context_id = task.get("contextId")
            working = self._versioned(task_id, context_id, {"state": "working"})
            await self.store.save(working)
        except BaseException:
            self._resuming.discard(task_id)
            raise
        conversation = context_id if isinstance(context_id, str) else task_id
        self._spawn(
            self._fulfil(task_id, text, context_id, conversation=conversation, resumed=True)
        )
        return working

    # -- fulfilment -----------------------------------------------------------------------------

    @staticmethod
    def _versioned(task_id: str, context_id: Any, status: dict[str, Any]) -> dict[str, Any]:
        task: dict[str, Any] = {"id": task_id, "status": status}
        if isinstance(context_id, str):
            task["contextId"] = context_id
        return task

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _fulfil(
        self,
        task_id: str,
        text: str,
        context_id: str | None,
        *,
        conversation: str | None,
        resumed: bool = False,
    ) -> None:
        result: Any = None
        try:
            if not resumed:
                await self._save(self._versioned(task_id, context_id, {"state": "working"}))
            try:
                if conversation is not None:
                    result = await self.client.ask(text, self.toolkit, id=conversation)
                else:
                    result = await self.client.run(text, self.toolkit)
                final = await self._final_task(task_id, context_id, conversation, result)
            except asyncio.CancelledError:
                stopped = _agent_message("the server stopped before the task finished")
                canceled = self._versioned(
                    task_id, context_id, {"state": "canceled", "message": stopped}
                )
                await asyncio.shield(self._save(canceled))
                raise
            except Exception as exc:  # a failed run fails its task, nothing else
                final = self._versioned(
                    task_id,
                    context_id,
                    {"state": "failed", "message": _agent_message(error_message(exc))},
                )
            await self._save(final)
        finally:
            self._resuming.discard(task_id)
        await self._notify(task_id, final, result)

    async def _final_task(
        self, task_id: str, context_id: str | None, conversation: str | None, result: Any
    ) -> dict[str, Any]:
        if getattr(result, "status", None) == "pending":
            request = result.pending
            prompt = getattr(request, "prompt", None) or result.text or ""
            if conversation is None:
                # A reply resumes this task as conversation `task_id`: keep the transcript there.
                await self._remember(task_id, result)
            return self._versioned(
                task_id,
                context_id,
                {"state": "input-required", "message": _agent_message(prompt)},
            )
        final = self._versioned(task_id, context_id, {"state": "completed"})
        final["artifacts"] = [
            {
                "artifactId": str(uuid.uuid4()),
                "parts": [{"kind": "text", "text": str(getattr(result, "text", "") or "")}],
            }
        ]
        return final

    async def _remember(self, task_id: str, result: Any) -> None:
        store = getattr(self.client, "conversation_store", None)
        messages = getattr(result, "messages", None)
        if store is None or messages is None:
            return
        try:
            await store.save(task_id, messages)
        except Exception as exc:
            warn(f"A2A task {task_id}: could not keep its conversation: {error_message(exc)}")

    async def _save(self, task: dict[str, Any]) -> None:
        try:
            await self.store.save(task)
        except Exception as exc:  # a store failure never crashes the server
            warn(f"A2A task store failed to save task {task['id']}: {error_message(exc)}")

    async def _notify(self, task_id: str, final: dict[str, Any], result: Any) -> None:
        if self.on_task is None:
            return
        event = {"id": task_id, "task": final, "result": result, "state": final["status"]["state"]}
        try:
            await call_maybe_async(self.on_task, event)
        except Exception as exc:
            warn(f"on_task raised for A2A task {task_id}: {error_message(exc)}")

    async def aclose(self) -> None:
        """Cancel every background fulfilment and wait for them to finish."""
        pending = list(self._background)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
