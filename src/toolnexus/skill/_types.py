"""The data types of the skill source: definitions, discovered skills, skips, inventory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

SkipReason: TypeAlias = Literal[
    "missing-name", "malformed-frontmatter", "duplicate-name", "unreadable"
]
SkillSkipReason: TypeAlias = SkipReason


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


SkillProvider: TypeAlias = Callable[[], "list[SkillDef] | Awaitable[list[SkillDef]]"]
"""`create_toolkit(skill_provider=...)`: returns (or resolves to) the data skills to add."""


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """One discovered skill.

    `location` is the absolute `SKILL.md` path as reached by the walk (links not resolved), or
    the logical base of a data skill. `origin` says which: `"fs"` for a file, `"logical"` for a
    `SkillDef`, whose `base` and `resources` (logical file names) it keeps, `"mcp"` for a skill
    an MCP server serves (`location` is its `SKILL.md` URI, `base` its root, `content` empty
    until it is loaded). `directory` is the
    folder holding `SKILL.md` (`None` for data skills). The field order is the published
    package's, so positional construction works the same.
    """

    name: str
    location: str
    content: str
    description: str | None = None
    origin: Literal["fs", "logical", "mcp"] = "fs"
    resources: tuple[str, ...] | None = None
    base: str | None = None
    directory: str | None = None


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


class RemoteSkill(Protocol):
    """A skill another source serves (an MCP server's): listed up front, its instructions read
    when it is loaded. `uri` is its `SKILL.md`, `root` the base its `files` (relative paths;
    `None` when they cannot be listed) are relative to."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str | None: ...

    @property
    def uri(self) -> str: ...

    @property
    def root(self) -> str: ...

    @property
    def files(self) -> tuple[str, ...] | None: ...

    async def load(self) -> str:
        """The skill's instructions (its `SKILL.md` after the frontmatter)."""
        ...
