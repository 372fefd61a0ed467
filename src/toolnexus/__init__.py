"""toolnexus: every kind of tool for any LLM through one interface.

Everything a user needs is importable from here. Names load on first use, so
`import toolnexus` stays light (no MCP SDK, pydantic, HTTP client or server until needed).
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing `typing` (and the `re`, `collections` and
# `contextlib` it pulls in) would be most of what `import toolnexus` costs. Type checkers treat
# any constant named TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # core types
    "Tool": "toolnexus.types",
    "ToolResult": "toolnexus.types",
    "ToolContext": "toolnexus.types",
    "Context": "toolnexus.types",
    "Request": "toolnexus.types",
    "Answer": "toolnexus.types",
    "pending": "toolnexus.types",
    "auth_required": "toolnexus.types",
    "pending_of": "toolnexus.types",
    "answer_output": "toolnexus.types",
    "answer_declined": "toolnexus.types",
    "sanitize": "toolnexus.types",
    # content parts
    "ContentPart": "toolnexus.content",
    "ContentPartError": "toolnexus.content",
    "UnsupportedPartError": "toolnexus.content",
    "MEDIA_TYPES": "toolnexus.content",
    "text": "toolnexus.content",
    "image": "toolnexus.content",
    "file": "toolnexus.content",
    "audio": "toolnexus.content",
    "part": "toolnexus.content",
    "encode_part": "toolnexus.content",
    "estimate_tokens": "toolnexus.content",
    "summarize": "toolnexus.content",
    "get_max_part_bytes": "toolnexus.content",
    "set_max_part_bytes": "toolnexus.content",
    # toolkit
    "Toolkit": "toolnexus.toolkit",
    "create_toolkit": "toolnexus.toolkit",
    "create_toolkit_sync": "toolnexus.toolkit",
    # adapters
    "to_openai": "toolnexus.adapters",
    "to_openai_responses": "toolnexus.adapters",
    "to_anthropic": "toolnexus.adapters",
    "to_gemini": "toolnexus.adapters",
    # native tools
    "define_tool": "toolnexus.native",
    "tool": "toolnexus.native",
    # HTTP tools
    "http_tool": "toolnexus.http_tools",
    "http_tools_from_openapi": "toolnexus.openapi",
    "expand_env_headers": "toolnexus._env",
    # skills
    "load_skills": "toolnexus.skill",
    "list_skills": "toolnexus.skill",
    "SkillDef": "toolnexus.skill",
    "SkillInfo": "toolnexus.skill",
    "SkillSkip": "toolnexus.skill",
    "SkillSource": "toolnexus.skill",
    "SkillInventory": "toolnexus.skill",
    "SKILL_TOOL_DESCRIPTION": "toolnexus.skill",
    "SKILLS_PROMPT_PREAMBLE": "toolnexus.skill",
    # MCP
    "load_mcp": "toolnexus.mcp_source",
    "load_mcp_with_context": "toolnexus.mcp_source",
    "list_mcp_tools": "toolnexus.mcp_source",
    "parse_mcp_config": "toolnexus.mcp_source",
    "McpSource": "toolnexus.mcp_source",
    "McpInventory": "toolnexus.mcp_source",
    "McpServerState": "toolnexus.mcp_source",
    "ToolInfo": "toolnexus.mcp_source",
    # built-ins
    "create_builtin_tools": "toolnexus.builtins",
    "select_builtins": "toolnexus.builtins",
    "builtins_enabled": "toolnexus.builtins",
    # A2A outbound
    "agent": "toolnexus.a2a",
    "Agent": "toolnexus.a2a",
    "agent_tools": "toolnexus.a2a",
    "parse_agents_config": "toolnexus.a2a",
    # client
    "create_client": "toolnexus.client",
    "create_in_process_client": "toolnexus.client",
    "Client": "toolnexus.client",
    "RunResult": "toolnexus.client",
    "TranslateResult": "toolnexus.client",
    "Hooks": "toolnexus.client",
    "ConversationStore": "toolnexus.client",
    "InMemoryConversationStore": "toolnexus.client",
    "SQLiteConversationStore": "toolnexus.client",
    "AtomicConversationStore": "toolnexus.client",
    "PostgresConversationStore": "toolnexus.client",
    "RedisConversationStore": "toolnexus.client",
    # errors
    "ToolnexusError": "toolnexus.errors",
    "ConfigError": "toolnexus.errors",
    "EnvVarError": "toolnexus.errors",
    "ServerConfigError": "toolnexus.errors",
    "MalformedFrontmatter": "toolnexus.errors",
    "MissingApiKey": "toolnexus.errors",
    "ProviderError": "toolnexus.errors",
    "ProviderConnectionError": "toolnexus.errors",
    "RunTimeout": "toolnexus.errors",
    "RunCancelled": "toolnexus.errors",
    "A2AError": "toolnexus.errors",
    "SpawnError": "toolnexus.errors",
    "StoreError": "toolnexus.errors",
    "StoreConfigError": "toolnexus.errors",
    # serving
    "ServeHandle": "toolnexus.serve",
    "TaskStore": "toolnexus.serve",
    "InMemoryTaskStore": "toolnexus.serve",
    "FileTaskStore": "toolnexus.serve",
    "resolve_store": "toolnexus.serve",
    "build_agent_card": "toolnexus.serve",
    "build_mcp_server": "toolnexus.serve",
    "exposed_mcp_tools": "toolnexus.serve",
}

# Literal, so that type checkers see what `from toolnexus import X` may import; a test keeps it
# equal to the lazy table above.
__all__ = [
    "MEDIA_TYPES",
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
    "A2AError",
    "Agent",
    "Answer",
    "AtomicConversationStore",
    "Client",
    "ConfigError",
    "ContentPart",
    "ContentPartError",
    "Context",
    "ConversationStore",
    "EnvVarError",
    "FileTaskStore",
    "Hooks",
    "InMemoryConversationStore",
    "InMemoryTaskStore",
    "MalformedFrontmatter",
    "McpInventory",
    "McpServerState",
    "McpSource",
    "MissingApiKey",
    "PostgresConversationStore",
    "ProviderConnectionError",
    "ProviderError",
    "RedisConversationStore",
    "Request",
    "RunCancelled",
    "RunResult",
    "RunTimeout",
    "SQLiteConversationStore",
    "ServeHandle",
    "ServerConfigError",
    "SkillDef",
    "SkillInfo",
    "SkillInventory",
    "SkillSkip",
    "SkillSource",
    "SpawnError",
    "StoreConfigError",
    "StoreError",
    "TaskStore",
    "Tool",
    "ToolContext",
    "ToolInfo",
    "ToolResult",
    "Toolkit",
    "ToolnexusError",
    "TranslateResult",
    "UnsupportedPartError",
    "__version__",
    "agent",
    "agent_tools",
    "answer_declined",
    "answer_output",
    "audio",
    "auth_required",
    "build_agent_card",
    "build_mcp_server",
    "builtins_enabled",
    "create_builtin_tools",
    "create_client",
    "create_in_process_client",
    "create_toolkit",
    "create_toolkit_sync",
    "define_tool",
    "encode_part",
    "estimate_tokens",
    "expand_env_headers",
    "exposed_mcp_tools",
    "file",
    "get_max_part_bytes",
    "http_tool",
    "http_tools_from_openapi",
    "image",
    "list_mcp_tools",
    "list_skills",
    "load_mcp",
    "load_mcp_with_context",
    "load_skills",
    "parse_agents_config",
    "parse_mcp_config",
    "part",
    "pending",
    "pending_of",
    "resolve_store",
    "sanitize",
    "select_builtins",
    "set_max_part_bytes",
    "summarize",
    "text",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "to_openai_responses",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus' has no attribute {name!r}")
    # `__import__` with a fromlist returns the submodule itself (no `importlib` to load first)
    value = getattr(__import__(module, fromlist=(name,)), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # static view of the lazy exports, for type checkers and IDEs
    from toolnexus._env import expand_env_headers
    from toolnexus.a2a import Agent, agent, agent_tools, parse_agents_config
    from toolnexus.adapters import to_anthropic, to_gemini, to_openai, to_openai_responses
    from toolnexus.builtins import builtins_enabled, create_builtin_tools, select_builtins
    from toolnexus.client import (
        AtomicConversationStore,
        Client,
        ConversationStore,
        Hooks,
        InMemoryConversationStore,
        PostgresConversationStore,
        RedisConversationStore,
        RunResult,
        SQLiteConversationStore,
        TranslateResult,
        create_client,
        create_in_process_client,
    )
    from toolnexus.content import (
        MEDIA_TYPES,
        ContentPart,
        ContentPartError,
        UnsupportedPartError,
        audio,
        encode_part,
        estimate_tokens,
        file,
        get_max_part_bytes,
        image,
        part,
        set_max_part_bytes,
        summarize,
        text,
    )
    from toolnexus.errors import (
        A2AError,
        ConfigError,
        EnvVarError,
        MalformedFrontmatter,
        MissingApiKey,
        ProviderConnectionError,
        ProviderError,
        RunCancelled,
        RunTimeout,
        ServerConfigError,
        SpawnError,
        StoreConfigError,
        StoreError,
        ToolnexusError,
    )
    from toolnexus.http_tools import http_tool
    from toolnexus.mcp_source import (
        McpInventory,
        McpServerState,
        McpSource,
        ToolInfo,
        list_mcp_tools,
        load_mcp,
        load_mcp_with_context,
        parse_mcp_config,
    )
    from toolnexus.native import define_tool, tool
    from toolnexus.openapi import http_tools_from_openapi
    from toolnexus.serve import (
        FileTaskStore,
        InMemoryTaskStore,
        ServeHandle,
        TaskStore,
        build_agent_card,
        build_mcp_server,
        exposed_mcp_tools,
        resolve_store,
    )
    from toolnexus.skill import (
        SKILL_TOOL_DESCRIPTION,
        SKILLS_PROMPT_PREAMBLE,
        SkillDef,
        SkillInfo,
        SkillInventory,
        SkillSkip,
        SkillSource,
        list_skills,
        load_skills,
    )
    from toolnexus.toolkit import Toolkit, create_toolkit, create_toolkit_sync
    from toolnexus.types import (
        Answer,
        Context,
        Request,
        Tool,
        ToolContext,
        ToolResult,
        answer_declined,
        answer_output,
        auth_required,
        pending,
        pending_of,
        sanitize,
    )
