"""skills.md §8 byte for byte, plus the prompt without skills and without a skill source."""

from __future__ import annotations

from pathlib import Path

from toolnexus import create_toolkit
from toolnexus.skill import SKILL_TOOL_DESCRIPTION, SKILLS_PROMPT_PREAMBLE

DIR = str(Path(__file__).resolve().parents[2] / "examples" / "skills")

EXPECTED_OUTPUT = f"""<skill_content name="hello-world">
# Skill: hello-world

# Hello World Skill

This is the skill body. When the model calls the `skill` tool with
`{{ "name": "hello-world" }}`, everything below the frontmatter is injected into the
conversation, along with a sampled list of files in this directory.

## Steps

1. Read `scripts/greet.sh` in this skill's base directory.
2. Run it with the user's name.
3. Report the greeting back.

Relative paths (like `scripts/greet.sh`) are resolved against the base directory
printed in the tool output.

Base directory for this skill: file://{DIR}/hello-world
Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.
Note: file list is sampled.

<skill_files>
<file>{DIR}/hello-world/scripts/greet.sh</file>
</skill_files>
</skill_content>"""

EXPECTED_PROMPT = """Skills provide specialized instructions and workflows for specific tasks.
Use the skill tool to load a skill when a task matches its description.

## Available Skills
- **hello-world**: A tiny example skill. Use when you want to see how skill loading (progressive disclosure) works end to end."""  # noqa: E501

EXPECTED_DESCRIPTION = """Load a specialized skill when the task at hand matches one of the skills listed in the system prompt.

Use this tool to inject the skill's instructions and resources into current conversation. The output may contain detailed workflow guidance as well as references to scripts, files, etc in the same directory as the skill.

The skill name must match one of the skills listed in your system prompt."""  # noqa: E501


async def test_worked_example_output_metadata_and_prompt() -> None:
    async with await create_toolkit(skills_dir=DIR, builtins=False) as tk:
        res = await tk.execute("skill", {"name": "hello-world"})
        assert res.is_error is False
        assert res.metadata == {"name": "hello-world", "dir": f"{DIR}/hello-world"}
        assert res.output == EXPECTED_OUTPUT
        assert tk.skills_prompt() == EXPECTED_PROMPT


async def test_worked_example_not_found() -> None:
    async with await create_toolkit(skills_dir=DIR, builtins=False) as tk:
        res = await tk.execute("skill", {"name": "nope"})
        assert res.is_error is True
        assert res.metadata is None
        assert res.output == 'Skill "nope" not found. Available skills: hello-world'


async def test_worked_example_without_file_block() -> None:
    async with await create_toolkit(skills_dir=DIR, skill_sample_limit=-1, builtins=False) as tk:
        res = await tk.execute("skill", {"name": "hello-world"})
        head = EXPECTED_OUTPUT.split("\nNote: file list is sampled.")[0]
        assert res.output == head + "\n</skill_content>"
        assert res.output.endswith(
            "Relative paths in this skill (e.g., scripts/, reference/) are relative to this "
            "base directory.\n</skill_content>"
        )


async def test_skill_tool_declaration_is_byte_exact() -> None:
    async with await create_toolkit(skills_dir=DIR, builtins=False) as tk:
        tool = tk.get("skill")
        assert tool is not None
        assert tool.source == "skill"
        assert tool.description == EXPECTED_DESCRIPTION == SKILL_TOOL_DESCRIPTION
        assert tool.input_schema == {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name of the skill to load"}
            },
            "required": ["name"],
            "additionalProperties": False,
        }
    assert EXPECTED_PROMPT.split("\n\n")[0] == SKILLS_PROMPT_PREAMBLE


async def test_no_described_skill_prompt_and_empty_catalog(tmp_path: Path) -> None:
    async with await create_toolkit(skills_dir=str(tmp_path), builtins=False) as tk:
        assert tk.get("skill") is not None  # the source exists even when it finds nothing
        assert tk.skills_prompt() == "No skills are currently available."
        res = await tk.execute("skill", {"name": "x"})
        assert (res.output, res.is_error) == ('Skill "x" not found. Available skills: none', True)


async def test_no_skill_source_means_no_tool_and_empty_prompt() -> None:
    async with await create_toolkit(builtins=False) as tk:
        assert tk.get("skill") is None
        assert tk.skills_prompt() == ""
