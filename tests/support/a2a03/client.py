"""Run under a2a-sdk 0.3.x (the second virtualenv): its client against an agent at argv[1].

Prints one JSON line per step so the test in the main environment can check what happened:
the card it accepted, a message/send (polling off: blocking), a message/stream and an
input-required round trip.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, Task, TextPart


def text_message(text: str, **ids: Any) -> Message:
    return Message(
        message_id=f"m-{text}", role=Role.user, parts=[Part(root=TextPart(text=text))], **ids
    )


async def run(client: Any, message: Message) -> list[dict[str, Any]]:
    seen = []
    async for event in client.send_message(message):
        if isinstance(event, Message):
            seen.append(event.model_dump(mode="json", by_alias=True, exclude_none=True))
        else:
            task, update = event
            item = {"task": task.model_dump(mode="json", by_alias=True, exclude_none=True)}
            if update is not None:
                item["update"] = update.model_dump(mode="json", by_alias=True, exclude_none=True)
            seen.append(item)
    return seen


async def main(base: str) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        print(json.dumps({"step": "card", "name": card.name, "url": card.url}), flush=True)
        for streaming in (False, True):
            client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(
                card
            )
            events = await run(client, text_message(f"sdk03 streaming={streaming}"))
            print(json.dumps({"step": f"send streaming={streaming}", "events": events}), flush=True)
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        [asked] = await run(client, text_message("ask"))
        task = Task.model_validate(asked["task"])
        reply = text_message("purple", task_id=task.id, context_id=task.context_id)
        events = await run(client, reply)
        print(json.dumps({"step": "resume", "asked": asked, "events": events}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
