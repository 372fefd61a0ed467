"""Run under FastMCP 4.2 (the `.venv-fastmcp` virtualenv): FastMCP's client, opted into the
Skills extension, as a caller of the MCP server at argv[1]. Prints one JSON object: every skill
it lists (uri, frontmatter) and, per skill, the files `read_skill` fetched and verified."""

from __future__ import annotations

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.skills.client import SkillsClientExtension


async def main(url: str) -> None:
    async with Client(url, extensions=[SkillsClientExtension()]) as client:
        listed = await client.list_skills()
        read = {}
        for entry in listed:
            skill = await client.read_skill(entry.uri)
            read[entry.uri] = {path: data.decode() for path, data in sorted(skill.files.items())}
        out = {
            "skills": [{"uri": e.uri, "frontmatter": e.frontmatter.root} for e in listed],
            "read": read,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
