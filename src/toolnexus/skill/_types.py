"""The data types of the skill source: definitions, discovered skills, skips, inventory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

SkipReason: TypeAlias = Literal[
    "missing-name", "malformed-frontmatter", "duplicate-name", "unreadable"
]


@dataclass(slots=True)
class SkillDef:
    """A skill supplied as data rather than found on disk.

    `description=None` keeps it out of `skills_prompt()`; `resources` are logical names shown in
    the loader's file list (never touched on disk); `base` defaults to `skill://<name>/`.
    """

    name: str
    content: str
    description: str | None = None
    resources: Sequence[str] | None = None
    base: str | None = None


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """One discovered skill.

    `location` is the absolute `SKILL.md` path as reached by the walk (links not resolved), or
    the logical base of a data skill. `directory` is the folder holding `SKILL.md` (`None` for
    data skills); `resources` are a data skill's logical file names.
    """

    name: str
    description: str | None
    location: str
    content: str
    directory: str | None = None
    resources: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class SkillSkip:
    """A candidate that was not loaded: where it is and why (`detail` says what to fix)."""

    location: str
    reason: SkipReason
    detail: str = field(default="", compare=False)


@dataclass(slots=True)
class SkillInventory:
    """What `list_skills` found: deduplicated, unfiltered skills and every skip."""

    skills: list[SkillInfo]
    skipped: list[SkillSkip]
