"""`toolnexus tools`: every resolved tool with its source, each MCP server's status and reason."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.cli_runner import (
    EXAMPLE_SKILLS,
    QUICK_TOOLS,
    broken_server,
    one_line_error,
    quick_server,
    toolnexus,
    write_config,
)
from toolnexus.builtin import BUILTIN_NAMES


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One working stdio server, one that cannot start, one disabled."""
    folder = tmp_path_factory.mktemp("tools")
    return write_config(
        folder,
        {
            "quick": quick_server(),
            "broken": broken_server(),
            "off": {"command": "whatever", "disabled": True},
        },
    )


@pytest.fixture(scope="module")
def as_text(config: Path) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess; the other tests run it in-process."""
    return toolnexus("tools", "--config", str(config), "--skills", str(EXAMPLE_SKILLS))


def _row(out: str, name: str) -> list[str]:
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"no row for {name!r} in:\n{out}")


def test_text_lists_each_tool_with_its_source(as_text: subprocess.CompletedProcess[str]) -> None:
    out = as_text.stdout
    assert _row(out, "quick_echo")[:2] == ["quick_echo", "mcp"]
    assert _row(out, "skill")[:2] == ["skill", "skill"]
    for name in ("bash", "read", "write", "todowrite"):
        assert _row(out, name)[1] == "builtin"
    assert "Skills (1): hello-world" in out


def test_text_shows_each_server_status_and_the_failure_reason(
    as_text: subprocess.CompletedProcess[str],
) -> None:
    out = as_text.stdout
    assert _row(out, "quick")[1:4] == ["connected", "stdio", "5"]
    broken = _row(out, "broken")
    assert broken[1] == "failed"
    assert "/nonexistent/toolnexus-test-server" in " ".join(broken)
    assert _row(out, "off")[1] == "disabled"
    # Everything is printed, then the failure is the one error line and exit code 2.
    line = one_line_error(as_text)
    assert line.startswith('toolnexus: error: MCP server "broken" failed: ')


def test_json_output(cli, config: Path) -> None:
    as_json = cli("tools", "--config", str(config), "--no-builtins", "--json")
    assert as_json.returncode == 2
    data = json.loads(as_json.stdout)
    tools = {t["name"]: t for t in data["tools"]}
    assert list(tools) == [f"quick_{name}" for name in QUICK_TOOLS]  # --no-builtins, no skills
    assert tools["quick_ping0"] == {
        "name": "quick_ping0",
        "source": "mcp",
        "description": "Answer pong.",
        "input_schema": {"type": "object", "properties": {}},
    }
    servers = data["mcp_servers"]
    assert servers["quick"] == {
        "status": "connected",
        "error": None,
        "transport": "stdio",
        "tool_count": len(QUICK_TOOLS),
    }
    assert servers["broken"]["status"] == "failed"
    assert "/nonexistent/toolnexus-test-server" in servers["broken"]["error"]
    assert servers["off"]["status"] == "disabled"


def test_without_config_lists_the_builtins(cli) -> None:
    done = cli("tools", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [t["name"] for t in data["tools"]] == list(BUILTIN_NAMES)
    assert data["mcp_servers"] == {}


def test_unreadable_config_is_one_line(cli, tmp_path: Path) -> None:
    line = one_line_error(cli("tools", "--config", str(tmp_path / "missing.json")))
    assert "cannot read config file" in line and "missing.json" in line

    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    line = one_line_error(cli("tools", "--config", str(bad)))
    assert f"config file {bad} is not valid JSON" in line


def test_missing_skills_folder_is_one_line(cli, tmp_path: Path) -> None:
    line = one_line_error(cli("tools", "--skills", str(tmp_path / "nope")))
    assert line == f"toolnexus: error: skills folder not found: {tmp_path / 'nope'}"
