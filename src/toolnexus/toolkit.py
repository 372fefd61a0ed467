"""The `Toolkit`: every tool source assembled into one ordered, uniquely named set of tools.

Over 600 lines because it is the public surface (assembly, declarations per provider,
`execute`, search, resources and prompts, serving, the blocking twins); the parts with a job of
their own live beside it (`_sources.py`, `_dispatch.py`, `offers.py`)."""

from __future__ import annotations

import asyncio
import copy
import os
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus import adapters
from toolnexus._aio import LoopThread
from toolnexus._apps import for_the_model
from toolnexus._config import read_config
from toolnexus._dispatch import dispatch
from toolnexus._http import HttpClients, call_owner
from toolnexus._log import warn
from toolnexus._naming import add_unique
from toolnexus._sources import McpServers, SkillTools, Source, StaticSource
from toolnexus.errors import ConfigError, ConfigTypeError, EventLoopError
from toolnexus.offers import Offers
from toolnexus.types import Answer, Request, Tool, ToolContext, ToolResult, error_message

if TYPE_CHECKING:
    from mcp.client.auth import TokenStorage

    from toolnexus.a2a import Agent
    from toolnexus.mcp_source import (
        McpPrompt,
        McpPromptResult,
        McpResource,
        McpResourceTemplate,
        McpServerState,
        McpSource,
        ToolInfo,
    )
    from toolnexus.oauth import TokenStore
    from toolnexus.serve import ResourceAuth, ServeHandle, ServeLimits
    from toolnexus.skill import SkillDef, SkillSource

__all__ = ["Toolkit", "as_toolkit", "create_toolkit", "create_toolkit_sync"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
WaitFor = Callable[[Request], "Answer | Awaitable[Answer | None] | None"]


async def create_toolkit(
    mcp_config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    skills_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    skills: Sequence[SkillDef] | None = None,
    skill_provider: Callable[[], Any] | None = None,
    skills_filter: Mapping[str, bool] | None = None,
    skill_sample_limit: int = 0,
    extra_tools: Sequence[Tool] | None = None,
    builtins: bool | Mapping[str, Any] | None = None,
    agents: Sequence[Agent] | None = None,
    wait_for: WaitFor | None = None,
    disable_tools: Iterable[str] | None = None,
    disable_skills: Iterable[str] | None = None,
    cancel: asyncio.Event | None = None,
    roots: Sequence[str | os.PathLike[str] | Mapping[str, str]] | None = None,
    mcp_token_storage: TokenStore | TokenStorage | str | None = None,
    defer_loading: bool = False,
    skills_defer_loading: bool = False,
) -> Toolkit:
    """Connect and load every configured tool source concurrently, then assemble the toolkit.

    A failing MCP server, agent or skill provider is isolated (warning, status `failed`);
    only an unreadable config file raises. Setting `cancel` aborts the whole build. `roots`
    (paths, `file://` URIs or `{"uri", "name"}`) are offered to MCP servers whose entry has no
    `roots` key; without them a built-in workspace is. `mcp_token_storage` keeps the OAuth
    credentials of MCP servers configured with `auth` (a `toolnexus.TokenStore`, `"memory"`,
    `"file:<dir>"`, or an MCP SDK `TokenStorage` shared by them; default: one `0600` file per
    server under `$TOOLNEXUS_HOME/mcp-auth`); a server's own `auth.store` wins.
    `defer_loading=True` makes every tool of the toolkit deferred: found by tool search, not
    declared up front (docs/tools-search.md); `skills_defer_loading=True` only the `skill` tool.
    """
    for option, flag in (
        ("defer_loading", defer_loading),
        ("skills_defer_loading", skills_defer_loading),
    ):
        if not isinstance(flag, bool):
            raise ConfigTypeError(f"{option} must be a bool, not {flag!r}")
    if isinstance(extra_tools, Tool):
        raise ConfigTypeError("extra_tools takes a list of tools: extra_tools=[tool]")
    extra_tools = list(extra_tools or ())
    _check_tools(extra_tools, "extra_tools")
    for option, names in (("disable_tools", disable_tools), ("disable_skills", disable_skills)):
        if isinstance(names, str):
            raise ConfigTypeError(f"{option} takes a list of names: {option}=[{names!r}]")
    if mcp_config is None:
        config: dict[str, Any] = {}
    elif isinstance(mcp_config, Mapping):
        config = read_config(mcp_config)
    else:  # a file: read it off the event loop
        config = await asyncio.to_thread(read_config, mcp_config)
    builtins_cfg = builtins if builtins is not None else config.get("builtins")
    has_skills = skills_dir is not None or skills is not None or skill_provider is not None

    builtin_tools = _builtin_tools(builtins_cfg)  # a bad value raises before anything starts

    mcp_task: asyncio.Task[McpSource] | None = None
    http = HttpClients()  # what loading fetches (Agent Cards) belongs to the new toolkit
    owner = call_owner.set(http)
    try:
        async with asyncio.TaskGroup() as group:
            if mcp_config is not None:
                from toolnexus.mcp_source import load_mcp_with_context

                workspace = (
                    builtins_cfg.get("workspace") if isinstance(builtins_cfg, Mapping) else None
                )
                mcp_task = group.create_task(
                    load_mcp_with_context(
                        config,
                        wait_for,
                        cancel=cancel,
                        roots=roots,
                        workspace=workspace,
                        token_store=mcp_token_storage,
                    )
                )
            skills_task = None
            if has_skills:
                from toolnexus.skill import build_skill_source

                skills_task = group.create_task(
                    build_skill_source(
                        skills_dir,
                        skills=skills,
                        provider=skill_provider,
                        filter=_effective_skills_filter(skills_filter, disable_skills),
                        sample_limit=skill_sample_limit,
                    )
                )
            agents_task = group.create_task(_resolve_agents(agents or (), config.get("agents")))
    except BaseException as exc:
        # One failure (typically `cancel`) aborts the build: close whatever did connect.
        if (
            mcp_task is not None
            and mcp_task.done()
            and not mcp_task.cancelled()
            and mcp_task.exception() is None
        ):
            await mcp_task.result().close()
        await http.aclose()
        if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            raise exc.exceptions[0] from None
        raise
    finally:
        call_owner.reset(owner)

    mcp = mcp_task.result() if mcp_task is not None else None
    skill = skills_task.result() if skills_task is not None else None
    if mcp is not None:
        try:
            skill = await _with_mcp_skills(
                mcp,
                skill,
                _effective_skills_filter(skills_filter, disable_skills),
                skill_sample_limit,
            )
        except BaseException:
            await mcp.close()
            await http.aclose()
            raise
    if skill is not None and skills_defer_loading:
        skill.tool.defer_loading = True
    toolkit = Toolkit(
        mcp=mcp,
        skill=skill,
        builtins=builtin_tools,
        agents=agents_task.result(),
        extra_tools=extra_tools,
        disable_tools=disable_tools,
        config=config,
        defer_loading=defer_loading,
    )
    toolkit._settle(asyncio.get_running_loop(), http=http)
    return toolkit


class Toolkit:
    """An assembled set of tools: declarations for any provider, `execute` for any call.

    Build one with `await create_toolkit(...)`; close it with `await close()` or `async with`.
    """

    def __init__(
        self,
        mcp: McpSource | None = None,
        skill: SkillSource | None = None,
        builtins: bool | Mapping[str, Any] | Sequence[Tool] | None = None,
        agents: Sequence[Tool] = (),
        extra_tools: Sequence[Tool] = (),
        a2a_config: Mapping[str, Any] | None = None,
        mcp_server_config: Mapping[str, Any] | None = None,
        disable_tools: Iterable[str] | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        skills: SkillSource | None = None,
        builtin_tools: Sequence[Tool] | None = None,
        agent_tools: Sequence[Tool] | None = None,
        defer_loading: bool = False,
    ) -> None:
        """The parts of a toolkit, each source's tools already loaded (`create_toolkit` builds
        them). `builtins` takes what `create_toolkit(builtins=)` takes, with the same default
        (`None`: the config's `builtins` block, else all ten on; `False`: none), or the
        built-in tools themselves. `a2a_config`/`mcp_server_config` are the serving profiles,
        as the config's `a2a`/`mcpServer` blocks; `config` is the whole config the toolkit came
        from. `skills`, `builtin_tools` and `agent_tools` are accepted for `skill`, `builtins`
        and `agents` (this package's earlier names). `defer_loading=True`: every tool is
        deferred (found by tool search, not declared up front)."""
        self._mcp = mcp
        self._skills = skill if skills is None else skills
        if builtin_tools is not None:
            builtins = builtin_tools
        elif builtins is None and config is not None:
            builtins = config.get("builtins")
        # The sources in assembly order; the built-ins give way to an extra tool of their name.
        self._builtins = StaticSource(_builtin_tools(builtins))
        self._extra = StaticSource(extra_tools)
        self._sources: list[Source] = []
        if mcp is not None:
            self._sources.append(McpServers(mcp))
        if self._skills is not None:
            self._sources.append(SkillTools(self._skills))
        self._sources += [
            self._builtins,
            StaticSource(agents if agent_tools is None else agent_tools),
            self._extra,
        ]
        self._registered = StaticSource()  # `register`: after the rest, not subject to disable
        self._disable = frozenset(disable_tools or ())
        self._config: dict[str, Any] = dict(config or {})
        if a2a_config is not None:
            self._config["a2a"] = dict(a2a_config)
        if mcp_server_config is not None:
            self._config["mcpServer"] = dict(mcp_server_config)
        self._by_name: dict[str, Tool] = {}
        self._tools: list[Tool] = []
        self._declarations: dict[str, list[dict[str, Any]]] = {}
        self._naming_warnings: set[str] = set()
        self._offers = Offers()
        self._closed = False
        self._defer_all = defer_loading
        self._search: Any = None  # the search index over `_tools`, built on first search
        # The HTTP clients of this toolkit's tools (HTTP, OpenAPI, A2A, webfetch): closed by
        # `close`, never shared with another toolkit.
        self._http = HttpClients()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: LoopThread | None = None
        for source in self._sources:
            source.on_change(self._assemble)
        self._assemble()

    # `Toolkit.create(...)` is `create_toolkit(...)` itself: one signature, documented there.
    create = staticmethod(create_toolkit)

    # -- assembly -------------------------------------------------------------------------------

    def _assemble(self) -> None:
        """Build `tools()` per the contract's order: MCP, skill, built-ins, agents, extras."""
        shadowed = {t.name for t in self._extra.tools()}
        ordered: list[Tool] = []
        for source in self._sources:
            if source is self._builtins:
                ordered.extend(t for t in source.tools() if t.name not in shadowed)
            else:
                ordered.extend(source.tools())
        by_name: dict[str, Tool] = {}
        report = self._warn_once  # a rebuild (an MCP server's list changed) repeats nothing
        add_unique((t for t in ordered if t.name not in self._disable), by_name, report=report)
        for renamed in self._disable.intersection(by_name):
            del by_name[renamed]  # a name the toolkit made (64-character cap, collision suffix)
        add_unique(self._registered.tools(), by_name, report=report)
        if self._defer_all:
            by_name = {name: t if t.defer_loading else _deferred(t) for name, t in by_name.items()}
        self._use(by_name)

    def _settle(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        http: HttpClients | None = None,
        thread: LoopThread | None = None,
    ) -> None:
        """Record the loop the sources were opened on (and the thread running it, when the
        toolkit owns one), and take over the HTTP clients its tools were built with."""
        self._loop = loop
        self._loop_thread = thread
        if http is not None:
            self._http = http

    @property
    def home_loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop this toolkit's sessions were opened on (`None` for a toolkit built
        by hand); its `*_sync` methods and a synchronous client run there."""
        return self._loop

    def _use(self, by_name: dict[str, Tool]) -> None:
        """Expose exactly `by_name`; the declarations and the search index are rebuilt lazily."""
        self._by_name = by_name
        self._tools = list(by_name.values())
        self._declarations = {}
        self._search = None

    def _warn_once(self, message: str) -> None:
        if message not in self._naming_warnings:
            self._naming_warnings.add(message)
            warn(message)

    def tools(self) -> list[Tool]:
        """The assembled tools, in assembly order."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        """The tool exposed under `name`, or `None`."""
        return self._by_name.get(name)

    def deferred(self) -> list[Tool]:
        """The deferred tools (`defer_loading`), in assembly order."""
        return [t for t in self._tools if t.defer_loading]

    def search_tools(self, query: str, limit: int = 5) -> list[ToolInfo]:
        """The tools best matching `query`, best first (at most `limit`): BM25 over name,
        title, description and parameter names and descriptions. Every tool offered to the
        model is searched, deferred or not (an MCP Apps app-only tool is not); the index is
        built on the first search after the tool set changed."""
        if not isinstance(query, str):
            raise ConfigTypeError(f"search_tools query must be a str, not {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigTypeError(f"search_tools limit must be a whole number >= 0, not {limit!r}")
        if self._search is None:
            from toolnexus._tool_search import ToolIndex

            self._search = ToolIndex(self._model_tools())
        return [_tool_info(t) for t in self._search.search(query, limit)]

    def _without_tools(self, names: Collection[str]) -> Toolkit:
        """This toolkit less the tools `names`, sharing its sources, prompts and clients (a
        served agent runs a caller's task without the tools its scopes do not allow). The view
        follows no later change of the tool set and is never closed on its own."""
        view = copy.copy(self)
        view._use({n: t for n, t in self._by_name.items() if n not in names})
        return view

    def _with_tool(self, tool: Tool) -> Toolkit:
        """This toolkit plus `tool` (a run's own tool, such as `search_tools`), sharing its
        sources and clients; a tool of the same name stays and `tool` is left out. Like
        `_without_tools`, the view follows no later change and is never closed on its own."""
        by_name = dict(self._by_name)
        by_name.setdefault(tool.name, tool)
        view = copy.copy(self)
        view._use(by_name)
        return view

    def register(self, *tools: Tool) -> Toolkit:
        """Add tools at runtime (first wins on a name clash, with a warning). Chainable."""
        _check_tools(tools, "register()")
        self._registered.add(add_unique(tools, dict(self._by_name)))
        self._assemble()
        return self

    async def add_agent(
        self,
        card_or_agent: Any,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        poll_every: float | None = None,
    ) -> Toolkit:
        """Fetch a remote A2A agent's card and register one tool per skill (raises on failure).

        `card_or_agent` is a card URL or an `Agent`; the keyword options override an `Agent`'s.
        """
        from toolnexus.a2a import Agent, agent, agent_tools

        if isinstance(card_or_agent, Agent):
            base = card_or_agent
            target = agent(
                base.card,
                headers=base.headers if headers is None else headers,
                timeout=base.timeout if timeout is None else timeout,
                poll_every=base.poll_every if poll_every is None else poll_every,
                defer_loading=base.defer_loading,
            )
        else:
            target = agent(card_or_agent, headers=headers, timeout=timeout, poll_every=poll_every)
        return self.register(*await agent_tools(target))

    # -- declarations ---------------------------------------------------------------------------

    def _declared(
        self, key: str, build: Callable[[Sequence[Tool]], list[dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        cached = self._declarations.get(key)
        if cached is None:
            cached = self._declarations[key] = build(self._model_tools())
        return cached

    def _model_tools(self) -> list[Tool]:
        """The tools offered to the model: all but the MCP Apps app-only ones (`_apps`)."""
        return [t for t in self._tools if for_the_model(t.metadata)]

    def to_openai(self, strict: bool = False, *, defer: bool = False) -> list[dict[str, Any]]:
        """OpenAI chat-completions `tools` (the same list object until the tool set changes).

        `strict=True`: schemas rewritten for OpenAI strict mode where that is lossless.
        `defer=True`: the deferred tools left out (the wire has no deferred form).
        """
        return self._declared(
            f"openai-{strict}-{defer}",
            lambda tools: adapters.to_openai(tools, strict=strict, defer=defer),
        )

    def to_openai_responses(
        self, strict: bool = False, *, defer: bool = False
    ) -> list[dict[str, Any]]:
        """OpenAI Responses-API `tools` (flat function entries); `defer=True`: deferred tools
        marked `defer_loading` and the hosted `tool_search` tool added."""
        return self._declared(
            f"responses-{strict}-{defer}",
            lambda tools: adapters.to_openai_responses(tools, strict, defer=defer),
        )

    def to_anthropic(self, strict: bool = False, *, defer: bool = False) -> list[dict[str, Any]]:
        """Anthropic messages `tools` (`strict=True`: strict schemas where lossless;
        `defer=True`: deferred tools marked `defer_loading` and the BM25 tool-search tool
        added)."""
        return self._declared(
            f"anthropic-{strict}-{defer}",
            lambda tools: adapters.to_anthropic(tools, strict, defer=defer),
        )

    def to_gemini(self, *, defer: bool = False) -> list[dict[str, Any]]:
        """Gemini `tools` (one element wrapping every declaration; `defer=True`: the deferred
        tools left out, the wire has no deferred form)."""
        return self._declared(
            f"gemini-{defer}", lambda tools: adapters.to_gemini(tools, defer=defer)
        )

    # -- skills and MCP state -------------------------------------------------------------------

    @property
    def skill_source(self) -> SkillSource | None:
        """The skill source, when the toolkit has one."""
        return self._skills

    @property
    def mcp_source(self) -> McpSource | None:
        """The loaded MCP servers, when the toolkit has an MCP config."""
        return self._mcp

    @property
    def config(self) -> dict[str, Any]:
        """The top-level config the toolkit was built from (`{}` without one)."""
        return self._config

    def skills_prompt(self) -> str:
        """The skill catalog for the system prompt (`""` without a skill source)."""
        return self._skills.prompt() if self._skills is not None else ""

    def mcp_status(self) -> dict[str, str]:
        """Server name → `connected`, `failed` or `disabled`."""
        return {name: state for source in self._sources for name, state in source.status().items()}

    def _mcp_source(self) -> McpSource:
        if self._mcp is None:
            raise ConfigError("this toolkit has no MCP servers")
        return self._mcp

    async def list_mcp_resources(self, server: str | None = None) -> list[McpResource]:
        """The resources of `server`, or of every connected server offering resources."""
        return await self._mcp_source().list_mcp_resources(server)

    async def list_mcp_resource_templates(
        self, server: str | None = None
    ) -> list[McpResourceTemplate]:
        """The resource templates of `server`, or of every server offering resources."""
        return await self._mcp_source().list_mcp_resource_templates(server)

    async def read_mcp_resource(self, uri: str, *, server: str | None = None) -> ToolResult:
        """Read `uri` from `server`, or from the server known to own it."""
        return await self._mcp_source().read_mcp_resource(uri, server=server)

    async def list_mcp_prompts(self, server: str | None = None) -> list[McpPrompt]:
        """The prompts of `server`, or of every connected server offering prompts."""
        return await self._mcp_source().list_mcp_prompts(server)

    async def get_mcp_prompt(
        self, server: str, name: str, arguments: dict[str, str] | None = None
    ) -> McpPromptResult:
        """The prompt `name` of `server`, rendered with `arguments`."""
        return await self._mcp_source().get_mcp_prompt(server, name, arguments)

    async def complete_mcp(
        self,
        server: str,
        ref: dict[str, str],
        argument: str,
        value: str,
        context: dict[str, str] | None = None,
    ) -> list[str]:
        """Completions from `server` for an argument of a prompt or resource template."""
        return await self._mcp_source().complete_mcp(server, ref, argument, value, context)

    def mcp_instructions_prompt(self) -> str:
        """The instructions of the connected MCP servers that opted in (`instructions: true`),
        as a system-prompt section; `""` when there are none."""
        return self._mcp.instructions_prompt() if self._mcp is not None else ""

    def mcp_servers(self) -> dict[str, McpServerState]:
        """Server name → `McpServerState(status, error, transport, tool_count)`."""
        return dict(self._mcp.servers) if self._mcp is not None else {}

    def mcp_auth_request(self, server: str) -> Request | None:
        """The sign-in `Request` (kind `authorization`, with the URL) of an MCP server whose
        status is `needs_auth`; `None` for any other server."""
        return self._mcp_source().auth_request(server)

    async def mcp_authorize(self, server: str, answer: Answer | Mapping[str, Any] | None) -> bool:
        """Finish the sign-in of a `needs_auth` MCP server with the host's `Answer` for its
        `mcp_auth_request` (`data`: `{"callbackUrl": <where the browser landed>}` or
        `{"code", "state"}`): the server connects, its tools join the toolkit and
        `on_tools_changed` fires. False when it was not waiting or the sign-in failed (its
        status and error say why). Same process only: the sign-in's proof key lives here."""
        return await self._mcp_source().authorize(server, answer)

    async def authorize(self, server: str, answer: Answer | Mapping[str, Any] | None) -> bool:
        """Finish the sign-in of a tool source waiting for authorization (an MCP server in
        `needs_auth`); see `mcp_authorize`."""
        return await self.mcp_authorize(server, answer)

    # -- execution ------------------------------------------------------------------------------

    async def execute(
        self, name: str, args: dict[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Run the tool `name`; every failure (unknown tool, bad arguments, a raise) is a result."""
        return await dispatch(self._by_name, name, args, ctx, self._http)

    def execute_sync(
        self, name: str, args: dict[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """`execute` for synchronous code; runs on the loop that owns the toolkit's sessions."""
        return self._run_sync(self.execute(name, args, ctx))

    def close_sync(self) -> None:
        """`close` for synchronous code; also stops the toolkit's background loop."""
        try:
            self._run_sync(self.close())
        finally:
            if self._loop_thread is not None:
                self._loop_thread.stop()
                self._loop_thread = None

    def _run_sync(self, coro: Awaitable[T]) -> T:
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or loop.is_closed() or not loop.is_running():
            # The loop that built the toolkit is gone (e.g. asyncio.run returned): own one.
            if self._loop_thread is None:
                self._loop_thread = LoopThread()
            loop = self._loop = self._loop_thread.loop
        if running is loop:
            if asyncio.iscoroutine(coro):
                coro.close()
            raise EventLoopError(
                "execute_sync() was called from the toolkit's own event loop; "
                "use `await toolkit.execute(...)` there"
            )
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)  # type: ignore[arg-type]
        return future.result()

    # -- serving --------------------------------------------------------------------------------

    async def serve(
        self,
        addr: str,
        *,
        client: Any = None,
        a2a: Mapping[str, Any] | None = None,
        on_task: Callable[..., Any] | None = None,
        mcp: Mapping[str, Any] | None = None,
        on_call: Callable[..., Any] | None = None,
        auth_token: str | None = None,
        limits: ServeLimits | None = None,
        auth: ResourceAuth | None = None,
    ) -> ServeHandle:
        """Serve this toolkit over HTTP as an MCP server (`mcp=` profile, at `/mcp`) and/or an
        A2A agent (`a2a=` profile, tasks fulfilled by `client`).

        The server runs on the caller's event loop (no thread of its own): keep the loop
        running while it serves. Returns once it accepts connections; `await handle.stop()`
        (or `async with`) ends it. `limits` (`toolnexus.serve.ServeLimits`) bounds timeouts,
        connections and buffering. `auth` (`toolnexus.serve.ResourceAuth`) makes it an
        OAuth-protected resource (metadata, JWT or introspected access tokens, scopes per tool).
        """
        from toolnexus.serve import serve_toolkit

        return await serve_toolkit(
            self,
            addr,
            client=client,
            a2a=a2a,
            on_task=on_task,
            mcp=mcp,
            on_call=on_call,
            auth_token=auth_token,
            limits=limits,
            auth=auth,
        )

    async def serve_stdio(
        self,
        mcp: Mapping[str, Any] | None = None,
        on_call: Callable[..., Any] | None = None,
    ) -> None:
        """Serve this toolkit as an MCP server over stdin/stdout until stdin closes."""
        from toolnexus.serve import serve_toolkit_stdio

        await serve_toolkit_stdio(self, mcp=mcp, on_call=on_call)

    async def serve_acp(self, client: Any) -> None:
        """Serve this toolkit with `client` as an ACP agent (Agent Client Protocol) over
        stdin/stdout until stdin closes: editors such as Zed launch it. Needs the `acp` extra."""
        from toolnexus.acp._serve import serve_acp

        await serve_acp(self, client)

    # -- what the served MCP server offers besides tools -----------------------------------------

    @property
    def offers(self) -> Offers:
        """The resources, prompts and completions this toolkit declares for its MCP server."""
        return self._offers

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        size: int | None = None,
    ) -> Callable[[F], F]:
        """Decorator: the function reads the resource `uri` when `serve`/`serve_stdio` serve
        this toolkit. A `uri` with `{variables}` (RFC 6570) is a resource template; the function
        takes the variables as keyword arguments. It returns `str` (text, `text/plain` unless
        `mime_type`), `bytes` (a blob), a contents dict, or a list of those. `meta` is `_meta`.
        """
        return self._offers.resource(
            uri,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=annotations,
            icons=icons,
            meta=meta,
            size=size,
        )

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Decorator: the function is the MCP prompt `name` (default: its own name); its
        parameters are the prompt's arguments (required when without default). It returns a
        `str` (one user message) or a list of messages: `str`s, content parts (images,
        files: embedded resources) or `{"role", "content"}` dicts in MCP wire form."""
        return self._offers.prompt(
            name, title=title, description=description, icons=icons, meta=meta
        )

    def completion(
        self, argument: str, *, prompt: str | None = None, template: str | None = None
    ) -> Callable[[F], F]:
        """Decorator: `fn(value, context) -> list[str]` completes `argument` of the prompt
        `prompt` or of the resource template `template` (`context`: the arguments given)."""
        return self._offers.completion(argument, prompt=prompt, template=template)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to `uri` (2025-11-25 sessions, 2026-07-28 listeners)."""
        await self._offers.notify_resource_updated(uri)

    async def notify_list_changed(self, what: str) -> None:
        """Tell connected clients that the `"resources"`, `"prompts"` or `"tools"` changed."""
        await self._offers.notify_list_changed(what)

    # -- life cycle -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Disconnect every MCP server (killing stdio process trees), end what this toolkit's
        `bash` calls left running (background jobs, `nohup`, detached descendants; a command
        still running too) and close the HTTP clients this toolkit's tools opened (another
        toolkit's processes and clients are left alone).

        Idempotent; safe from any task.
        """
        if self._closed:
            return
        self._closed = True
        try:
            # The last assembled first: what was added at run time, then back to the MCP servers.
            for source in reversed([*self._sources, self._registered]):
                await source.close()
        finally:
            try:
                # Imported here, not with this module, so that importing toolnexus stays light.
                from toolnexus._proctree import end_owned

                await end_owned(self._http)
            finally:
                await self._http.aclose()

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<Toolkit {len(self._tools)} tools>"


def _tool_info(tool: Tool) -> ToolInfo:
    from toolnexus.mcp_source import ToolInfo

    metadata = tool.metadata or {}
    title = metadata.get("title")
    annotations = metadata.get("annotations")
    return ToolInfo(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        title=title if isinstance(title, str) else None,
        annotations=annotations if isinstance(annotations, dict) else None,
    )


def _deferred(tool: Tool) -> Tool:
    """A deferred copy of `tool` (the source's own tool object is left as it is)."""
    clone = tool.renamed(tool.name)
    clone.defer_loading = True
    return clone


def _check_tools(tools: Sequence[Any], what: str) -> None:
    for t in tools:
        if not isinstance(t, Tool):
            hint = " (make one with define_tool(fn))" if callable(t) else ""
            raise ConfigTypeError(f"{what} takes Tool objects, not {type(t).__name__}{hint}")


def _builtin_tools(value: bool | Mapping[str, Any] | Sequence[Tool] | None) -> list[Tool]:
    """The built-ins a `builtins` value keeps (core.md §6.3); built-in tools already made (a
    list of `Tool`s) as they are. Anything else raises `ConfigError`."""
    if value is False:
        return []  # built-ins off: their modules are never loaded
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(t, Tool) for t in value)
    ):
        return list(value)
    from toolnexus.builtin import select_builtins

    return select_builtins(value)


def _effective_skills_filter(
    skills_filter: Mapping[str, bool] | None, disable_skills: Iterable[str] | None
) -> dict[str, bool] | None:
    merged = dict(skills_filter or {})
    for name in disable_skills or ():
        merged.setdefault(name, False)
    return merged or None


async def _with_mcp_skills(
    mcp: McpSource,
    skill: SkillSource | None,
    skills_filter: Mapping[str, bool] | None,
    sample_limit: int,
) -> SkillSource | None:
    """`skill` with the skills the MCP servers serve (Skills extension) added after its own,
    refreshed as the servers' listings go stale (`SkillSource.refresh`)."""
    served = await mcp.skills()
    if not served:
        return skill
    from toolnexus.skill import with_remote_skills

    def shape(skills: Sequence[Any]) -> list[tuple[str, str, str | None]]:
        return [(s.name, s.uri, s.description) for s in skills]

    merged = with_remote_skills(skill, served, filter=skills_filter, sample_limit=sample_limit)
    last = served

    async def refreshed() -> SkillSource | None:
        nonlocal last
        listed = await mcp.skills()
        # a server not connected now (reconnecting, failed) keeps the skills it last listed;
        # a disabled one has none
        status = mcp.status
        now = [
            s
            for name, state in status.items()
            if state != "disabled"
            for s in (listed if state == "connected" else last)
            if s.server_name == name
        ]
        if shape(now) == shape(last):
            return None
        last = now
        return with_remote_skills(skill, now, filter=skills_filter, sample_limit=sample_limit)

    merged.refresh_with(refreshed)
    return merged


async def _resolve_agents(agents: Sequence[Agent], config_block: Any) -> list[Tool]:
    """Fetch every agent's card concurrently; a failing agent is isolated with a warning."""
    if not agents and not config_block:
        return []
    from toolnexus.a2a import agent_tools, parse_agents_config

    all_agents = list(agents)
    if config_block:
        all_agents.extend(parse_agents_config(config_block))

    async def one(a: Agent) -> list[Tool]:
        try:
            return await agent_tools(a)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            warn(f'A2A agent "{a.card}" failed: {error_message(exc)}')
            return []

    results = await asyncio.gather(*(one(a) for a in all_agents))
    return [t for tools in results for t in tools]


def as_toolkit(tools: Toolkit | Tool | Iterable[Tool] | None) -> Toolkit | None:
    """A `Toolkit` as it is; a `Tool` or a list (any iterable) of them as a toolkit of exactly
    those tools (no built-ins). Anything else raises `TypeError` saying what to pass."""
    if tools is None or isinstance(tools, Toolkit):
        return tools
    if isinstance(tools, Tool):
        return Toolkit(builtins=False, extra_tools=[tools])
    if callable(getattr(tools, "execute", None)) and callable(getattr(tools, "tools", None)):
        return tools  # type: ignore[return-value]  # an object that works like a Toolkit
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise ConfigTypeError(
            f"toolkit must be a Toolkit or a list of Tool objects, not {type(tools).__name__}"
        )
    items = list(tools)
    for item in items:
        if not isinstance(item, Tool):
            raise ConfigTypeError(
                "toolkit as a list must hold Tool objects (define_tool/@tool make them), "
                f"not {type(item).__name__}"
            )
    return Toolkit(builtins=False, extra_tools=items)


def create_toolkit_sync(**options: Any) -> Toolkit:
    """Build a toolkit from synchronous code (a script, a notebook cell, a web handler).

    The toolkit lives on a background event loop it owns; use `execute_sync` and `close_sync`.
    """
    runner = LoopThread()
    try:
        toolkit = runner.run(create_toolkit(**options))
    except BaseException:
        runner.stop()
        raise
    toolkit._settle(runner.loop, thread=runner)
    return toolkit
