"""A process that runs (or resumes) one durable run whose tool is an MCP task, for the kill -9
test of `test_mcp_task_resume.py`.

Run as `python mcp_task_worker.py <system_db_url> <llm_base_url> <workflow_id> <mcp_url> <mode>`
with mode `start` or `resume` (only launch DBOS, which recovers the run, and wait for its
result). It loads the toolkit, then waits for a line on stdin before launching DBOS. The result
is printed as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any


async def main(argv: list[str]) -> None:
    from dbos import DBOS

    from toolnexus import create_toolkit
    from toolnexus.client import create_client
    from toolnexus.durable import DurableClient

    db_url, llm_url, workflow_id, mcp_url, mode = argv[:5]
    toolkit = await create_toolkit({"t": {"url": mcp_url}}, builtins=False)
    client = create_client(
        base_url=llm_url, style="openai", model="durable-model", api_key="sk-test", retries=0
    )
    config: Any = {"name": "toolnexus-durable-mcp-task", "system_database_url": db_url}
    config["log_level"] = "WARNING"
    durable = DurableClient(client, toolkit, dbos=config, name="mcp-task-worker")
    await asyncio.to_thread(sys.stdin.readline)
    DBOS.launch()
    try:
        if mode == "start":
            result = await durable.run("open the gate", workflow_id=workflow_id)
        else:
            result = await durable.result(workflow_id)
        summary = {
            "text": result.text,
            "tools": [(c["name"], c["output"]) for c in result.tool_calls],
        }
        sys.stdout.write(json.dumps(summary) + "\n")
        sys.stdout.flush()
    finally:
        await client.aclose()
        await toolkit.close()
    os._exit(0)  # everything is in the system database (see durable_worker.py)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
