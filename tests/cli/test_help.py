"""Every subcommand has `--help`; a bad invocation is a usage error (exit 2)."""

from __future__ import annotations

import pytest

from support.cli_runner import toolnexus
from toolnexus import __version__


@pytest.mark.parametrize("command", [[], ["demo"], ["tools"], ["run"], ["serve"]])
def test_help(command: list[str]) -> None:
    proc = toolnexus(*command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: toolnexus {' '.join(command)}".rstrip())


def test_version() -> None:
    proc = toolnexus("--version")
    assert (proc.returncode, proc.stdout.strip()) == (0, f"toolnexus {__version__}")


def test_no_command_is_a_usage_error() -> None:
    proc = toolnexus()
    assert proc.returncode == 2
    assert "required: COMMAND" in proc.stderr


def test_run_without_the_model_flags_is_a_usage_error() -> None:
    proc = toolnexus("run", "--once", "hi")
    assert proc.returncode == 2
    assert "--base-url" in proc.stderr
