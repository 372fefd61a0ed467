"""`tools`, `run` and `serve` agree on their defaults: `./mcp.json` when present, the built-ins
on unless `--no-builtins`, and `--help` says so. Each runs as the real command in a folder
holding an mcp.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from support.cli_runner import (
    QUICK_TOOLS,
    clean_env,
    processes_tagged,
    quick_server,
    tagged_env,
    toolnexus,
    write_config,
)
from support.fake_llm import FakeLLM, text
from toolnexus.builtin import BUILTIN_NAMES

QUICK = [f"quick_{name}" for name in QUICK_TOOLS]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with an mcp.json (one quick stdio server) and nothing else."""
    write_config(tmp_path, {"quick": quick_server()})
    return tmp_path


def test_tools_reads_the_mcp_json_of_the_folder(project: Path) -> None:
    done = toolnexus("tools", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)["tools"]] == [*QUICK, *BUILTIN_NAMES]
    bare = toolnexus("tools", "--json", "--no-builtins", cwd=project)
    assert [t["name"] for t in json.loads(bare.stdout)["tools"]] == QUICK


def test_run_reads_the_mcp_json_of_the_folder(project: Path, fake_llm: FakeLLM) -> None:
    fake_llm.push(text("hello"))
    done = toolnexus(
        "run", "--base-url", fake_llm.url + "/v1", "--style", "openai", "--model", "m",
        "--once", "hi", env=clean_env(OPENAI_API_KEY="sk-test"), cwd=project,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "hello\n"), done.stderr
    declared = [t["function"]["name"] for t in fake_llm.requests[0].body["tools"]]
    assert declared == [*QUICK, *BUILTIN_NAMES]


async def test_serve_reads_the_mcp_json_of_the_folder_and_serves_the_builtins(
    project: Path,
) -> None:
    env, tag = tagged_env()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolnexus", "serve", "--stdio"], env=env,
        cwd=str(project),
    )  # fmt: skip
    async with Client(params) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == [*QUICK, *BUILTIN_NAMES]
    assert processes_tagged(tag) == set()


def test_an_explicit_config_wins_over_the_folders(project: Path, tmp_path_factory) -> None:
    other = write_config(tmp_path_factory.mktemp("other"), {})
    done = toolnexus("tools", "--json", "--config", str(other), "--no-builtins", cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tools"] == []


@pytest.mark.parametrize("command", ["tools", "run", "serve"])
def test_help_states_the_defaults(cli, command: str) -> None:
    done = cli(command, "--help")
    assert done.returncode == 0
    flat = " ".join(done.stdout.split())
    assert "(default: ./mcp.json when it exists)" in flat
    assert "--builtins, --no-builtins" in flat
    assert "default: on" in flat
