"""Directory discovery: recursion, order, skipped folders, symlinks, cycles, missing roots."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import pytest

from support.skill_files import write_skill
from toolnexus import create_toolkit
from toolnexus.skill import SkillSkip, list_skills, load_skills


def test_finds_nested_skills_shallow_first_then_in_name_order(tmp_path: Path) -> None:
    write_skill(tmp_path, "b", "bee", "B")
    write_skill(tmp_path, "a/deep/er", "deep", "D")
    write_skill(tmp_path, "a", "ay", "A")
    write_skill(tmp_path, "c/SKILL.md.d", "odd", None)  # a folder named like a file is walked
    inv = list_skills(tmp_path)
    assert [s.name for s in inv.skills] == ["ay", "bee", "odd", "deep"]  # as published
    assert inv.skills[0].location == str(tmp_path / "a" / "SKILL.md")
    assert inv.skills[0].directory == str(tmp_path / "a")
    assert inv.skipped == []


def test_of_two_skills_with_one_name_the_shallower_wins(tmp_path: Path) -> None:
    write_skill(tmp_path, "a/deep/dup", "dup", "deep")
    write_skill(tmp_path, "z/dup", "dup", "shallow")
    write_skill(tmp_path, "c/twin", "twin", "from c")
    write_skill(tmp_path, "b/twin", "twin", "from b")  # same depth: code point order
    write_skill(tmp_path, "B/twin", "twin", "from B")
    skills = {s.name: s for s in load_skills(tmp_path).skills.values()}
    assert skills["dup"].description == "shallow"
    assert skills["twin"].description == "from B"


def test_node_modules_and_git_are_skipped(tmp_path: Path) -> None:
    write_skill(tmp_path, "node_modules/pkg", "from-node-modules")
    write_skill(tmp_path, ".git/hooks", "from-git")
    write_skill(tmp_path, "x/node_modules", "nested-node-modules")
    write_skill(tmp_path, "real", "real")
    assert [s.name for s in list_skills(tmp_path).skills] == ["real"]


def test_only_files_named_exactly_skill_md(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "skill.md").write_text("---\nname: lower\n---\n")
    (tmp_path / "a" / "SKILL.markdown").write_text("---\nname: other\n---\n")
    assert list_skills(tmp_path).skills == []


def test_symlinked_directory_and_file_are_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_skill(outside, "linked-dir", "via-dir", "through a directory link")
    write_skill(outside, "lone", "via-file", "through a file link")
    root = tmp_path / "root"
    root.mkdir()
    (root / "dirlink").symlink_to(outside / "linked-dir", target_is_directory=True)
    (root / "filelink").mkdir()
    (root / "filelink" / "SKILL.md").symlink_to(outside / "lone" / "SKILL.md")
    inv = list_skills(root)
    by_name = {s.name: s for s in inv.skills}
    assert set(by_name) == {"via-dir", "via-file"}
    # The location is the path as reached by the walk: links are not resolved.
    assert by_name["via-dir"].location == str(root / "dirlink" / "SKILL.md")
    assert by_name["via-file"].location == str(root / "filelink" / "SKILL.md")


def test_symlink_cycles_terminate_and_each_folder_is_read_once(tmp_path: Path) -> None:
    write_skill(tmp_path, "a", "ay")
    write_skill(tmp_path, "a/b", "bee")
    (tmp_path / "a" / "b" / "up").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "a" / "self").symlink_to(".", target_is_directory=True)
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)
    inv = list_skills(tmp_path)
    assert [s.name for s in inv.skills] == ["ay", "bee"]
    assert inv.skipped == []


def test_root_given_through_a_link_keeps_the_link_path(tmp_path: Path) -> None:
    write_skill(tmp_path / "real", "one", "s")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    (skill,) = list_skills(tmp_path / "alias").skills
    assert skill.location == str(tmp_path / "alias" / "one" / "SKILL.md")


def test_broken_links_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere", target_is_directory=True)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "SKILL.md").symlink_to(tmp_path / "missing.md")
    assert list_skills(tmp_path).skills == []


def test_missing_root_warns_and_yields_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path / "ok", "f", "fine", "yes")
    missing = tmp_path / "nope"
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        src = load_skills([missing, tmp_path / "ok", a_file])
    assert list(src.skills) == ["fine"]
    assert f"[toolnexus] skills dir not found: {missing}" in caplog.messages
    assert f"[toolnexus] skills dir not found: {a_file}" in caplog.messages


def test_relative_root_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path / "skills", "rel", "relative")
    monkeypatch.chdir(tmp_path)
    (skill,) = list_skills("skills").skills
    assert skill.location == str(tmp_path / "skills" / "rel" / "SKILL.md")
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        list_skills("missing")
    assert caplog.messages == [f"[toolnexus] skills dir not found: {tmp_path / 'missing'}"]


def test_several_roots_in_order_and_first_name_wins(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = write_skill(tmp_path / "one", "s", "same", "first")
    second = write_skill(tmp_path / "two", "s", "same", "second")
    write_skill(tmp_path / "two", "t", "other", "o")
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        inv = list_skills([tmp_path / "one", str(tmp_path / "two")])
    assert [(s.name, s.description) for s in inv.skills] == [("same", "first"), ("other", "o")]
    assert inv.skills[0].location == str(first)
    assert inv.skipped == [SkillSkip(str(second), "duplicate-name")]
    assert caplog.messages == [
        f'[toolnexus] duplicate skill name "same" ({second}) — keeping first'
    ]


async def test_toolkit_discovery_runs_off_the_event_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The "skills dir not found" warning is logged by the code that walks the folders.
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        async with await create_toolkit(skills_dir=str(tmp_path / "absent"), builtins=False):
            pass
    (record,) = [r for r in caplog.records if "skills dir not found" in r.getMessage()]
    assert record.thread != threading.get_ident()


def test_unlistable_directory_never_breaks_discovery(tmp_path: Path) -> None:
    write_skill(tmp_path, "ok", "ok")
    locked = tmp_path / "locked"
    write_skill(locked, "inner", "inner")
    os.chmod(locked, 0)
    try:
        names = [s.name for s in list_skills(tmp_path).skills]
    finally:
        os.chmod(locked, 0o755)
    # Tests may run as root, who can list it anyway: what matters is that nothing raises.
    assert "ok" in names
