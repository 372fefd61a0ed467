"""Asks on one conversation id of a shared store, printing `ack <prompt>` after each turn.

Run as `python store_asker.py <kind> <target> <id> <tag> <count> <lease_ms> [hold|stall]` where
kind is sqlite (target: a path), postgres or redis (target: a URL). It runs `count` concurrent
asks with prompts `<tag>-0`…, each answered `re:<prompt>` by an in-process model. With `hold`,
it then asks `<tag>-hold`, prints `holding` while that run holds the id, and never finishes (the
kill -9 tests). With `stall`, it asks `<tag>-hold` the same way, but that run is answered once a
line arrives on stdin (the tests freeze the process meanwhile). Errors are printed as
`err <prompt> <message>`.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any


def make_store(kind: str, target: str, lease_ms: float) -> Any:
    from toolnexus.client.memory import (
        PostgresConversationStore,
        RedisConversationStore,
        SQLiteConversationStore,
    )

    if kind == "sqlite":
        return SQLiteConversationStore(target, lease_ms=lease_ms)
    if kind == "postgres":
        return PostgresConversationStore(target, lease_ms=lease_ms, max_size=4)
    if kind == "redis":
        return RedisConversationStore(target, lease_ms=lease_ms)
    raise SystemExit(f"unknown store kind {kind}")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(argv: list[str]) -> None:
    from toolnexus.client import create_in_process_client

    kind, target, conv, tag, count, lease_ms = argv[:6]
    hold = len(argv) > 6 and argv[6] in ("hold", "stall")
    stall = len(argv) > 6 and argv[6] == "stall"
    store = make_store(kind, target, float(lease_ms))

    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        prompt = request["messages"][-1]["content"]
        if prompt == f"{tag}-hold":
            say("holding")
            if not stall:
                await asyncio.sleep(3600)
            await asyncio.to_thread(sys.stdin.readline)
        await asyncio.sleep(0.001)
        return {"content": f"re:{prompt}"}

    client = create_in_process_client(model="m", generate=generate, store=store)

    async def one(prompt: str) -> None:
        try:
            await client.ask(prompt, id=conv)
        except Exception as exc:
            say(f"err {prompt} {type(exc).__name__}: {exc}")
        else:
            say(f"ack {prompt}")

    await asyncio.gather(*(one(f"{tag}-{i}") for i in range(int(count))))
    if hold:
        await one(f"{tag}-hold")
    say("done")
    await client.aclose()
    await store.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
