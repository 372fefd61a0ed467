"""SKILL.md parsing: fences, real YAML, scalar stringification and trimming, typed skips."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolnexus.skill import SkillInfo, SkillSkip, list_skills, load_skills


def only(tmp_path: Path, text: str | bytes) -> SkillInfo | SkillSkip:
    """Write one SKILL.md with `text` and return what discovery made of it."""
    folder = tmp_path / "s"
    folder.mkdir(exist_ok=True)
    path = folder / "SKILL.md"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    inv = list_skills(tmp_path)
    found: list[SkillInfo | SkillSkip] = [*inv.skills, *inv.skipped]
    assert len(found) == 1
    return found[0]


def test_plain_frontmatter_and_body_kept_as_is(tmp_path: Path) -> None:
    s = only(tmp_path, "---\nname: pdf\ndescription: Read PDFs\n---\n\n# PDF\n\nSteps.\n\n")
    assert isinstance(s, SkillInfo)
    assert (s.name, s.description) == ("pdf", "Read PDFs")
    assert s.content == "\n# PDF\n\nSteps.\n\n"  # stored as is, trimmed only when rendered


def test_crlf_line_breaks(tmp_path: Path) -> None:
    s = only(tmp_path, "---\r\nname: win\r\ndescription: crlf\r\n---\r\nBody\r\n")
    assert isinstance(s, SkillInfo)
    assert (s.name, s.description, s.content) == ("win", "crlf", "Body\r\n")


def test_utf8_bom_does_not_hide_the_fence(tmp_path: Path) -> None:
    s = only(tmp_path, b"\xef\xbb\xbf---\nname: bom\n---\nx")
    assert isinstance(s, SkillInfo) and s.name == "bom"


def test_block_scalars_quoting_and_chomping(tmp_path: Path) -> None:
    text = (
        "---\n"
        "name: '  quoted-name  '\n"
        "description: >\n"
        "  Folded text\n"
        "  on two lines.\n"
        "\n"
        "literal: |+\n"
        "  keep\n"
        "  lines\n"
        "\n"
        "---\n"
        "body"
    )
    s = only(tmp_path, text)
    assert isinstance(s, SkillInfo)
    assert s.name == "quoted-name"
    assert s.description == "Folded text on two lines."


def test_literal_description_keeps_inner_newlines_but_not_trailing(tmp_path: Path) -> None:
    s = only(tmp_path, "---\nname: lit\ndescription: |\n  line one\n  line two\n---\n")
    assert isinstance(s, SkillInfo)
    assert s.description == "line one\nline two"


def test_scalars_become_strings_and_booleans_lowercase(tmp_path: Path) -> None:
    s = only(tmp_path, "---\nname: 42\ndescription: true\n---\n")
    assert isinstance(s, SkillInfo)
    assert (s.name, s.description) == ("42", "true")
    s2 = only(tmp_path, "---\nname: no\ndescription: 1.5\n---\n")
    assert isinstance(s2, SkillInfo)
    assert (s2.name, s2.description) == ("false", "1.5")


def test_lists_mappings_and_nulls_are_ignored(tmp_path: Path) -> None:
    s = only(tmp_path, "---\nname: x\ndescription:\ntags: [a, b]\nmeta: {k: v}\n---\n")
    assert isinstance(s, SkillInfo)
    assert s.description is None  # null ⇒ not described
    s2 = only(tmp_path, "---\nname: [x]\n---\n")
    assert s2 == SkillSkip(str(tmp_path / "s" / "SKILL.md"), "missing-name")


def test_empty_description_counts_as_described(tmp_path: Path) -> None:
    s = only(tmp_path, "---\nname: quiet\ndescription: ''\n---\n")
    assert isinstance(s, SkillInfo) and s.description == ""
    src = load_skills(tmp_path)
    assert src.prompt().endswith("## Available Skills\n- **quiet**: ")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no frontmatter at all\n", "missing-name"),
        ("---\ndescription: nameless\n---\nbody", "missing-name"),
        ("---\nname: ''\n---\n", "missing-name"),
        ("---\nname: '   '\n---\n", "missing-name"),
        ("---\n- a list\n- not a map\n---\n", "missing-name"),
        ("---\n\n---\n", "missing-name"),
        (" ---\nname: indented-fence\n---\n", "missing-name"),
        ("---\nname: [unclosed\n---\n", "malformed-frontmatter"),
        ("---\nname: [x\ndescription: d\n---\n", "malformed-frontmatter"),
        ("---\ndescription: Use when: always\n---\n", "malformed-frontmatter"),
        ("---\nname: never-closed\n", "malformed-frontmatter"),
    ],
)
def test_skip_reasons(tmp_path: Path, text: str, reason: str) -> None:
    assert only(tmp_path, text) == SkillSkip(str(tmp_path / "s" / "SKILL.md"), reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "name", "description"),
    [
        (
            "---\nname: alpha\ndescription: Use this when asked about X. Trigger on: x, y\n"
            "allowed-tools: Read\n---\nbody",
            "alpha",
            "Use this when asked about X. Trigger on: x, y",
        ),
        ("---\nname: 'q: n'\ndescription: \"Use: a\"\n# c: d\n---\n", "q: n", "Use: a"),
        ("---\nname: m\ndescription: one: two\n  three\nname: again\n---\n", "m", "one: two"),
        ("---\nname: a\n  bad: indent\n---\n", "a", None),
        ("---\nname: x\nname2: *nosuchanchor\n---\n", "x", None),
    ],
)
def test_frontmatter_yaml_refuses_is_read_line_by_line(
    tmp_path: Path, text: str, name: str, description: str | None
) -> None:
    # as the published package (and Claude Code) read them
    info = only(tmp_path, text)
    assert isinstance(info, SkillInfo)
    assert (info.name, info.description) == (name, description)


def test_invalid_utf8_is_unreadable(tmp_path: Path) -> None:
    skip = only(tmp_path, b"---\nname: bad\xff\xfe\n---\n")
    assert skip == SkillSkip(str(tmp_path / "s" / "SKILL.md"), "unreadable")
    assert isinstance(skip, SkillSkip) and "UTF-8" in skip.detail


def test_skips_warn_once_on_load_and_other_skills_still_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SKILL.md").write_text("---\nname: [x\n---\n")
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "SKILL.md").write_text("---\nname: good\n---\n")
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        src = load_skills(tmp_path)
    assert list(src.skills) == ["good"]
    assert [s.reason for s in src.skipped] == ["malformed-frontmatter"]
    (message,) = caplog.messages
    assert message.startswith(
        f"[toolnexus] skipped skill {tmp_path / 'bad' / 'SKILL.md'}: malformed-frontmatter ("
    )


def test_frontmatter_fence_rules(tmp_path: Path) -> None:
    # The block ends at the first later line break followed by `---`; one line break skipped.
    s = only(tmp_path, "---\nname: a\n---\n---\nstill body")
    assert isinstance(s, SkillInfo) and s.content == "---\nstill body"
    s2 = only(tmp_path, "---\nname: b\n---")
    assert isinstance(s2, SkillInfo) and s2.content == ""
    s3 = only(tmp_path, "---\nname: c\n---\n\n\nafter two blank lines")
    assert isinstance(s3, SkillInfo) and s3.content == "\n\nafter two blank lines"


_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufeff"),
    min_size=1,
    max_size=40,
).filter(lambda t: t.strip() != "")


@settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=_text, description=_text)
def test_yaml_round_trip_gives_trimmed_strings(tmp_path: Path, name: str, description: str) -> None:
    block = yaml.safe_dump({"name": name, "description": description}, allow_unicode=True)
    s = only(tmp_path, f"---\n{block}---\nbody")
    assert isinstance(s, SkillInfo)
    assert (s.name, s.description) == (name.strip(), description.strip())


def test_large_skill_file_is_read_whole(tmp_path: Path) -> None:
    body = "".join(f"line {i} é\n" for i in range(30_000))  # several read chunks
    s = only(tmp_path, f"---\nname: big\n---\n{body}")
    assert isinstance(s, SkillInfo) and s.content == body
