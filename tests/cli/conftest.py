"""Fixtures of the command-line tests (helpers: `support.cli_runner`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
