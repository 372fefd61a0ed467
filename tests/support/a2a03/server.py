"""Run under a2a-sdk 0.3.x (the second virtualenv): a 0.3 agent on 127.0.0.1, for our tool.

Prints its base URL on the first line. The first word of a task picks what the executor does:
`echo X` completes with `echo: echo X`; `sleep` works until canceled; `ask` asks for input and
the reply `X` completes with `hello X`. `GET /seen` lists the task ids whose cancel() ran.
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TaskState, TextPart
from a2a.utils import new_task
from starlette.responses import JSONResponse
from starlette.routing import Route

CANCELED: list[str] = []


class Executor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == TaskState.input_required:
            await updater.add_artifact([Part(root=TextPart(text=f"hello {text}"))], name="answer")
            await updater.complete()
            return
        await updater.start_work()
        word = text.split(" ", 1)[0]
        if word == "sleep":
            await asyncio.sleep(60)
            return
        if word == "ask":
            question = updater.new_agent_message([Part(root=TextPart(text="Your name?"))])
            await updater.requires_input(question)
            return
        await updater.add_artifact([Part(root=TextPart(text=f"echo: {text}"))], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        CANCELED.append(context.task_id or "")
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


async def seen(request: object) -> JSONResponse:
    return JSONResponse(CANCELED)


def main() -> None:
    streaming = sys.argv[1:] == ["--streaming"]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name="sdk03 agent",
        description="An a2a-sdk 0.3 agent",
        url=base + "/",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Executor(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    app.router.routes.append(Route("/seen", seen, methods=["GET"]))
    print(base, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
