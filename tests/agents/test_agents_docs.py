"""docs/agents.md: every Python block runs as written, in order, offline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def test_every_block_of_the_agents_page_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 6
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/agents.md block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "done | shipped: patched (bug at line 42 data(bug))" in out
    assert "boss got: asker-done: secret-token" in out
    assert "I recall: dark roast" in out
    assert "done 2 DONE" in out
