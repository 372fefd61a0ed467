"""Data skills, the provider, dedupe across sources, the filter and `list_skills`."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from support.skill_files import write_skill
from toolnexus import SkillDef, create_toolkit
from toolnexus.skill import SkillSkip, build_skill_source, list_skills, load_skills


def test_data_skill_with_resources_and_base() -> None:
    src = load_skills(
        skills=[
            SkillDef(
                name="deploy",
                content="\n  Run the deploy.\n",
                description="Ship it",
                resources=["scripts/deploy.sh", "ref/notes.md"],
                base="app://skills/deploy",
            )
        ]
    )
    res = asyncio.run(src.tool.execute({"name": "deploy"}))
    assert res.is_error is False
    assert res.metadata == {"name": "deploy", "dir": "app://skills/deploy"}
    assert res.output == (
        '<skill_content name="deploy">\n'
        "# Skill: deploy\n"
        "\n"
        "Run the deploy.\n"
        "\n"
        "Base directory for this skill: app://skills/deploy\n"
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base "
        "directory.\n"
        "Note: file list is sampled.\n"
        "\n"
        "<skill_files>\n"
        "<file>scripts/deploy.sh</file>\n"
        "<file>ref/notes.md</file>\n"
        "</skill_files>\n"
        "</skill_content>"
    )
    assert src.skills["deploy"].location == "app://skills/deploy"


async def test_data_skill_defaults_without_resources() -> None:
    src = await build_skill_source(None, skills=[SkillDef("notes", "Take notes.")])
    res = await src.tool.execute({"name": "notes"})
    assert res.metadata == {"name": "notes", "dir": "skill://notes/"}
    assert res.output == (
        '<skill_content name="notes">\n# Skill: notes\n\nTake notes.\n\n'
        "Base directory for this skill: skill://notes/\n"
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base "
        "directory.\n</skill_content>"
    )
    # No description ⇒ loadable but not described.
    assert src.prompt() == "No skills are currently available."


async def test_data_skill_resources_cut_to_the_cap_or_hidden() -> None:
    defs = [SkillDef("r", "x", resources=[f"f{i}" for i in range(15)])]
    default = await build_skill_source(None, skills=defs)
    out = (await default.tool.execute({"name": "r"})).output
    assert out.count("<file>") == 10 and "<file>f9</file>" in out
    three = await build_skill_source(None, skills=defs, sample_limit=3)
    out = (await three.tool.execute({"name": "r"})).output
    assert out.count("<file>") == 3
    hidden = await build_skill_source(None, skills=defs, sample_limit=-1)
    out = (await hidden.tool.execute({"name": "r"})).output
    assert "<skill_files>" not in out and "Note: file list is sampled." not in out


def test_data_skill_without_name_is_skipped() -> None:
    inv = list_skills(skills=[SkillDef("", "x"), SkillDef("", "y", base="app://b")])
    assert inv.skills == []
    assert inv.skipped == [
        SkillSkip("skill://", "missing-name"),
        SkillSkip("app://b", "missing-name"),
    ]


def test_directory_skill_beats_data_skill(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write_skill(tmp_path, "dup", "dup", "from disk")
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        inv = list_skills(tmp_path, skills=[SkillDef("dup", "data", "from data", base="x://d")])
    assert [(s.name, s.description, s.location) for s in inv.skills] == [
        ("dup", "from disk", str(path))
    ]
    assert inv.skipped == [SkillSkip("x://d", "duplicate-name")]
    assert caplog.messages == ['[toolnexus] duplicate skill name "dup" (x://d) — keeping first']


def test_bad_host_input_is_a_precise_error() -> None:
    with pytest.raises(TypeError, match="SkillDef"):
        load_skills(skills=["not a skill"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="sample_limit must be -1"):
        load_skills(sample_limit=-2)
    with pytest.raises(TypeError, match="path or a list of paths"):
        load_skills(42)  # type: ignore[arg-type]


async def test_provider_sync_and_async_resolved_once(tmp_path: Path) -> None:
    calls: list[str] = []

    def sync_provider() -> list[SkillDef]:
        calls.append("sync")
        return [SkillDef("from-sync", "s", "sync skill")]

    async def async_provider() -> list[SkillDef]:
        calls.append("async")
        await asyncio.sleep(0)
        return [SkillDef("from-async", "a", "async skill")]

    write_skill(tmp_path, "d", "from-dir", "dir skill")
    async with await create_toolkit(
        skills_dir=str(tmp_path),
        skills=[SkillDef("from-data", "d", "data skill")],
        skill_provider=sync_provider,
        builtins=False,
    ) as tk:
        assert list(tk.skill_source.skills) == ["from-dir", "from-data", "from-sync"]  # type: ignore[union-attr]
        assert (await tk.execute("skill", {"name": "from-sync"})).is_error is False
        await tk.execute("skill", {"name": "from-sync"})
    async with await create_toolkit(skill_provider=async_provider, builtins=False) as tk:
        assert "- **from-async**: async skill" in tk.skills_prompt()
    assert calls == ["sync", "async"]


@pytest.mark.parametrize("is_async", [False, True])
async def test_raising_provider_is_isolated(
    is_async: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def boom() -> list[SkillDef]:
        raise RuntimeError("catalog service down")

    async def aboom() -> list[SkillDef]:
        raise RuntimeError("catalog service down")

    write_skill(tmp_path, "d", "still-here", "yes")
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        async with await create_toolkit(
            skills_dir=str(tmp_path),
            skills=[SkillDef("data-too", "x", "also")],
            skill_provider=aboom if is_async else boom,
            builtins=False,
        ) as tk:
            assert "still-here" in tk.skills_prompt() and "data-too" in tk.skills_prompt()
    assert "[toolnexus] skill provider failed: catalog service down" in caplog.messages


async def test_provider_returning_junk_is_isolated(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        src = await build_skill_source(None, provider=lambda: [1, 2])
    assert src.skills == {}
    (message,) = caplog.messages
    assert message.startswith("[toolnexus] skill provider failed: a skill must be a SkillDef")


async def test_provider_may_return_mappings_and_none() -> None:
    src = await build_skill_source(
        None, provider=lambda: [{"name": "m", "content": "c", "description": "d"}]
    )
    assert src.prompt().endswith("- **m**: d")
    empty = await build_skill_source(None, provider=lambda: None)
    assert empty.skills == {} and empty.prompt() == "No skills are currently available."


@pytest.fixture
def three_skills(tmp_path: Path) -> Path:
    for name in ("alpha", "beta", "gamma"):
        write_skill(tmp_path, name, name, f"the {name} skill")
    return tmp_path


async def test_filter_allowlist(three_skills: Path) -> None:
    async with await create_toolkit(
        skills_dir=str(three_skills), skills_filter={"beta": True, "gamma": False}, builtins=False
    ) as tk:
        assert tk.skills_prompt().splitlines()[4:] == ["- **beta**: the beta skill"]
        res = await tk.execute("skill", {"name": "alpha"})
        assert res.output == 'Skill "alpha" not found. Available skills: beta'


async def test_filter_droplist_and_disable_skills(three_skills: Path) -> None:
    async with await create_toolkit(
        skills_dir=str(three_skills), skills_filter={"alpha": False}, builtins=False
    ) as tk:
        assert tk.skills_prompt().splitlines()[4:] == [
            "- **beta**: the beta skill",
            "- **gamma**: the gamma skill",
        ]
    async with await create_toolkit(
        skills_dir=str(three_skills), disable_skills=["gamma"], builtins=False
    ) as tk:
        res = await tk.execute("skill", {"name": "gamma"})
        assert res.output == 'Skill "gamma" not found. Available skills: alpha, beta'
    # An explicit filter entry wins over disable_skills.
    async with await create_toolkit(
        skills_dir=str(three_skills),
        skills_filter={"gamma": True},
        disable_skills=["gamma"],
        builtins=False,
    ) as tk:
        assert (await tk.execute("skill", {"name": "gamma"})).is_error is False
        assert (await tk.execute("skill", {"name": "beta"})).is_error is True


async def test_filter_key_matching_nothing_warns(
    three_skills: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        src = await build_skill_source(three_skills, filter={"nope": False})
    assert list(src.skills) == ["alpha", "beta", "gamma"]
    assert len([m for m in caplog.messages if '"nope"' in m]) == 1


def test_list_skills_is_unfiltered_and_typed(three_skills: Path) -> None:
    (three_skills / "broken").mkdir()
    (three_skills / "broken" / "SKILL.md").write_text("---\nname: [\n---\n")
    inv = list_skills(three_skills, skills=[SkillDef("alpha", "dup")])
    assert [s.name for s in inv.skills] == ["alpha", "beta", "gamma"]
    assert [(s.location, s.reason) for s in inv.skipped] == [
        (str(three_skills / "broken" / "SKILL.md"), "malformed-frontmatter"),
        ("skill://alpha/", "duplicate-name"),
    ]


def test_skill_source_public_shape(three_skills: Path) -> None:
    src = load_skills(three_skills, filter={"alpha": True})
    assert list(src.skills) == ["alpha"]
    assert src.skills["alpha"].description == "the alpha skill"
    assert src.skipped == []
    assert src.tool.name == "skill" and src.tool.source == "skill"
    assert src.prompt().startswith("Skills provide specialized instructions")


def test_prompt_sorted_by_code_point_and_only_described() -> None:
    src = load_skills(
        skills=[
            SkillDef("beta", "x", "b"),
            SkillDef("Zed", "x", "z"),
            SkillDef("alpha", "x", "a"),
            SkillDef("hidden", "x"),
        ]
    )
    assert src.prompt().splitlines()[4:] == ["- **Zed**: z", "- **alpha**: a", "- **beta**: b"]
    assert list(src.skills) == ["beta", "Zed", "alpha", "hidden"]  # collection order
    res = asyncio.run(src.tool.execute({"name": "gone"}))
    assert res.output == 'Skill "gone" not found. Available skills: Zed, alpha, beta, hidden'
