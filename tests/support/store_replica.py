"""One `serve` replica on a shared A2A task store, printing its URL; for the replica tests.

Run as `python store_replica.py <postgres|redis> <url> <dir>`. Its model answers
`done:<prompt>`, except for prompts starting with `hold`, which it never finishes (a task to
kill or cancel mid-run: when the run is stopped, the model call sees it and leaves
`<dir>/<prompt>.stopped`), and prompts starting with `gate`, answered once `<dir>/<prompt>`
exists (a task that runs until the test lets it finish), and prompts starting with `ask`,
which call the `question` tool first (a task that waits for input; the reply `R` is answered
`done:R`).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any


async def main(kind: str, url: str, folder: str) -> None:
    from toolnexus.builtin import question_tool
    from toolnexus.client import create_in_process_client
    from toolnexus.serve import PostgresTaskStore, RedisTaskStore
    from toolnexus.toolkit import create_toolkit

    marks = Path(folder)

    async def model(request: dict[str, Any]) -> dict[str, Any]:
        last = request["messages"][-1]
        prompt = str(last["content"])
        if last["role"] == "user" and prompt.startswith("ask"):
            question = {"questions": [{"question": "Your name?"}]}
            return {"tool_calls": [{"name": "question", "arguments": question}]}
        if prompt.startswith("hold"):
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                (marks / f"{prompt}.stopped").touch()
                raise
        if prompt.startswith("gate"):
            while not (marks / prompt).exists():
                await asyncio.sleep(0.01)
        return {"content": f"done:{prompt}"}

    store: Any = (
        PostgresTaskStore(url, lease_ms=600)
        if kind == "postgres"
        else RedisTaskStore(url, lease_ms=600)
    )
    toolkit = await create_toolkit(builtins=False, extra_tools=[question_tool()])
    client = create_in_process_client(model="m", generate=model)
    handle = await toolkit.serve("127.0.0.1:0", client=client, a2a={"store": store})
    print(handle.url, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
