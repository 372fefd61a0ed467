"""The `toolnexus` command: `tools`, `run`, `serve`, `demo` and `auth`.

`main(argv)` returns the exit code: 0 on success, 2 for an error the user can fix (printed as one
`toolnexus: error: ...` line on stderr), 130 when interrupted. Subcommands import the library's
heavier parts only when they run, so `toolnexus --help` stays quick.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from toolnexus._secrets import RedactingStream
from toolnexus._version import __version__
from toolnexus.cli import _auth, _demo, _run, _serve, _tools
from toolnexus.cli._common import CliError, configure_logging, error_line

__all__ = ["build_parser", "main"]

INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolnexus",
        description=(
            "Every kind of tool for any LLM through one interface: MCP servers, skills, "
            "Python functions, HTTP endpoints, A2A agents and built-ins. "
            "Start with `toolnexus demo`."
        ),
    )
    parser.add_argument("--version", action="version", version=f"toolnexus {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more log output on stderr (-v info, -vv debug); warnings are always shown",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (_demo, _tools, _run, _serve, _auth):
        command = module.add_parser(sub)
        # `-v` also after the command name; SUPPRESS keeps a top-level `-v` from being reset.
        command.add_argument(
            "-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more log output"
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # Whatever a command prints passes `redact`: no secret the run learns reaches the terminal.
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)  # type: ignore[assignment]
    configure_logging(args.verbose)
    try:
        code: int = args.handler(args)
    except CliError as exc:
        print(error_line(str(exc)), file=sys.stderr, flush=True)
        return exc.code
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:  # `toolnexus tools --json | head`: the reader left; not an error
        _silence_stdout()
        return 0
    finally:
        sys.stdout, sys.stderr = streams
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
