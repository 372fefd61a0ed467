"""Install hints install this project: the PyPI name `toolnexus` belongs to the published
package (another implementation), so no message or page tells a user to install by that name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolnexus import StoreConfigError

REPO = Path(__file__).resolve().parents[2]
# `install toolnexus` / `install 'toolnexus[x]'`, or the extra named by the PyPI name, unless it
# is the git form `toolnexus[x] @ git+…`.
BY_PYPI_NAME = re.compile(
    r"install\s+[\"'`]?toolnexus(?:\[[^\]]*\])?(?![\w\[-]|[\"'`]?\s*@)"
    r"|toolnexus\[[\w,]+\](?![\"'`]?\s*@)"
)
CHECKOUT_FORM = re.compile(r'pip install "/path/to/checkout\[(\w+)\]"')


def _pages() -> list[Path]:
    return [
        REPO / "README.md",
        REPO / "MIGRATING.md",
        *sorted((REPO / "docs").rglob("*.md")),
        *sorted((REPO / "src").rglob("*.py")),
    ]


def test_no_page_or_message_installs_by_the_pypi_name() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _pages()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if BY_PYPI_NAME.search(line)
    ]
    assert offenders == []


def test_the_pattern_catches_the_pypi_forms_and_allows_this_projects() -> None:
    for bad in (
        "pip install toolnexus",
        "pip install 'toolnexus[dbos]'",
        'pip install "toolnexus[otel]" opentelemetry-sdk',
        "is missing: install toolnexus[otel]",
        "needs `toolnexus[postgres]`",
    ):
        assert BY_PYPI_NAME.search(bad), bad
    for good in (
        'pip install "/path/to/checkout[dbos]"',
        'pip install "toolnexus[dbos] @ git+<this repository\'s git URL>"',
        'pip install "toolnexus @ git+<this repository\'s git URL>"',
        "pip install toolnexus-other",
    ):
        assert not BY_PYPI_NAME.search(good), good


def _without(
    module: str, code: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where importing `module` fails, as when the extra that
    brings it is not installed."""
    blocked = f"import sys; sys.modules[{module!r}] = None\n{code}"
    return subprocess.run(
        [sys.executable, "-c", blocked],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
    )


def test_durable_without_dbos_names_the_checkout_install() -> None:
    proc = _without("dbos", "import toolnexus.durable")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: toolnexus.durable needs DBOS: ")
    assert CHECKOUT_FORM.findall(last) == ["dbos"]
    assert "@ git+" in last


@pytest.mark.parametrize(
    ("module", "extra", "store"),
    [
        ("psycopg", "postgres", "PostgresConversationStore('postgresql://u:pw@127.0.0.1:9/db')"),
        ("redis", "redis", "RedisConversationStore('redis://127.0.0.1:9/0')"),
    ],
)
def test_a_store_without_its_driver_names_the_checkout_install(
    module: str, extra: str, store: str
) -> None:
    code = (
        "import asyncio\n"
        "from toolnexus.client.memory import PostgresConversationStore, RedisConversationStore\n"
        f"asyncio.run({store}.get('c'))\n"
    )
    proc = _without(module, code)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{StoreConfigError.__module__}.StoreConfigError: "), last
    assert CHECKOUT_FORM.findall(last) == [extra]


def test_the_cli_names_the_checkout_install_for_a_missing_store_driver(tmp_path: Path) -> None:
    argv = [
        "toolnexus", "serve", "--a2a", "--store", "postgresql://u:pw@127.0.0.1:9/db",
        "--model", "m", "--style", "openai", "--base-url", "http://127.0.0.1:9/v1", "--port", "0",
    ]  # fmt: skip
    code = f"import sys\nfrom toolnexus.cli import main\nsys.argv = {argv!r}\nsys.exit(main())\n"
    proc = _without("psycopg", code, cwd=tmp_path, env={"OPENAI_API_KEY": "sk-test"})
    assert proc.returncode == 2
    assert proc.stderr.startswith("toolnexus: error: PostgreSQL stores need psycopg 3")
    assert CHECKOUT_FORM.findall(proc.stderr) == ["postgres"]
    assert "u:pw" not in proc.stderr
