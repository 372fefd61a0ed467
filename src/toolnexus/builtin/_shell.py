"""`bash`: one shell command in a process tree of its own, output merged, killed whole on a
limit."""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any

from toolnexus._aio import Expired, Signalled, bounded
from toolnexus._http import call_owner
from toolnexus._numbers import format_number
from toolnexus._proctree import ProcessTree, owned_tree, start_uncancelled
from toolnexus.builtin._common import (
    Settings,
    ToolError,
    budget,
    builtin_tool,
    optional_number,
    optional_str,
    prop,
    required_str,
    tool_schema,
)
from toolnexus.builtin._output import HINT_BASH, CappedBuffer
from toolnexus.builtin._paths import start_dir
from toolnexus.types import Tool, ToolContext, ToolResult

DEFAULT_TIMEOUT_MS = 60000.0
_CHUNK = 65536
# After the tree is killed, how long to keep reading output still buffered in the pipe (a
# process that escaped the tree, see `_proctree`, could hold the pipe open forever).
_DRAIN_SECONDS = 1.0

DESCRIPTION = (
    "Run a shell command (bash, or /bin/sh when bash is missing) and return its combined "
    "stdout and stderr. Runs in the workspace (or `workdir`); killed with all its children "
    "after `timeout` ms (default 60000). Long output is cut: redirect it to a file and read "
    "that instead. Non-zero exit codes are reported as errors."
)

SCHEMA = tool_schema(
    {
        "command": prop("string", "The command line to run."),
        "workdir": prop(
            "string", "Directory to run in (default: the workspace or current directory)."
        ),
        "timeout": prop("number", "Time limit in milliseconds (default 60000)."),
        "description": prop("string", "A few words saying what the command does."),
    },
    required=["command"],
)


@functools.cache
def _shell() -> str:
    return "/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh"


def shell_argv(settings: Settings | None = None) -> list[str]:
    """The command prefix `bash` runs a command with: the `shell` option verbatim, else
    `[bash or sh, "-c"]`."""
    if settings is not None and settings.shell:
        return list(settings.shell)
    return [_shell(), "-c"]


def _workdir(settings: Settings, workdir: str | None) -> str:
    path = start_dir(settings, workdir)
    if workdir and not os.path.isdir(path):
        raise ToolError(f"workdir is not a directory: {workdir}")
    return path


async def _stop(
    proc: asyncio.subprocess.Process, tree: ProcessTree, reader: asyncio.Future[Any]
) -> None:
    """Kill the whole tree (descendants that left the group included) and stop reading.

    Never waits on `proc.wait()`: asyncio's wait also waits for the pipes to close, which a
    process outside the tree could delay forever."""
    await tree.kill(proc.pid)
    await asyncio.wait({reader}, timeout=_DRAIN_SECONDS)
    if not reader.done():
        # Something still holds the pipe open: stop reading and close the pipes ourselves
        # (asyncio offers no public call), so no descriptor leaks.
        reader.cancel()
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()


def bash_tool(settings: Settings) -> Tool:
    argv = shell_argv(settings)
    shown = " ".join(argv)  # `metadata["shell"]` of every result that ran

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = required_str(args, "command")
        if ctx.cancelled:
            return ToolResult("bash: command cancelled\n", True)
        limit_ms = budget(optional_number(args, "timeout"), ctx, DEFAULT_TIMEOUT_MS, 1000.0)
        cwd = await asyncio.to_thread(_workdir, settings, optional_str(args, "workdir"))
        output = CappedBuffer(settings.max_output_bytes)
        # A toolkit's calls go inside its tree (`call_owner` stands for the toolkit), so that
        # its close ends what they leave running in the background.
        owner = call_owner.get()
        tree = ProcessTree(inside=None if owner is None else owned_tree(owner))

        async def discard(proc: asyncio.subprocess.Process) -> None:
            await tree.kill(proc.pid)
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()

        spawning = asyncio.create_subprocess_exec(
            *argv,
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd,
            env=tree.env(),
            start_new_session=True,
        )
        proc = await start_uncancelled(spawning, discard)

        async def read_all() -> int:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(_CHUNK):
                output.add(chunk)
            return await proc.wait()

        reader = asyncio.ensure_future(read_all())
        try:
            # Shielded: at the limit the reader goes on draining while the tree is killed.
            code = await bounded(
                asyncio.shield(reader), signal=ctx.signal, timeout=limit_ms / 1000.0, unwind_s=0
            )
        except (Signalled, Expired) as stopped:
            await _stop(proc, tree, reader)
            if isinstance(stopped, Signalled):
                return ToolResult(
                    "bash: command cancelled\n" + output.text(HINT_BASH), True, {"shell": shown}
                )
            return ToolResult(
                f"bash: command timed out after {format_number(limit_ms)}ms\n"
                + output.text(HINT_BASH),
                True,
                {"shell": shown, "timedOut": True, "killedTree": True},
            )
        except asyncio.CancelledError:
            await asyncio.shield(_stop(proc, tree, reader))
            raise

        if code < 0:  # killed by a signal: report it the way a shell would
            code = 128 - code
        text = output.text(HINT_BASH)
        if code == 0:
            return ToolResult(text, False, {"shell": shown, "exitCode": 0})
        return ToolResult(
            f"{text}\nbash: command exited with code {code}",
            True,
            {"shell": shown, "exitCode": code},
        )

    return builtin_tool("bash", DESCRIPTION, SCHEMA, run)
