"""What every subcommand shares: the error type, logging, toolkit flags and opening a toolkit."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from toolnexus._log import PROGRESS
from toolnexus.errors import ToolnexusError

if TYPE_CHECKING:
    from toolnexus.toolkit import Toolkit
    from toolnexus.types import Tool

__all__ = [
    "CliError",
    "add_model_flags",
    "add_toolkit_flags",
    "config_path",
    "configure_logging",
    "error_line",
    "failed_servers",
    "flagged_toolkit",
    "on_signals",
    "open_toolkit",
    "require_servers",
    "run_async",
    "server_failure_lines",
]

USAGE_ERROR = 2


class CliError(ToolnexusError):
    """A failure the user can fix: printed as one `toolnexus: error: ...` line, exit code 2."""

    def __init__(self, message: str, code: int = USAGE_ERROR) -> None:
        super().__init__(message)
        self.code = code


def error_line(message: str) -> str:
    """The one line an error is reported as (never more: later lines are folded in)."""
    return "toolnexus: error: " + " ".join(message.split())


class _Formatter(logging.Formatter):
    """Warnings already carry the contract's `[toolnexus] ` prefix; add it to the rest."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if text.startswith("[toolnexus]") else f"[toolnexus] {text}"


def configure_logging(verbosity: int) -> None:
    """Send the `toolnexus` logger to stderr: warnings and progress (an MCP server still
    starting) by default, `-v` info, `-vv` debug."""
    logger = logging.getLogger("toolnexus")
    level = logging.DEBUG if verbosity >= 2 else logging.INFO
    logger.setLevel(level)
    handler = next((h for h in logger.handlers if getattr(h, "_toolnexus_cli", False)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Formatter("%(message)s"))
        handler._toolnexus_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    for old in [f for f in handler.filters if isinstance(f, _WarningsAndProgress)]:
        handler.removeFilter(old)
    if verbosity <= 0:
        handler.addFilter(_WarningsAndProgress())
    logger.propagate = False


class _WarningsAndProgress(logging.Filter):
    """Without `-v`: warnings and errors, and the INFO records marked as progress."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or bool(getattr(record, PROGRESS, False))


# -- flags ----------------------------------------------------------------------------------------


DEFAULT_CONFIG = "mcp.json"


def add_toolkit_flags(parser: argparse.ArgumentParser, *, skip_failed: bool = True) -> None:
    """`--config`, `--skills`, `--skip-failed` and `--builtins`/`--no-builtins`: the same
    flags and defaults for `tools`, `run` and `serve`."""
    group = parser.add_argument_group("tool sources")
    group.add_argument(
        "--config",
        metavar="PATH",
        help="an mcp.json-style config: MCP servers, and the builtins/agents/a2a/mcpServer "
        f"blocks (default: ./{DEFAULT_CONFIG} when it exists)",
    )
    group.add_argument(
        "--skills",
        metavar="DIR",
        action="append",
        default=[],
        help="a folder searched for SKILL.md files (repeatable; default: none)",
    )
    if skip_failed:
        group.add_argument(
            "--skip-failed",
            action="store_true",
            help="go on when an MCP server fails to start (its tools are left out); else exit 2",
        )
    group.add_argument(
        "--builtins",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the ten built-in tools (bash, read, write, ...); default: on, unless the "
        'config\'s "builtins" block turns them off; --no-builtins leaves them out',
    )


def config_path(args: argparse.Namespace) -> str | None:
    """`--config`, else `./mcp.json` when it exists, else `None` (no MCP servers)."""
    if args.config is not None:
        return str(args.config)
    return DEFAULT_CONFIG if os.path.isfile(DEFAULT_CONFIG) else None


def add_model_flags(parser: argparse.ArgumentParser, *, required: bool, title: str) -> None:
    """The model endpoint: `--base-url`, `--style`, `--model`, `--api-key`, `--system`, ..."""
    group = parser.add_argument_group(title)
    group.add_argument(
        "--base-url", required=required, metavar="URL", help="e.g. https://api.openai.com/v1"
    )
    group.add_argument(
        "--style",
        required=required,
        choices=("openai", "anthropic", "openai-responses"),
        help="the wire dialect",
    )
    group.add_argument(
        "--model", required=required, metavar="M", help="the model id, sent verbatim"
    )
    group.add_argument(
        "--api-key",
        metavar="KEY",
        help="default: OPENAI_API_KEY / ANTHROPIC_API_KEY by style, or OPENROUTER_API_KEY",
    )
    group.add_argument("--system", metavar="TEXT", help="a system prompt (before the skill list)")
    group.add_argument(
        "--max-turns", type=_positive_int, default=10, metavar="N", help="LLM calls per run (10)"
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


# -- the toolkit ----------------------------------------------------------------------------------


async def open_toolkit(
    *,
    config: Any = None,
    skills: Sequence[str] = (),
    builtins: bool | None = None,
    extra_tools: Sequence[Tool] = (),
    wait_for: Callable[..., Any] | None = None,
) -> Toolkit:
    """Build a toolkit; bad input (an unreadable config, a missing skills folder) is a `CliError`.

    `builtins=None` follows the config's `builtins` block (all on without one).
    """
    from toolnexus.toolkit import create_toolkit

    for folder in skills:
        if not await asyncio.to_thread(os.path.isdir, folder):
            raise CliError(f"skills folder not found: {folder}")
    try:
        with _reported_here():
            return await create_toolkit(
                mcp_config=config,
                skills_dir=list(skills) or None,
                builtins=builtins,
                extra_tools=list(extra_tools) or None,
                wait_for=wait_for,
            )
    except ValueError as exc:  # an unreadable or malformed config, a bad `builtins` block, ...
        raise CliError(str(exc)) from None


class _DropServerFailures(logging.Filter):
    """Drops the toolkit's "MCP server ... failed" warning: the command reports those itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _SERVER_FAILED.match(record.getMessage()) is None


_SERVER_FAILED = re.compile(r'\[toolnexus\] MCP server ".*" failed: ')


@contextmanager
def _reported_here() -> Iterator[None]:
    logger = logging.getLogger("toolnexus")
    drop = _DropServerFailures()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


@asynccontextmanager
async def flagged_toolkit(
    args: argparse.Namespace, *, config: Any = None, wait_for: Callable[..., Any] | None = None
) -> AsyncIterator[Toolkit]:
    """The toolkit the tool-source flags describe (`config` overrides `--config`), closed on exit.

    An MCP server that failed to start stops the command (one line, exit 2) unless
    `--skip-failed`.
    """
    toolkit = await open_toolkit(
        config=args.config if config is None else config,
        skills=args.skills,
        builtins=args.builtins,
        wait_for=wait_for,
    )
    async with toolkit:
        require_servers(toolkit, skip_failed=args.skip_failed)
        yield toolkit


def failed_servers(toolkit: Toolkit) -> dict[str, str]:
    """Every MCP server that failed to start, with its reason."""
    return {
        name: state.error or "failed"
        for name, state in toolkit.mcp_servers().items()
        if state.status == "failed"
    }


def server_failure_lines(failed: dict[str, str]) -> list[str]:
    return [f'MCP server "{name}" failed: {reason}' for name, reason in failed.items()]


def require_servers(toolkit: Toolkit, *, skip_failed: bool) -> None:
    """Refuse to go on when an MCP server failed (one line, exit 2) unless `--skip-failed`, which
    turns each failure into a warning line."""
    lines = server_failure_lines(failed_servers(toolkit))
    if lines and not skip_failed:
        raise CliError("; ".join(lines) + " (pass --skip-failed to start without it)")
    for line in lines:
        print(f"toolnexus: warning: {line}", file=sys.stderr, flush=True)


# -- signals --------------------------------------------------------------------------------------

# signal -> callbacks, innermost last: `on_signals` blocks nest (a run inside the REPL inside the
# command), and leaving one hands the signal back to the block around it.
_signal_stacks: dict[signal.Signals, list[Callable[[], None]]] = {}


@contextmanager
def on_signals(callback: Callable[[], None], *signals: signal.Signals) -> Iterator[None]:
    """Call `callback` on the running loop when one of `signals` arrives (POSIX), then restore."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in signals:
        try:
            loop.add_signal_handler(sig, callback)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, no POSIX
            continue
        _signal_stacks.setdefault(sig, []).append(callback)
        installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            stack = _signal_stacks[sig]
            stack.remove(callback)
            if stack:
                loop.add_signal_handler(sig, stack[-1])
            else:
                loop.remove_signal_handler(sig)


def run_async(main: Coroutine[Any, Any, int]) -> int:
    """Run a subcommand's coroutine. SIGINT/SIGTERM cancel it, so every `async with` closes
    (MCP servers stopped) before the command exits with 130/143."""
    received: list[signal.Signals] = []

    async def guarded() -> int:
        task = asyncio.current_task()
        assert task is not None

        def stop(sig: signal.Signals) -> Callable[[], None]:
            def handler() -> None:
                received.append(sig)
                task.cancel()

            return handler

        with (
            on_signals(stop(signal.SIGINT), signal.SIGINT),
            on_signals(stop(signal.SIGTERM), signal.SIGTERM),
        ):
            return await main

    try:
        return asyncio.run(guarded())
    except (asyncio.CancelledError, KeyboardInterrupt):
        sig = received[-1] if received else signal.SIGINT
        return 128 + int(sig)
