"""`toolnexus run`: talk to a model with the toolkit, streaming the answer and every tool call."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from toolnexus.cli._ask import TerminalAnswers
from toolnexus.cli._common import (
    CliError,
    add_model_flags,
    add_toolkit_flags,
    config_path,
    flagged_toolkit,
    on_signals,
    run_async,
)
from toolnexus.cli._render import Printer

if TYPE_CHECKING:
    from toolnexus.client import Client
    from toolnexus.toolkit import Toolkit

__all__ = ["add_parser", "describe_run_error", "make_client", "run_run"]

DESCRIPTION = """\
Run the tool-calling loop against an OpenAI- or Anthropic-style endpoint with the toolkit the
flags describe. Without --once it is a REPL that remembers the conversation: type a prompt, watch
the answer stream and each tool call and result as it happens; Ctrl-C stops the current answer;
Ctrl-D or `exit` quits and closes every MCP server. The answer goes to stdout, tool activity to
stderr."""

_QUIT = frozenset({"exit", "quit", ":q"})
INTERRUPTED = 130


def add_parser(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "run",
        help="chat with a model that can use the tools (REPL or --once)",
        description=DESCRIPTION,
    )
    add_model_flags(parser, required=True, title="model endpoint")
    add_toolkit_flags(parser)
    parser.add_argument("--once", metavar="PROMPT", help="answer one prompt, then exit")
    parser.set_defaults(handler=run_run)
    return parser


def make_client(args: argparse.Namespace, **options: Any) -> Client:
    """The client the model flags describe, with its API key checked now (the rule is the
    client's own: `--api-key`, else the environment variable of the style)."""
    from toolnexus.client import create_client
    from toolnexus.client._errors import MissingApiKey

    try:
        client = create_client(
            base_url=args.base_url,
            style=args.style,
            model=args.model,
            api_key=args.api_key,
            system_prompt=args.system,
            max_turns=args.max_turns,
            **options,
        )
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from None
    # Fail now rather than after starting MCP servers (or, serving A2A, on every task).
    try:
        client.check_api_key()
    except MissingApiKey as exc:
        raise CliError(str(exc)) from None
    return client


def describe_run_error(exc: BaseException, base_url: str) -> str | None:
    """A one-line description of a failed run that the user can act on, or `None` if unknown."""
    from toolnexus.errors import (
        MissingApiKey,
        ProviderConnectionError,
        ProviderError,
        RunTimeout,
        public_url,
    )

    if isinstance(exc, ProviderError | RunTimeout | MissingApiKey):
        return str(exc)
    if isinstance(exc, ProviderConnectionError):
        # The base URL the user typed, not the endpoint path the dialect appends to it.
        return f"cannot reach {public_url(base_url)}: {exc.reason}"
    return None


_SOURCE_ORDER = ("mcp", "skill", "builtin", "a2a", "native", "http", "custom")


def exposed_sources(toolkit: Toolkit) -> str:
    """One line saying which tool sources the model is given, e.g.
    `tools: mcp 3, builtin 10 (bash, read, …; --no-builtins drops them)`."""
    by_source: dict[str, list[str]] = {}
    for t in toolkit.tools():
        by_source.setdefault(t.source, []).append(t.name)
    if not by_source:
        return "tools: none"
    order = sorted(
        by_source,
        key=lambda s: _SOURCE_ORDER.index(s) if s in _SOURCE_ORDER else len(_SOURCE_ORDER),
    )
    parts = []
    for source in order:
        names = by_source[source]
        part = f"{source} {len(names)}"
        if source == "builtin":
            part += f" ({', '.join(names)}; --no-builtins drops them)"
        parts.append(part)
    return "tools: " + ", ".join(parts)


def run_run(args: argparse.Namespace) -> int:
    args.config = config_path(args)
    return run_async(_run(args))


async def _run(args: argparse.Namespace) -> int:
    printer = Printer()
    reader = _LineReader()
    # A tool that needs the human (the `question` built-in, an MCP elicitation) is answered at
    # the terminal: always in the REPL, with --once only when a terminal is attached.
    interactive = args.once is None or sys.stdin.isatty()
    answers = TerminalAnswers(reader.read, printer) if interactive else None
    client = make_client(args, wait_for=answers)
    async with client, flagged_toolkit(args, wait_for=answers) as toolkit:
        printer.note(printer.dim(exposed_sources(toolkit)))
        if args.once is not None:
            outcome = await _answer(
                client, toolkit, args.once, printer, args, session=None, interactive=interactive
            )
            return 0 if outcome == "ok" else INTERRUPTED if outcome == "cancelled" else 2
        with _line_editing():
            return await _repl(client, toolkit, printer, reader, args)


async def _repl(
    client: Client,
    toolkit: Toolkit,
    printer: Printer,
    reader: _LineReader,
    args: argparse.Namespace,
) -> int:
    count = len(toolkit.tools())
    from toolnexus.errors import public_url

    where = public_url(args.base_url)
    tools = f"{count} tool{'s' if count != 1 else ''}"
    printer.note(printer.dim(f"{args.model} via {where} with {tools}. Ctrl-D or `exit` quits."))
    session = f"cli-{uuid.uuid4().hex}"
    while True:
        line = await reader.read("you> ")
        if line is None:  # Ctrl-D, or Ctrl-C at the prompt
            printer.note("")
            return 0
        prompt = line.strip()
        if not prompt:
            continue
        if prompt in _QUIT:
            return 0
        await _answer(client, toolkit, prompt, printer, args, session=session)


async def _answer(
    client: Client,
    toolkit: Toolkit,
    prompt: str,
    printer: Printer,
    args: argparse.Namespace,
    *,
    session: str | None,
    interactive: bool = True,
) -> str:
    """Stream one answer. Returns `ok`, `cancelled` or `failed`; a fatal error raises `CliError`."""
    from toolnexus.client import RunCancelled
    from toolnexus.client._errors import MissingApiKey

    cancel = asyncio.Event()
    result = None
    try:
        with on_signals(cancel.set, signal.SIGINT):
            async for event in client.stream(prompt, toolkit, id=session, cancel=cancel):
                match event["type"]:
                    case "text":
                        printer.text(event["delta"])
                    case "tool_call":
                        found = toolkit.get(event["name"])
                        source = found.source if found else None
                        printer.tool_call(event["name"], source, event["args"])
                    case "tool_result":
                        printer.tool_result(event["name"], event["output"], event["is_error"])
                    case "pending" if not interactive:
                        for line in str(event["request"].prompt).splitlines() or [""]:
                            printer.note(f"  {printer.bold('?')} {line}")
                    case "done":
                        result = event["result"]
    except RunCancelled:
        printer.note(printer.dim("(stopped)"))
        return "cancelled"
    except Exception as exc:
        described = describe_run_error(exc, args.base_url)
        if described is None:
            raise
        if session is None or isinstance(exc, MissingApiKey):
            raise CliError(described) from None
        printer.note(f"toolnexus: error: {described}")
        return "failed"
    finally:
        printer.end_answer()
    if result is not None and result.status == "pending":
        printer.note("(the run waits for an answer: run without --once, in a terminal, to give it)")
    if result is not None and result.status == "incomplete":
        printer.note(f"(stopped after {result.turns} model turns: --max-turns {args.max_turns})")
    return "ok"


@contextlib.contextmanager
def _line_editing() -> Iterator[None]:
    """Arrow keys and history at the prompt when a terminal is attached (readline is optional).

    Leaving restores the terminal's modes: quitting with Ctrl-C leaves readline mid-line in its
    reader thread, with the terminal still in its raw mode.
    """
    if not sys.stdin.isatty():
        yield
        return
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 - importing it is what turns line editing on
    try:
        import termios

        saved = termios.tcgetattr(sys.stdin.fileno())
    except (ImportError, OSError):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)


class _LineReader:
    """Reads prompt lines in a daemon thread so the event loop keeps serving MCP sessions and
    signals while the user types. `None` means end of input (Ctrl-D) or Ctrl-C at the prompt.

    Ctrl-C cannot stop a thread blocked in `input()`: after an interrupted read that thread keeps
    reading, and the next `read` takes its line instead of starting a second reader.
    """

    def __init__(self) -> None:
        self._line: asyncio.Future[str | None] | None = None

    def _start(self, prompt: str) -> asyncio.Future[str | None]:
        loop = asyncio.get_running_loop()
        line: asyncio.Future[str | None] = loop.create_future()

        def deliver(value: str | None) -> None:
            if not line.done():
                line.set_result(value)

        def work() -> None:
            try:
                value: str | None = input(prompt)
            except (EOFError, OSError, ValueError):
                value = None
            with contextlib.suppress(RuntimeError):  # the loop is gone: the command is exiting
                loop.call_soon_threadsafe(deliver, value)

        threading.Thread(target=work, name="toolnexus-input", daemon=True).start()
        return line

    async def read(self, prompt: str) -> str | None:
        interrupted = asyncio.Event()
        with on_signals(interrupted.set, signal.SIGINT):  # before the prompt can be seen
            if self._line is None:
                self._line = self._start(prompt)
            else:  # the reader of an interrupted read is still waiting for its line
                print(prompt, end="", flush=True)
            line = self._line
            stop: asyncio.Future[Any] = asyncio.ensure_future(interrupted.wait())
            waiting: set[asyncio.Future[Any]] = {line, stop}
            try:
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
        if not line.done():
            return None  # Ctrl-C
        self._line = None
        return line.result()
