"""A Skills provider on the official SDK's extension framework: `MCPServer(extensions=[...])`
with an `Extension` serving `skills/list` (with the catalog's `ttlMs`) and `skills/get`, and a
`skill://{skill}/{file}` resource template reading the catalog's files.

The catalog is plain data the test holds and changes (as a server's files change on disk):
`files` maps each URI to its bytes; `unlisted` names URIs served but left out of their skill's
listing, `misdigested` URIs listed with a digest of other bytes. `app(catalog)` is the
streamable HTTP ASGI app.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types
import yaml
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field


class _File(BaseModel):
    uri: str
    digest: str
    size: int = Field(ge=0)


class _Skill(BaseModel):
    uri: str
    frontmatter: dict[str, Any]
    resources: list[_File]


class _GetParams(types.RequestParams):
    uri: str


class _Listed(types.PaginatedResult, types.CacheableResult):
    skills: list[_Skill]
    result_type: Literal["complete"] = "complete"


class _Got(types.CacheableResult):
    skill: _Skill
    result_type: Literal["complete"] = "complete"


def skill_md(name: str, description: str, body: str) -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}".encode()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Catalog:
    files: dict[str, bytes] = field(default_factory=dict)
    unlisted: set[str] = field(default_factory=set)
    misdigested: set[str] = field(default_factory=set)
    ttl_ms: int = 0
    lists: int = 0  # how many times `skills/list` was answered

    def add(self, name: str, description: str, body: str, **others: str) -> None:
        self.files[f"skill://{name}/SKILL.md"] = skill_md(name, description, body)
        for rel, text in others.items():
            self.files[f"skill://{name}/{rel}"] = text.encode()

    def remove(self, name: str) -> None:
        for uri in [u for u in self.files if u.startswith(f"skill://{name}/")]:
            del self.files[uri]

    def entry(self, uri: str) -> _Skill | None:
        data = self.files.get(uri)
        if data is None or not uri.endswith("/SKILL.md"):
            return None
        root = uri.removesuffix("SKILL.md")
        front = yaml.safe_load(data.decode().split("---\n")[1])
        resources = [
            _File(
                uri=u,
                digest=_digest(b"other bytes" if u in self.misdigested else d),
                size=len(d),
            )
            for u, d in sorted(self.files.items())
            if u.startswith(root) and u not in self.unlisted
        ]
        return _Skill(uri=uri, frontmatter=front, resources=resources)


class _Skills(Extension):
    identifier = "io.modelcontextprotocol/skills"

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("skills/list", types.PaginatedRequestParams, self._list),
            MethodBinding("skills/get", _GetParams, self._get),
        ]

    async def _list(self, ctx: Any, params: Any) -> _Listed:
        self.catalog.lists += 1
        entries = [self.catalog.entry(u) for u in sorted(self.catalog.files)]
        return _Listed(skills=[e for e in entries if e is not None], ttl_ms=self.catalog.ttl_ms)

    async def _get(self, ctx: Any, params: _GetParams) -> _Got:
        entry = self.catalog.entry(params.uri)
        if entry is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"No skill at {params.uri}")
        return _Got(skill=entry, ttl_ms=self.catalog.ttl_ms)


def server(catalog: Catalog) -> MCPServer:
    mcp = MCPServer("skills", extensions=[_Skills(catalog)])

    @mcp.resource("skill://{skill}/{file}", mime_type="text/markdown")
    def skill_file(skill: str, file: str) -> str:
        data = catalog.files.get(f"skill://{skill}/{file}")
        if data is None:
            raise MCPError(code=types.INVALID_PARAMS, message="Unknown resource")
        return data.decode()

    @mcp.resource("note://readme")
    def readme() -> str:
        return "not a skill"

    return mcp


def app(catalog: Catalog) -> Any:
    return server(catalog).streamable_http_app(stateless_http=True)
