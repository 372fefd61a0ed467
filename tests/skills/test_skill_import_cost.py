"""The skill module stays light: no heavy dependency at import, PyYAML only once it is needed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("httpx2", "pydantic", "jsonschema", "mcp", "starlette", "uvicorn")


def loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint([m for m in {(*HEAVY, 'yaml')!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip())  # a printed list of names


def test_import_and_frontmatterless_discovery_load_nothing_heavy(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "SKILL.md").write_text("no frontmatter\n")
    code = f"from toolnexus.skill import load_skills\nload_skills({str(tmp_path)!r})"
    assert loaded_after(code) == []


def test_yaml_loads_with_the_first_frontmatter(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "SKILL.md").write_text("---\nname: s\n---\n")
    code = f"from toolnexus.skill import load_skills\nload_skills({str(tmp_path)!r})"
    assert loaded_after(code) == ["yaml"]
