"""An MCP server on the `mcp` SDK's extension framework that serves the Tasks extension
(`io.modelcontextprotocol/tasks`), written for the tests from the extension's spec: a test
upstream independent of toolnexus's own served side.

Its task tools answer every call with a task (to a client that declared the extension; else
-32021). A task advances only when it is polled (`tasks/get`), so tests are deterministic
without waiting on time:

- `steps(n)`: one `statusMessage` per poll (`step 1` .. `step n`), then `done n`;
- `ask_name()`: `input_required` with an elicitation keyed `name`; once answered through
  `tasks/update`, `Hello, <name>!`;
- `forever()`: works until cancelled (`tasks/cancel`);
- `gate(name)`: works until the file `<gate dir>/<name>` exists (checked at each poll), then
  `opened <name>`.

Plain tools: `plain()` answers at once; `calls()` reports, as JSON, how many `tools/call`
each task tool received, how many tasks were cancelled and how many polls were answered.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

TASKS = "io.modelcontextprotocol/tasks"
TASK_TOOLS = ("steps", "ask_name", "forever", "gate")


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class _Task:
    def __init__(self, task_id: str) -> None:
        self.id = task_id
        self.status = "working"
        self.message: str | None = None
        self.result: dict[str, Any] | None = None
        self.asked: dict[str, Any] = {}
        self.answers: dict[str, Any] = {}
        self.answered = asyncio.Event()
        self.polled = asyncio.Event()
        self.created = _now()
        self.updated = self.created

    def view(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": 60_000,
            "pollIntervalMs": 10,
        }
        if self.message is not None:
            out["statusMessage"] = self.message
        if self.status == "completed":
            out["result"] = self.result
        if self.status == "input_required":
            out["inputRequests"] = dict(self.asked)
        return out

    def set(self, status: str, message: str | None = None) -> None:
        self.status, self.updated = status, _now()
        if message is not None:
            self.message = message

    async def next_poll(self) -> None:
        self.polled.clear()
        await self.polled.wait()


def build(gate_dir: Path | None = None) -> Any:
    """The `MCPServer` with its Tasks extension."""
    from mcp.server.extension import Extension, MethodBinding
    from mcp.server.mcpserver import MCPServer
    from mcp.shared.exceptions import MCPError
    from mcp_types import (
        INVALID_PARAMS,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        CallToolResult,
        RequestParams,
        Result,
        TextContent,
    )
    from pydantic import ConfigDict

    class CreateTaskResult(Result):
        model_config = ConfigDict(extra="allow")
        result_type: Literal["task"] = "task"

    class TaskView(Result):
        model_config = ConfigDict(extra="allow")
        result_type: Literal["complete"] = "complete"

    class TaskParams(RequestParams):
        model_config = ConfigDict(extra="allow")
        task_id: str

    tasks: dict[str, _Task] = {}
    running: set[asyncio.Task[Any]] = set()
    calls: Counter[str] = Counter()
    cancelled: list[str] = []
    polls: list[str] = []

    def text(value: str) -> dict[str, Any]:
        # structured too, as the tools' listed output schema (`{"result": string}`) says
        result = CallToolResult(
            content=[TextContent(text=value)], structured_content={"result": value}
        )
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def steps(task: _Task, args: dict[str, Any]) -> str:
        n = int(args.get("n", 2))
        for i in range(1, n + 1):
            await task.next_poll()
            task.set("working", f"step {i}")
        await task.next_poll()
        return f"done {n}"

    async def ask_name(task: _Task, args: dict[str, Any]) -> str:
        task.asked = {
            "name": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Please enter your name.",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                    },
                },
            }
        }
        task.set("input_required", "waiting for a name")
        await task.answered.wait()
        task.asked = {}
        task.set("working", "greeting")
        answer = task.answers["name"]
        return f"Hello, {answer['content']['name']}!"

    async def forever(task: _Task, args: dict[str, Any]) -> str:
        await asyncio.Event().wait()
        return "never"

    async def gate(task: _Task, args: dict[str, Any]) -> str:
        name = str(args["name"])
        assert gate_dir is not None
        while not (gate_dir / name).exists():
            await task.next_poll()
        return f"opened {name}"

    bodies: dict[str, Callable[[_Task, dict[str, Any]], Awaitable[str]]] = {
        "steps": steps,
        "ask_name": ask_name,
        "forever": forever,
        "gate": gate,
    }

    async def run(task: _Task, body: Any, args: dict[str, Any]) -> None:
        try:
            output = await body(task, args)
        except asyncio.CancelledError:
            task.set("cancelled", "cancelled")
            return
        task.result = text(output)
        task.set("completed", "done")

    def declared(ctx: Any) -> bool:
        capabilities = ctx.session.client_capabilities
        extensions = getattr(capabilities, "extensions", None) or {}
        return TASKS in extensions

    def known(ctx: Any, params: Any) -> _Task:
        if not declared(ctx):
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability",
                {"requiredCapabilities": {"extensions": {TASKS: {}}}},
            )
        task = tasks.get(params.task_id)
        if task is None:
            raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return task

    async def get(ctx: Any, params: Any) -> TaskView:
        task = known(ctx, params)
        polls.append(task.id)
        view = task.view()
        task.polled.set()
        await asyncio.sleep(0)  # let the task take its step before the next poll
        return TaskView(**view)

    async def update(ctx: Any, params: Any) -> TaskView:
        task = known(ctx, params)
        responses = getattr(params, "input_responses", None) or (params.model_extra or {}).get(
            "inputResponses", {}
        )
        for key, value in dict(responses).items():
            if key in task.asked:
                task.answers[key] = value
        if task.asked and set(task.asked) <= set(task.answers):
            task.answered.set()
        return TaskView()

    async def cancel(ctx: Any, params: Any) -> TaskView:
        task = known(ctx, params)
        cancelled.append(task.id)
        for job in list(running):
            if job.get_name() == task.id:
                job.cancel()
        return TaskView()

    class Tasks(Extension):
        identifier = TASKS

        def methods(self) -> list[MethodBinding]:
            return [
                MethodBinding("tasks/get", TaskParams, get),
                MethodBinding("tasks/update", TaskParams, update),
                MethodBinding("tasks/cancel", TaskParams, cancel),
            ]

        async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
            if params.name not in bodies:
                return await call_next(ctx)
            calls[params.name] += 1
            if not declared(ctx):
                raise MCPError(
                    MISSING_REQUIRED_CLIENT_CAPABILITY,
                    "Missing required client capability",
                    {"requiredCapabilities": {"extensions": {TASKS: {}}}},
                )
            task = _Task(secrets.token_hex(16))
            tasks[task.id] = task
            job = asyncio.get_running_loop().create_task(
                run(task, bodies[params.name], dict(params.arguments or {})), name=task.id
            )
            running.add(job)
            job.add_done_callback(running.discard)
            return CreateTaskResult(**task.view())

    server = MCPServer("tasks-upstream", extensions=[Tasks()])

    # The task tools' listings (their bodies run as tasks, above).
    @server.tool(name="steps")
    def steps_tool(n: int = 2) -> str:
        """Count to n, one step per poll."""
        raise AssertionError("runs as a task")

    @server.tool(name="ask_name")
    def ask_name_tool() -> str:
        """Greet whoever answers."""
        raise AssertionError("runs as a task")

    @server.tool(name="forever")
    def forever_tool() -> str:
        """Work until cancelled."""
        raise AssertionError("runs as a task")

    @server.tool(name="gate")
    def gate_tool(name: str) -> str:
        """Wait for a gate file."""
        raise AssertionError("runs as a task")

    @server.tool()
    def plain() -> str:
        """Answer at once."""
        return "plain answer"

    @server.tool(name="calls")
    def calls_tool() -> str:
        """How many calls each task tool got, and the cancelled tasks."""
        counts = {"calls": dict(calls), "cancelled": len(cancelled), "polls": len(polls)}
        return json.dumps(counts, sort_keys=True)

    return server


def app(gate_dir: Path | None = None) -> Any:
    """The server over streamable HTTP (stateless: the era is 2026-07-28)."""
    return build(gate_dir).streamable_http_app(stateless_http=True)


if __name__ == "__main__":  # python tasks_server.py PORT GATE_DIR
    import uvicorn

    port, gates = int(sys.argv[1]), Path(sys.argv[2])
    uvicorn.run(app(gates), host="127.0.0.1", port=port, log_level="warning")
