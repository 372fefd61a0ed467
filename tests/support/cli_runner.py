"""Running the real `toolnexus` command in a subprocess, and what the CLI tests check with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from toolnexus import _demo

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
BASIC_SERVER = TESTS / "support" / "mcp_servers" / "basic_server.py"
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


def processes_running(path: str | Path) -> set[int]:
    """Pids of live processes whose command line mentions `path` (a server script)."""
    needle = os.fsencode(str(path))
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if needle in cmdline:
            found.add(int(entry))
    return found


def write_config(folder: Path, servers: dict[str, Any], name: str = "mcp.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def demo_server() -> dict[str, Any]:
    """The package's own demo MCP server (tools `add`, `shout`) as a config entry."""
    return dict(_demo.mcp_config()["mcpServers"][_demo.SERVER_NAME])


def basic_server() -> dict[str, Any]:
    """The MCP engineers' test server when present, else the demo server."""
    if BASIC_SERVER.is_file():
        return {"command": sys.executable, "args": [str(BASIC_SERVER)]}
    return demo_server()


def broken_server() -> dict[str, Any]:
    return {"command": "/nonexistent/toolnexus-test-server"}


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """Assert the command failed with exit code 2 and one stderr line; return that line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("toolnexus: error: "), lines[0]
    return lines[0]
