"""Each page's Python blocks run in order as one program (see doc_pages.py), and assert what
they show. A page runs in a process of its own, in a fresh temporary working directory; a page
that needs a server or a model starts a local one itself and stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from doc_pages import REPO, pages, parse

PAGES = pages()
RUNNER = Path(__file__).with_name("doc_pages.py")

# The pages' scripted models check no key, but a client reads one before any request: these
# stand in for the user's (the pages say the variable must be set). No block reaches a provider.
PLACEHOLDER_KEYS = {
    "OPENAI_API_KEY": "sk-docs-placeholder",
    "ANTHROPIC_API_KEY": "sk-docs-placeholder",
}
UNSET = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENROUTER_API_KEY")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.timeout(240)
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_block_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in UNSET} | PLACEHOLDER_KEYS
    process = subprocess.Popen(
        [sys.executable, str(RUNNER), str(page)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: what it leaves behind is found below
    )
    try:
        out, _ = process.communicate(timeout=200)
    finally:
        left = _group_alive(process.pid)
        if left:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, out
    assert not left, f"{page.name} left processes running"
    assert "NOT RUN" not in out, out
    blocks = sum(1 for _ in parse(page).examples())
    assert f"RAN {blocks}\n" in out, out


def test_the_pages_include_every_docs_page_and_only_python_runs() -> None:
    names = {str(page.relative_to(REPO)) for page in PAGES}
    assert {"README.md", "MIGRATING.md", "docs/durable.md"} <= names
    sources = [str(example.parsed) for example in parse(REPO / "README.md").examples()]
    assert sources and not any("make demo" in source for source in sources)  # a sh block


def test_the_readme_never_points_at_the_contract_folder() -> None:
    assert "shared/spec" not in (REPO / "README.md").read_text(encoding="utf-8")
