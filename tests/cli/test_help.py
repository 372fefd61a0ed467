"""Every subcommand has `--help`; a bad invocation is a usage error (exit 2)."""

from __future__ import annotations

import pytest

from toolnexus import __version__


@pytest.mark.parametrize("command", [[], ["demo"], ["tools"], ["run"], ["serve"]])
def test_help(cli, command: list[str]) -> None:
    done = cli(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: toolnexus {' '.join(command)}".rstrip())


def test_version(cli) -> None:
    done = cli("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"toolnexus {__version__}")


def test_no_command_is_a_usage_error(cli) -> None:
    done = cli()
    assert done.returncode == 2
    assert "required: COMMAND" in done.stderr


def test_run_without_the_model_flags_is_a_usage_error(cli) -> None:
    done = cli("run", "--once", "hi")
    assert done.returncode == 2
    assert "--base-url" in done.stderr
