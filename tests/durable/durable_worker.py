"""A process that runs (or resumes) one durable run, for the kill -9 tests.

Run as `python durable_worker.py <system_db_url> <llm_base_url> <workflow_id> <effects_dir> <mode>`
with mode `start` (start the run) or `resume` (only launch DBOS, which recovers the run, and wait
for its result). It imports everything, then waits for a line on stdin before launching DBOS: a
test starts the next process while the previous one still runs and lets it go after the kill.
`--block-tool NAME` makes that tool hang after recording its side effect (so the test can kill
the process inside the tool step). With `--stream`, `start` starts the run streaming (its
events are recorded for readers) and reads its stream to the end. The result is printed as one
JSON line.

Tools (their side effects are lines appended to files in `effects_dir`):
- `record(n)` appends `<n> <step key>` to `record.log`;
- `approve(item)` suspends for an approval (`ask <item>` in `approve.log`) and, once answered,
  appends `done <item> <answer data>`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any


async def main(argv: list[str]) -> None:
    from dbos import DBOS

    from toolnexus import Toolkit, ToolResult, define_tool, pending
    from toolnexus.client import create_client
    from toolnexus.durable import DurableClient, step_key
    from toolnexus.types import ToolContext

    block = argv[argv.index("--block-tool") + 1] if "--block-tool" in argv else None
    db_url, llm_url, workflow_id, effects, mode = argv[:5]
    out = Path(effects)

    def append(name: str, line: str) -> None:
        with open(out / name, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    async def hang_if(name: str) -> None:
        if block == name:
            await asyncio.Event().wait()  # killed in here

    async def record(n: int, ctx: ToolContext) -> str:
        """Record n."""
        append("record.log", f"{n} {step_key()}")
        if ctx.on_progress is not None:  # a streamed run leaves progress out of its record
            await ctx.on_progress({"progress": 1, "total": 2, "message": "recorded"})
        await hang_if("record")
        return f"recorded {n}"

    async def approve(item: str, ctx: ToolContext) -> ToolResult | str:
        """Approve item."""
        if ctx.answer is None:
            append("approve.log", f"ask {item}")
            return pending(kind="approval", prompt=f"approve {item}?", id=f"appr-{item}")
        append("approve.log", f"done {item} {json.dumps(ctx.answer.data)}")
        return f"approved {item}"

    toolkit = Toolkit(extra_tools=[define_tool(record), define_tool(approve)])
    client = create_client(
        base_url=llm_url, style="openai", model="durable-model", api_key="sk-test", retries=0
    )
    config: Any = {"name": "toolnexus-durable-test", "system_database_url": db_url}
    config["log_level"] = "WARNING"
    durable = DurableClient(client, toolkit, dbos=config, name="worker")
    await asyncio.to_thread(sys.stdin.readline)
    DBOS.launch()
    try:
        if mode == "start" and "--stream" in argv:
            async for event in durable.stream("do the work", workflow_id=workflow_id):
                if event["type"] == "done":
                    result = event["result"]
        elif mode == "start":
            result = await durable.run("do the work", workflow_id=workflow_id)
        else:
            result = await durable.result(workflow_id)
        summary = {
            "text": result.text,
            "status": result.status,
            "tools": [(c["name"], c["output"]) for c in result.tool_calls],
        }
        sys.stdout.write(json.dumps(summary) + "\n")
        sys.stdout.flush()
    finally:
        await client.aclose()
    # Everything is in the system database: leave without DBOS.destroy(), which spends about a
    # second joining its polling threads (the tests start several of these processes).
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
