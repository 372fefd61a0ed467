"""Content-part test fixtures: a fake LLM for the session and clients on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.llm_fixtures import llm, llm_server, make_client
from toolnexus import content

__all__ = ["llm", "llm_server", "make_client"]


@pytest.fixture(autouse=True)
def _no_process_cap() -> Iterator[None]:
    content.set_max_part_bytes(None)
    yield
    content.set_max_part_bytes(None)
