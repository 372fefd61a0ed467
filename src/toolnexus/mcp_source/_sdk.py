"""The MCP SDK, imported in a thread the first time a server connects.

Importing the SDK takes over a second; a stdio server's child starts up meanwhile, and reading a
config stays light. A plain thread and a `concurrent.futures.Future`, not `asyncio.to_thread`:
the import may be awaited from several event loops (e.g. `create_toolkit_sync`), and a
cancelled waiter must not cancel it for the others.

Once `load_sdk()` has returned, the SDK side of the client (`_connection` and the modules that
import it: `_features`, `_rounds`) is in `sys.modules`: code imports it by name inside its
functions, a dictionary lookup that gives mypy and readers the real types.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import threading

_loaded = False  # `toolnexus.mcp_source._connection` (and so the SDK) is imported
_sdk_import: concurrent.futures.Future[None] | None = None
_sdk_lock = threading.Lock()


def start_sdk_import() -> concurrent.futures.Future[None]:
    """Start importing the MCP SDK in a thread, once per process."""
    global _sdk_import
    with _sdk_lock:
        if _sdk_import is None:
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.set_running_or_notify_cancel()  # running: no waiter can cancel it

            def run() -> None:
                global _loaded
                try:
                    importlib.import_module("toolnexus.mcp_source._connection")
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    _loaded = True
                    future.set_result(None)

            threading.Thread(target=run, name="toolnexus-mcp-sdk-import", daemon=True).start()
            _sdk_import = future
        return _sdk_import


def sdk_loaded() -> bool:
    """Whether the SDK side has been imported (a server has connected)."""
    return _loaded


async def load_sdk() -> None:
    """Return once the SDK side is imported, starting the import if it has not begun."""
    if not _loaded:
        await asyncio.wrap_future(start_sdk_import())
