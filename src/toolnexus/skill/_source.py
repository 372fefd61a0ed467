"""The skill source: skills merged from folders, data and a provider; the tool; the prompt."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from toolnexus._filters import apply_name_filter
from toolnexus._log import warn
from toolnexus.errors import ConfigError, ConfigTypeError
from toolnexus.skill._discover import discover, sample_files
from toolnexus.skill._types import RemoteSkill, SkillDef, SkillInfo, SkillInventory, SkillSkip
from toolnexus.types import Tool, ToolContext, ToolResult, error_message

SKILL_TOOL_DESCRIPTION = (
    "Load a specialized skill when the task at hand matches one of the skills listed in the "
    "system prompt.\n"
    "\n"
    "Use this tool to inject the skill's instructions and resources into current conversation. "
    "The output may contain detailed workflow guidance as well as references to scripts, files, "
    "etc in the same directory as the skill.\n"
    "\n"
    "The skill name must match one of the skills listed in your system prompt."
)

SKILLS_PROMPT_PREAMBLE = (
    "Skills provide specialized instructions and workflows for specific tasks.\n"
    "Use the skill tool to load a skill when a task matches its description."
)

NO_SKILLS_PROMPT = "No skills are currently available."

DEFAULT_SAMPLE_CAP = 10

SkillDirs: TypeAlias = "str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None"
Candidate: TypeAlias = "SkillInfo | SkillSkip"


def _skill_tool_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The name of the skill to load"}},
        "required": ["name"],
        "additionalProperties": False,
    }


class SkillSource:
    """The exposed skills (filtered), the skips, the `skill` tool and the catalog prompt.

    `skills` maps name → `SkillInfo` in collection order; treat it as read-only (the prompt and
    the tool's "available" list are computed from it). `remote` maps the name of each
    skill another source serves (`origin="mcp"`) to it: its instructions are read on load.
    A source with remote skills may change with them: `refresh()` (which the `skill` tool
    awaits before each load) brings in a server's new listing once its own is stale, replacing
    `skills`, `skipped`, `remote` and the prompt together.
    """

    def __init__(
        self,
        skills: Mapping[str, SkillInfo],
        skipped: Sequence[SkillSkip] = (),
        *,
        sample_limit: int = 0,
        remote: Mapping[str, RemoteSkill] | None = None,
    ) -> None:
        self.skills: dict[str, SkillInfo] = dict(skills)
        self.skipped: list[SkillSkip] = list(skipped)
        self.remote: dict[str, RemoteSkill] = {
            n: r for n, r in (remote or {}).items() if n in self.skills
        }
        self.sample_limit = sample_limit
        self._cap = _effective_cap(sample_limit)
        self._prompt = _render_prompt(self.skills[n] for n in sorted(self.skills))
        self.tool = Tool(
            "skill", SKILL_TOOL_DESCRIPTION, _skill_tool_schema(), "skill", self._execute
        )
        self._refresher: Callable[[], Awaitable[SkillSource | None]] | None = None
        self._refreshing = asyncio.Lock()

    def prompt(self) -> str:
        """The catalog for the system prompt."""
        return self._prompt

    def refresh_with(self, refresher: Callable[[], Awaitable[SkillSource | None]]) -> None:
        """Have `refresh()` await `refresher`: the source to become, or `None` for no change."""
        self._refresher = refresher

    async def refresh(self) -> bool:
        """Bring the skills other sources serve up to date (an MCP server's listing is read
        again once its `ttlMs` has passed); whether anything changed."""
        if self._refresher is None:
            return False
        async with self._refreshing:
            fresh = await self._refresher()
            if fresh is None:
                return False
            self.skills, self.skipped, self.remote = fresh.skills, fresh.skipped, fresh.remote
            self._prompt = fresh.prompt()
            return True

    async def _execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        await self.refresh()
        requested = str(args.get("name", ""))
        info = self.skills.get(requested)
        if info is None:
            available = ", ".join(sorted(self.skills)) or "none"
            return ToolResult(f'Skill "{requested}" not found. Available skills: {available}', True)
        files: list[str] | None = None
        served = self.remote.get(requested)
        if served is not None:
            try:
                info = dataclasses.replace(info, content=await served.load())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return ToolResult(
                    f'Skill "{requested}" could not be loaded: {error_message(exc)}', True
                )
        if info.directory is not None:
            if self._cap is not None:
                # Sampled per call: the folder may change while the toolkit lives.
                files = await asyncio.to_thread(sample_files, info.directory, self._cap)
            base = Path(info.directory).as_uri()
            folder = info.directory
        else:
            if self._cap is not None and info.resources:
                files = list(info.resources[: self._cap])
            base = folder = info.base or info.location
        return ToolResult(
            render_skill(info, base, files), metadata={"name": info.name, "dir": folder}
        )

    def __repr__(self) -> str:
        return f"<SkillSource {len(self.skills)} skills, {len(self.skipped)} skipped>"


def render_skill(info: SkillInfo, base: str, files: list[str] | None) -> str:
    """The `<skill_content>` block; `files=None` leaves out the file block."""
    lines = [
        f'<skill_content name="{info.name}">',
        f"# Skill: {info.name}",
        "",
        info.content.strip(),
        "",
        f"Base directory for this skill: {base}",
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base "
        "directory.",
    ]
    if files is not None:
        lines.append("Note: file list is sampled.")
        lines.append("")
        lines.append("<skill_files>")
        lines.extend([f"<file>{path}</file>" for path in files] or [""])
        lines.append("</skill_files>")
    lines.append("</skill_content>")
    return "\n".join(lines)


def _render_prompt(skills: Iterable[SkillInfo]) -> str:
    described = [f"- **{s.name}**: {s.description}" for s in skills if s.description is not None]
    if not described:
        return NO_SKILLS_PROMPT
    return "\n".join([SKILLS_PROMPT_PREAMBLE, "", "## Available Skills", *described])


def _effective_cap(sample_limit: int) -> int | None:
    """Files listed by the loader: `None` for no file block (-1), else the cap (0 ⇒ 10)."""
    if isinstance(sample_limit, bool) or not isinstance(sample_limit, int) or sample_limit < -1:
        raise ConfigError(
            "sample_limit must be -1 (no file list), 0 (the default cap of 10 files) or a "
            f"positive number of files, got {sample_limit!r}"
        )
    if sample_limit == -1:
        return None
    return sample_limit or DEFAULT_SAMPLE_CAP


# -- collecting candidates ----------------------------------------------------------------------


def _roots(dirs: Any) -> list[str]:
    if dirs is None:
        return []
    if isinstance(dirs, (str, bytes, os.PathLike)):
        return [os.fsdecode(dirs)]
    try:
        return [os.fsdecode(d) for d in dirs]
    except TypeError:
        raise ConfigTypeError(
            f"skill dirs must be a path or a list of paths, got {type(dirs).__name__}"
        ) from None


def _as_def(item: Any) -> SkillDef:
    if isinstance(item, SkillDef):
        return item
    if isinstance(item, Mapping):
        unknown = set(item) - {"name", "content", "description", "resources", "base"}
        if unknown:
            raise ConfigTypeError(
                f"unknown SkillDef field(s): {', '.join(sorted(map(str, unknown)))}"
            )
        return SkillDef(
            name=item.get("name", ""),
            content=item.get("content", ""),
            description=item.get("description"),
            resources=item.get("resources"),
            base=item.get("base"),
        )
    raise ConfigTypeError(f"a skill must be a SkillDef (or a mapping of its fields), got {item!r}")


def _defs(skills: Iterable[Any] | None) -> list[SkillDef]:
    if skills is None:
        return []
    if isinstance(skills, (str, bytes, SkillDef, Mapping)):
        raise ConfigTypeError("skills must be a list of SkillDef")
    return [_as_def(item) for item in skills]


def _data_skill(d: SkillDef) -> Candidate:
    """A `SkillDef` as a candidate: its location is the logical base, never a host path."""
    name = "" if d.name is None else str(d.name)
    if not name.strip():
        return SkillSkip(d.base or "skill://", "missing-name", "the SkillDef has no name")
    base = d.base or f"skill://{name}/"
    resources = tuple(str(r) for r in d.resources) if d.resources else None
    return SkillInfo(
        name=name,
        description=None if d.description is None else str(d.description),
        location=base,
        content="" if d.content is None else str(d.content),
        origin="logical",
        resources=resources,
        base=base,
    )


def _merge(candidates: Iterable[Candidate]) -> tuple[dict[str, SkillInfo], list[SkillSkip]]:
    """First skill with a name wins; later ones are warned about and recorded as skips."""
    skills: dict[str, SkillInfo] = {}
    skipped: list[SkillSkip] = []
    for candidate in candidates:
        if isinstance(candidate, SkillSkip):
            skipped.append(candidate)
        elif candidate.name in skills:
            warn(f'duplicate skill name "{candidate.name}" ({candidate.location}) — keeping first')
            skipped.append(
                SkillSkip(
                    candidate.location,
                    "duplicate-name",
                    f'a skill named "{candidate.name}" was found first',
                )
            )
        else:
            skills[candidate.name] = candidate
    return skills, skipped


def _warn_skips(skipped: Iterable[SkillSkip]) -> None:
    for skip in skipped:
        if skip.reason != "duplicate-name":  # that one has its own warning
            detail = f" ({skip.detail})" if skip.detail else ""
            warn(f"skipped skill {skip.location}: {skip.reason}{detail}")


def _assemble(
    found: list[Candidate],
    defs: list[SkillDef],
    name_filter: Mapping[str, bool] | None,
    sample_limit: int,
) -> SkillSource:
    skills, skipped = _merge([*found, *(_data_skill(d) for d in defs)])
    _warn_skips(skipped)
    kept = apply_name_filter(skills, name_filter, what="skill")
    return SkillSource({n: skills[n] for n in kept}, skipped, sample_limit=sample_limit)


async def _provided(provider: Callable[[], Any] | None) -> list[SkillDef]:
    """The provider's skills, resolved once; a failing provider contributes nothing."""
    if provider is None:
        return []
    from toolnexus._aio import call_in_thread_maybe_async

    try:
        result = await call_in_thread_maybe_async(provider)
        return _defs(result)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        warn(f"skill provider failed: {error_message(exc)}")
        return []


def _remote_info(skill: RemoteSkill) -> SkillInfo:
    base = skill.root + "/"
    return SkillInfo(
        name=skill.name,
        location=skill.uri,
        content="",
        description=skill.description,
        origin="mcp",
        resources=skill.files,
        base=base,
    )


def with_remote_skills(
    source: SkillSource | None,
    remote: Sequence[RemoteSkill],
    *,
    filter: Mapping[str, bool] | None = None,
    sample_limit: int = 0,
) -> SkillSource:
    """`source`'s skills followed by `remote` (MCP servers' skills), merged as any skills
    are (the first of a name wins, the later one is warned about and skipped) and filtered
    by `filter`; `source`'s sample limit holds when there is a `source`."""
    if source is not None:
        sample_limit = source.sample_limit
    infos = {id(info): (info, skill) for skill in remote for info in (_remote_info(skill),)}
    local = list(source.skills.values()) if source is not None else []
    skills, skipped = _merge([*local, *(info for info, _ in infos.values())])
    _warn_skips(skipped)
    kept = apply_name_filter(skills, filter, what="skill")
    return SkillSource(
        {n: skills[n] for n in kept},
        [*(source.skipped if source is not None else ()), *skipped],
        sample_limit=sample_limit,
        remote={n: infos[id(skills[n])][1] for n in kept if id(skills[n]) in infos},
    )


# -- public entry points ------------------------------------------------------------------------


def load_skills(
    dirs: SkillDirs = None,
    *,
    skills: Sequence[SkillDef] | None = None,
    filter: Mapping[str, bool] | None = None,
    sample_limit: int = 0,
) -> SkillSource:
    """Build a skill source from folders (walked now, in this thread) and `SkillDef`s."""
    _effective_cap(sample_limit)
    defs = _defs(skills)
    return _assemble(discover(_roots(dirs)), defs, filter, sample_limit)


def list_skills(
    dirs: SkillDirs = None, *, skills: Sequence[SkillDef] | None = None
) -> SkillInventory:
    """Every skill the folders and data define (deduplicated, unfiltered) and every skip."""
    found, skipped = _merge([*discover(_roots(dirs)), *(_data_skill(d) for d in _defs(skills))])
    return SkillInventory(list(found.values()), skipped)


async def build_skill_source(
    dirs: SkillDirs = None,
    *,
    skills: Sequence[SkillDef] | None = None,
    provider: Callable[[], Any] | None = None,
    filter: Mapping[str, bool] | None = None,
    sample_limit: int = 0,
) -> SkillSource:
    """The toolkit's skill source; folder walking runs in a worker thread, beside the provider."""
    _effective_cap(sample_limit)
    roots = _roots(dirs)
    defs = _defs(skills)
    if roots:
        found, provided = await asyncio.gather(
            asyncio.to_thread(discover, roots), _provided(provider)
        )
    else:
        found, provided = [], await _provided(provider)
    return _assemble(found, [*defs, *provided], filter, sample_limit)
