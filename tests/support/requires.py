"""Tests that need something outside Python (a server binary, an npm package, Node) call
`require` instead of `pytest.skip`: a contributor's machine without it skips with one line saying
how to get it, and CI (`.ci/run` sets `TOOLNEXUS_REQUIRE_ALL=1`) fails instead, so CI always runs
every test."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["REQUIRE_ALL", "missing"]

REQUIRE_ALL = os.environ.get("TOOLNEXUS_REQUIRE_ALL") == "1"


def missing(what: str, how: str) -> NoReturn:
    """Skip the test (fail it under `TOOLNEXUS_REQUIRE_ALL=1`): `what` is missing, `how` gets it."""
    message = f"{what} missing ({how})"
    if REQUIRE_ALL:
        pytest.fail(f"{message}; TOOLNEXUS_REQUIRE_ALL=1 makes this a failure", pytrace=False)
    pytest.skip(message)
