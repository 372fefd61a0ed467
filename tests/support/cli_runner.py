"""Running the real `toolnexus` command (in a subprocess or in-process), and what the CLI tests
check with it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
BASIC_SERVER = TESTS / "support" / "mcp_servers" / "basic_server.py"
QUICK_SERVER = TESTS / "support" / "mcp_servers" / "slow_start_stdio.py"
EXAMPLE_SKILLS = REPO / "examples" / "skills"
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "TOOLNEXUS_AUTH_TOKEN")
HANG_GUARD = 120  # seconds: only a guard against a hung command, never an assertion on speed


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any API key or auth token (so a developer's keys never leak in)."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def toolnexus(
    *args: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m toolnexus ARGS` to completion."""
    return subprocess.run(
        [sys.executable, "-m", "toolnexus", *args],
        env=env if env is not None else clean_env(),
        input=input if input is not None else "",
        capture_output=True,
        text=True,
        cwd=cwd if cwd is not None else REPO,
        timeout=HANG_GUARD,
    )


class Outcome:
    """What an in-process run of the command left: its exit code and what it printed."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> Outcome:
    """Run `toolnexus.cli.main(ARGS)` in this process: for paths where a subprocess proves
    nothing more (bad flags, unreadable files, errors before serving). `SystemExit` from
    argparse (`--help`, usage errors) becomes the exit code; the `toolnexus` logger is put back
    as it was, so the command's stderr handler never outlives the call."""
    from toolnexus.cli import main

    logger = logging.getLogger("toolnexus")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


TAG_VAR = "TOOLNEXUS_TEST_TAG"


def tagged_env(**extra: str) -> tuple[dict[str, str], str]:
    """`clean_env(...)` plus a fresh tag in `TOOLNEXUS_TEST_TAG`, which every process the command
    starts (its MCP servers) inherits: `processes_tagged(tag)` finds the ones still alive."""
    tag = uuid.uuid4().hex
    return clean_env(**extra, **{TAG_VAR: tag}), tag


def processes_tagged(tag: str) -> set[int]:
    """Pids of live processes whose environment carries `TOOLNEXUS_TEST_TAG=<tag>`.

    A tag, not the server script's path: other test runs on the machine may run the same script.
    """
    needle = f"{TAG_VAR}={tag}".encode()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.add(int(entry))
    return found


def write_config(folder: Path, servers: dict[str, Any], name: str = "mcp.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def basic_server() -> dict[str, Any]:
    """The MCP tests' server (tools `basic_echo`, `basic_ask` with a form elicitation, ...)."""
    # pinned to the handshake era: `ask` is a push elicitation, which 2026-07-28 does not have
    return {"command": sys.executable, "args": [str(BASIC_SERVER)], "protocol": "legacy"}


def quick_server() -> dict[str, Any]:
    """A standard-library MCP server that starts in milliseconds (no SDK import): tools `ping0`
    (answers `pong`), `echo {"text"}`, `pid`, `spawn_child`, `exit_later`."""
    return {"command": sys.executable, "args": [str(QUICK_SERVER), "--life-tools"]}


QUICK_TOOLS = ["ping0", "echo", "pid", "spawn_child", "exit_later"]


def broken_server() -> dict[str, Any]:
    return {"command": "/nonexistent/toolnexus-test-server"}


_STILL_STARTING = re.compile(r'\[toolnexus\] MCP server ".*" is still starting after ')


def one_line_error(proc: subprocess.CompletedProcess[str] | Outcome) -> str:
    """Assert the command failed with exit code 2 and one stderr line; return that line.

    `run`'s line saying which tools the model has comes before the run and is not counted, nor
    is the progress line of an MCP server still starting after 2 s (a loaded machine)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [
        line
        for line in proc.stderr.splitlines()
        if not line.startswith("tools: ") and not _STILL_STARTING.match(line)
    ]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("toolnexus: error: "), lines[0]
    return lines[0]


async def start_serve(
    *args: str, env: dict[str, str]
) -> tuple[asyncio.subprocess.Process, dict[str, str]]:
    """Start `toolnexus serve ARGS`; return it and the URLs it printed (`mcp`, `a2a`)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "toolnexus", "serve", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=str(REPO),
    )  # fmt: skip
    assert proc.stderr is not None
    seen: list[str] = []
    urls: dict[str, str] = {}
    while True:
        line = (await asyncio.wait_for(proc.stderr.readline(), HANG_GUARD)).decode()
        seen.append(line)
        if not line:
            raise AssertionError("serve exited before listening:\n" + "".join(seen))
        if found := re.match(r"toolnexus: MCP server at (http://\S+/mcp) \((\d+) tools?\)$", line):
            urls["mcp"], urls["tool count"] = found.groups()
        if found := re.match(r"toolnexus: A2A agent at (http://\S+/) ", line):
            urls["a2a"] = found.group(1)
        if line.startswith("toolnexus: press Ctrl-C to stop"):
            return proc, urls


async def stop_serve(proc: asyncio.subprocess.Process, sig: int) -> tuple[bytes, bytes]:
    """Send `sig` to a `start_serve` process; its remaining stdout and stderr once it exits."""
    proc.send_signal(sig)
    return await asyncio.wait_for(proc.communicate(), HANG_GUARD)
