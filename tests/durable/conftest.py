"""Durable-run fixtures: the session's fake LLM (its requests show what a replay re-sent), and
the DBOS system databases the tests run on: a SQLite file, and PostgreSQL on the session's real
server (tests/conftest.py; skipped, with the install command, when its binaries are missing)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import count

import pytest

from support.db_servers import PostgresServer
from support.llm_fixtures import llm, llm_server

__all__ = ["llm", "llm_server", "make_system_db", "system_db_url"]

_databases = count()


def fresh_system_db(
    kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A fresh, empty DBOS system database of `kind` (`sqlite` or `postgres`), as its URL."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('dbos') / 'system.sqlite'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.database(f"dbos_{next(_databases)}")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def system_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh, empty DBOS system database for the module: a SQLite file, then PostgreSQL."""
    return fresh_system_db(request.param, request, tmp_path_factory)


@pytest.fixture
def make_system_db(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], str]:
    """`make_system_db(kind)`: a fresh, empty DBOS system database of that kind, as its URL."""
    return lambda kind: fresh_system_db(kind, request, tmp_path_factory)
