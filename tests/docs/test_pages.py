"""Each page's Python blocks run in order as one program (see doc_pages.py), and assert what
they show. A page runs in a process of its own, in a fresh temporary working directory; a page
that needs a server or a model starts a local one itself and stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
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


def run_page(page: Path, cwd: Path) -> tuple[int, str, bool]:
    """Run `page` in a process of its own in `cwd`: its exit code, its output, and whether it
    left processes running (they are killed)."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET} | PLACEHOLDER_KEYS
    # Output goes to a file, not a pipe: a process left behind would hold a pipe open.
    with tempfile.TemporaryFile(mode="w+") as output:
        process = subprocess.Popen(
            [sys.executable, str(RUNNER), str(page)],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: what it leaves is found below
        )
        try:
            process.wait(timeout=200)
        finally:
            left = _group_alive(process.pid)
            if left:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        output.seek(0)
        out = output.read()
    return process.returncode, out, left


@pytest.mark.timeout(240)
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_block_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    blocks = sum(1 for _ in parse(page).examples())
    if blocks == 0:
        return  # nothing to run (yet): the page stays listed, so a first block is run
    code, out, left = run_page(page, tmp_path)
    assert code == 0, out
    assert not left, f"{page.name} left processes running"
    assert "NOT RUN" not in out, out
    assert f"RAN {blocks}\n" in out, out


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_a_page_runs_as_one_program_and_only_its_python_blocks(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "```sh\nexit 1\n```\n\n```python\nimport asyncio\nx = 1\n```\n\n"
        "```json\n{not json\n```\n\n```python\nawait asyncio.sleep(0)\nassert x == 1\n```\n",
    )
    code, out, left = run_page(page, tmp_path)
    assert (code, left) == (0, False) and "RAN 2\n" in out, out


def test_a_failed_assertion_a_skipped_block_or_a_left_process_fails_the_page(
    tmp_path: Path,
) -> None:
    failing = _page(tmp_path, "```python\nassert 1 == 2, 'shown wrong'\n```\n")
    code, out, _ = run_page(failing, tmp_path)
    assert code != 0 and "shown wrong" in out
    skipped = _page(tmp_path, '<!-- skip: next "needs a key" -->\n\n```python\npass\n```\n')
    code, out, _ = run_page(skipped, tmp_path)
    assert "NOT RUN page.md:3: needs a key" in out and "RAN 1\n" in out  # the directive ran
    leaking = _page(
        tmp_path, "```python\nimport subprocess\nsubprocess.Popen(['sleep', '60'])\n```\n"
    )
    code, out, left = run_page(leaking, tmp_path)
    assert code == 0 and left


def test_the_pages_include_every_docs_page_and_only_python_runs() -> None:
    names = {str(page.relative_to(REPO)) for page in PAGES}
    assert {"README.md", "MIGRATING.md", "docs/durable.md"} <= names
    sources = [str(example.parsed) for example in parse(REPO / "README.md").examples()]
    assert sources and not any("make demo" in source for source in sources)  # a sh block


def test_the_readme_never_points_at_the_contract_folder() -> None:
    assert "shared/spec" not in (REPO / "README.md").read_text(encoding="utf-8")
