"""Users without DBOS pay nothing for durable runs: the core never imports it."""

from __future__ import annotations

import subprocess
import sys


def test_the_core_never_imports_dbos() -> None:
    code = (
        "import sys, toolnexus, toolnexus.client, toolnexus.client._loop, toolnexus.toolkit;"
        "assert 'dbos' not in sys.modules and 'toolnexus.durable' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
