"""The sibling-file sample shown by the `skill` tool: order, cap, exclusions, links."""

from __future__ import annotations

from pathlib import Path

from support.skill_files import write_skill
from toolnexus.skill import build_skill_source


def files_of(output: str) -> list[str]:
    return [
        line[len("<file>") : -len("</file>")]
        for line in output.splitlines()
        if line.startswith("<file>")
    ]


async def load(root: Path, name: str, sample_limit: int = 0) -> str:
    src = await build_skill_source(root, sample_limit=sample_limit)
    res = await src.tool.execute({"name": name})
    assert res.is_error is False, res.output
    return res.output


async def test_sorted_by_relative_path_in_code_point_order(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "s", "s", "d").parent
    rels = ["b.txt", "a.txt", "sub/z.txt", "sub/inner/y.txt", "Z.md", "aa/x.txt", "a-b.txt"]
    rels += ["a/x.txt"]
    for rel in rels:
        (skill / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill / rel).write_text(rel)
    out = await load(tmp_path, "s", 20)
    assert files_of(out) == [str(skill / rel) for rel in sorted(rels)]  # as published
    # the cap takes the first of that order
    assert files_of(await load(tmp_path, "s", 3)) == [str(skill / r) for r in sorted(rels)[:3]]


async def test_default_cap_is_ten_and_n_caps_at_n(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "s", "s", "d").parent
    for i in range(12):
        (skill / f"f{i:02}.txt").write_text("x")
    assert len(files_of(await load(tmp_path, "s"))) == 10
    assert files_of(await load(tmp_path, "s", 3)) == [str(skill / f"f{i:02}.txt") for i in range(3)]
    assert len(files_of(await load(tmp_path, "s", 50))) == 12


async def test_excludes_skill_md_node_modules_and_git(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "s", "s", "d").parent
    write_skill(skill, "nested", "nested", "n")  # a nested SKILL.md is not a resource
    (skill / "nested" / "tool.py").write_text("x")
    (skill / "node_modules" / "dep").mkdir(parents=True)
    (skill / "node_modules" / "dep" / "index.js").write_text("x")
    (skill / ".git").mkdir()
    (skill / ".git" / "HEAD").write_text("x")
    assert files_of(await load(tmp_path, "s")) == [str(skill / "nested" / "tool.py")]


async def test_empty_sample_keeps_the_block(tmp_path: Path) -> None:
    write_skill(tmp_path, "s", "s", "d")
    out = await load(tmp_path, "s")
    assert out.endswith(
        "Note: file list is sampled.\n\n<skill_files>\n\n</skill_files>\n</skill_content>"
    )


async def test_links_followed_and_cycles_guarded(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "common.md").write_text("x")
    skill = write_skill(tmp_path / "root", "s", "s", "d").parent
    (skill / "lib").symlink_to(shared, target_is_directory=True)
    (skill / "loop").symlink_to(skill, target_is_directory=True)
    (skill / "ref.md").symlink_to(shared / "common.md")
    out = await load(tmp_path / "root", "s")
    assert files_of(out) == [str(skill / "lib" / "common.md"), str(skill / "ref.md")]


async def test_sample_reflects_the_folder_at_call_time(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "s", "s", "d").parent
    src = await build_skill_source(tmp_path)
    assert files_of((await src.tool.execute({"name": "s"})).output) == []
    (skill / "new.txt").write_text("x")
    assert files_of((await src.tool.execute({"name": "s"})).output) == [str(skill / "new.txt")]


async def test_base_uri_is_percent_encoded(tmp_path: Path) -> None:
    root = tmp_path / "my skills"
    skill = write_skill(root, "s p", "spaced", "d").parent
    src = await build_skill_source(root)
    res = await src.tool.execute({"name": "spaced"})
    assert f"Base directory for this skill: {skill.as_uri()}\n" in res.output
    assert "%20" in skill.as_uri()
    assert res.metadata == {"name": "spaced", "dir": str(skill)}
