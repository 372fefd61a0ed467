"""Fixtures of the command-line tests (helpers: `support.cli_runner`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.cli_runner import KEY_VARS, Outcome, quick_server, run_main, write_config
from support.fake_llm import FakeLLM


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: builds and installs the wheel (-m 'not slow' skips)")


@pytest.fixture(scope="session")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def fake_llm(llm: FakeLLM) -> Iterator[FakeLLM]:
    """The session's fake LLM server, with nothing queued and nothing recorded."""
    llm.reset()
    yield llm
    llm.reset()


@pytest.fixture(scope="session")
def quick_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An mcp.json with one stdio server, "quick", that starts in milliseconds
    (`support.cli_runner.quick_server`)."""
    return write_config(tmp_path_factory.mktemp("config"), {"quick": quick_server()})


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Outcome]:
    """`cli("serve", "--mcp", ...)` runs the command in this process, without API keys in the
    environment (as `support.cli_runner.clean_env` does for a subprocess)."""
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    return lambda *args: run_main(capsys, *args)
