"""Saves transcripts into a `SQLiteConversationStore` forever, printing `saved <n>` after each.

Run as `python sqlite_saver.py <db path>`; the crash test kills it with SIGKILL mid-loop.
Save `n` writes `transcript(n)` under id `conv-<n % IDS>`, so ids are overwritten again and again.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

IDS = 17


def transcript(n: int) -> list[dict[str, Any]]:
    """A transcript whose every message names `n`, so a torn write would show."""
    turns = 1 + n % 5
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"question {turn} of save {n}"})
        messages.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {turn} / {n}"}]}
        )
    messages.append({"role": "user", "content": "x" * (n % 4000), "save": n})
    return messages


async def main(path: str) -> None:
    from toolnexus.client.memory import SQLiteConversationStore

    store = SQLiteConversationStore(path)
    n = 0
    while True:
        await store.save(f"conv-{n % IDS}", transcript(n))
        sys.stdout.write(f"saved {n}\n")
        sys.stdout.flush()
        n += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
