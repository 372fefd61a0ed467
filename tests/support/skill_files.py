"""Small builders for skill trees on disk."""

from __future__ import annotations

from pathlib import Path


def write_skill(
    root: Path,
    rel: str,
    name: str | None,
    description: str | None = None,
    body: str = "Body.\n",
) -> Path:
    """Create `<root>/<rel>/SKILL.md` with a simple frontmatter; return the file path."""
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    lines.append("---")
    path = folder / "SKILL.md"
    path.write_text("\n".join(lines) + "\n" + body, encoding="utf-8")
    return path
