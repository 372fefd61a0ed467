"""A scripted A2A peer (JSON-RPC over HTTP) that records every request it receives.

The first word of a task picks the behaviour, so one peer serves every outbound test:

| task        | behaviour |
|-------------|-----------|
| `echo X`    | `submitted`, then `completed` with artifact text `echo: X` on the 2nd GetTask |
| `multi`     | completed: two artifacts, three text parts and a data part |
| `history`   | completed without artifacts; the answer is in the last agent message with text |
| `empty`     | completed with no text anywhere |
| `nostate`   | SendMessage result has no state; the first GetTask completes |
| `immediate` | SendMessage already returns `completed` (no polling needed) |
| `message`   | SendMessage returns a direct Message instead of a Task |
| `fail`      | failed with status message `bad input` / `fail quiet`: failed, no message |
| `canceled`  | the peer cancels the task |
| `forever`   | stays `working` (for timeouts and cancellation) |
| `http500`   | HTTP 500 `server broke` |
| `rpcerror`  | JSON-RPC error `no capacity` / `rpcbare`: error without a message |
| `notask`    | SendMessage result without a task id |
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route


class Peer:
    def __init__(self, *, name: str = "Peer Agent!", token: str | None = None) -> None:
        self.name = name
        self.token = token
        self.requests: list[dict[str, Any]] = []  # {"path", "headers", "body"}
        self.tasks: dict[str, dict[str, Any]] = {}
        self.polls: dict[str, int] = {}
        self.cancel_supported = True
        self.base_url = ""
        self.app = Starlette(
            routes=[
                Route("/.well-known/agent-card.json", self.card, methods=["GET"]),
                Route("/cards/rpc-path.json", self.card_with_url, methods=["GET"]),
                Route("/cards/broken.json", self.broken_card, methods=["GET"]),
                Route("/", self.rpc, methods=["POST"]),
                Route("/rpc", self.rpc, methods=["POST"]),
            ]
        )

    # -- helpers for tests ----------------------------------------------------------------------

    def calls(self, method: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["body"].get("method") == method]

    def _denied(self, request: Request) -> Response | None:
        if self.token is None:
            return None
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return PlainTextResponse("who are you?", status_code=401)
        return None

    def _card(self, url: str | None) -> dict[str, Any]:
        card: dict[str, Any] = {
            "name": self.name,
            "description": "A scripted peer",
            "version": "1.0.0",
            "protocolVersion": "0.3.0",
            "capabilities": {"streaming": False, "pushNotifications": False},
            "defaultInputModes": ["text"],
            "defaultOutputModes": ["text"],
            "skills": [
                {"id": "do.it", "name": "Do it", "description": "Does it", "tags": ["x"]},
                {"id": "plain", "name": "Plain"},
                {"name": "named only"},
            ],
        }
        if url is not None:
            card["url"] = url
        return card

    # -- routes ---------------------------------------------------------------------------------

    async def card(self, request: Request) -> Response:
        return self._denied(request) or JSONResponse(self._card(None))

    async def card_with_url(self, request: Request) -> Response:
        return self._denied(request) or JSONResponse(self._card("/rpc"))

    async def broken_card(self, request: Request) -> Response:
        return PlainTextResponse("card store offline", status_code=503)

    async def rpc(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw)
        self.requests.append(
            {"path": request.url.path, "headers": dict(request.headers), "body": body, "raw": raw}
        )
        denied = self._denied(request)
        if denied is not None:
            return denied
        method = body["method"]
        if method == "SendMessage":
            text = "".join(p["text"] for p in body["params"]["message"]["parts"])
            return self._send(body["id"], text)
        if method == "GetTask":
            return self._get(body["id"], body["params"]["id"])
        if method == "CancelTask" and self.cancel_supported:
            task = self.tasks.get(body["params"]["id"])
            if task is not None:
                task["status"] = {"state": "canceled"}
            return self._result(body["id"], task)
        return self._error(body["id"], -32601, f"Method not found: {method}")

    @staticmethod
    def _result(id: Any, result: Any) -> Response:
        return JSONResponse({"jsonrpc": "2.0", "id": id, "result": result})

    @staticmethod
    def _error(id: Any, code: int, message: str | None) -> Response:
        error: dict[str, Any] = {"code": code}
        if message is not None:
            error["message"] = message
        return JSONResponse({"jsonrpc": "2.0", "id": id, "error": error})

    def _send(self, id: Any, text: str) -> Response:
        word = text.split(" ", 1)[0]
        if word == "http500":
            return PlainTextResponse("server broke", status_code=500)
        if word == "rpcerror":
            return self._error(id, -32000, "no capacity")
        if word == "rpcbare":
            return self._error(id, -32099, None)
        if word == "message":
            return self._result(
                id,
                {"kind": "message", "role": "agent", "parts": [{"kind": "text", "text": "direct"}]},
            )
        task_id = str(uuid.uuid4())
        if word == "notask":
            return self._result(id, {"status": {"state": "submitted"}})
        task: dict[str, Any] = {"id": task_id, "status": {"state": "submitted"}, "text": text}
        self.tasks[task_id] = task
        self.polls[task_id] = 0
        if word == "immediate":
            self._finish(task)
        reply = {k: v for k, v in task.items() if k != "text"}
        if word == "nostate":
            reply = {"id": task_id, "status": {}}
        return self._result(id, reply)

    def _get(self, id: Any, task_id: str) -> Response:
        task = self.tasks.get(task_id)
        if task is None:
            return self._error(id, -32001, f"Task not found: {task_id}")
        self.polls[task_id] += 1
        word = task["text"].split(" ", 1)[0]
        if task["status"]["state"] not in ("completed", "failed", "canceled"):
            if word == "forever" or (word == "echo" and self.polls[task_id] < 2):
                task["status"] = {"state": "working"}
            else:
                self._finish(task)
        return self._result(id, {k: v for k, v in task.items() if k != "text"})

    @staticmethod
    def _finish(task: dict[str, Any]) -> None:
        text: str = task["text"]
        word = text.split(" ", 1)[0]
        agent_text = [{"kind": "text", "text": "from history"}]
        if word in ("echo", "immediate", "nostate"):
            task["status"] = {"state": "completed"}
            task["artifacts"] = [
                {"artifactId": "a1", "parts": [{"kind": "text", "text": "echo: " + text}]}
            ]
        elif word == "multi":
            task["status"] = {"state": "completed"}
            task["artifacts"] = [
                {"artifactId": "a1", "parts": [{"kind": "text", "text": "one"}]},
                {
                    "artifactId": "a2",
                    "parts": [
                        {"kind": "text", "text": "two"},
                        {"kind": "data", "data": {"x": 1}},
                        {"kind": "text", "text": "three"},
                    ],
                },
            ]
        elif word == "history":
            task["status"] = {"state": "completed"}
            task["history"] = [
                {"role": "user", "parts": [{"kind": "text", "text": text}]},
                {"role": "agent", "parts": agent_text},
                {"role": "agent", "parts": [{"kind": "data", "data": {}}]},
                {"role": "user", "parts": [{"kind": "text", "text": "not this"}]},
            ]
        elif word == "empty":
            task["status"] = {"state": "completed"}
            task["artifacts"] = [{"artifactId": "a1", "parts": [{"kind": "data", "data": {}}]}]
        elif word == "fail":
            message = {"role": "agent", "parts": [{"kind": "text", "text": "bad input"}]}
            task["status"] = (
                {"state": "failed"}
                if text == "fail quiet"
                else {"state": "failed", "message": message}
            )
        elif word == "canceled":
            task["status"] = {"state": "canceled"}
