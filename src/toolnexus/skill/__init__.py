"""Agent skills: `SKILL.md` folders and data skills, loaded on demand through one `skill` tool.

The model sees a short catalog (`skills_prompt()`) and calls `skill` with a name to get that
skill's instructions and a sampled list of its files (progressive disclosure).
"""

from toolnexus.skill._source import (
    SKILL_TOOL_DESCRIPTION,
    SKILLS_PROMPT_PREAMBLE,
    SkillSource,
    build_skill_source,
    list_skills,
    load_skills,
    with_remote_skills,
)
from toolnexus.skill._types import (
    RemoteSkill,
    SkillDef,
    SkillInfo,
    SkillInventory,
    SkillProvider,
    SkillSkip,
    SkillSkipReason,
)

__all__ = [
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
    "RemoteSkill",
    "SkillDef",
    "SkillInfo",
    "SkillInventory",
    "SkillProvider",
    "SkillSkip",
    "SkillSkipReason",
    "SkillSource",
    "build_skill_source",
    "list_skills",
    "load_skills",
    "with_remote_skills",
]
