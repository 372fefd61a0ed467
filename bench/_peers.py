"""The peers' virtualenvs: one per peer, outside the repo, created with pip on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CACHE_DIR = Path(
    os.environ.get("TOOLNEXUS_BENCH_CACHE") or Path.home() / ".cache" / "toolnexus-bench"
)
VENVS_DIR = CACHE_DIR / "venvs"
STAMP = ".bench-installed"
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class Peer:
    """A framework measured against this repo, living in its own virtualenv."""

    name: str  # the row name and the venv folder name
    requirements: tuple[str, ...]
    distribution: str  # whose version the row reports
    import_name: str  # what `import` measures for the import-time figure
    runner: str  # script under bench/runners/
    runner_args: tuple[str, ...] = ()

    @property
    def venv(self) -> Path:
        return VENVS_DIR / self.name

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


PEERS: tuple[Peer, ...] = (
    # The published package has this repo's core API, so this repo's runner drives it.
    Peer(
        "toolnexus_pypi",
        ("toolnexus",),
        "toolnexus",
        "toolnexus",
        "toolnexus_run.py",
        ("--name", "toolnexus_pypi"),
    ),
    Peer("openai_agents", ("openai-agents",), "openai-agents", "agents", "peer_openai_agents.py"),
    Peer(
        "pydantic_ai",
        ("pydantic-ai-slim[openai,mcp]",),
        "pydantic-ai-slim",
        "pydantic_ai",
        "peer_pydantic_ai.py",
    ),
)


def ensure_venv(peer: Peer, *, log: bool = True) -> str | None:
    """Create `peer`'s virtualenv and install it; `None` when ready, else why it is not."""
    stamp = peer.venv / STAMP
    wanted = json.dumps(list(peer.requirements))
    if peer.python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return None
    if log:
        print(f"[bench] installing {peer.name} into {peer.venv} ...", file=sys.stderr, flush=True)
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(peer.venv)],
        [str(peer.python), "-m", "pip", "install", "-q", "--upgrade", "pip"],
        [str(peer.python), "-m", "pip", "install", "-q", *peer.requirements],
    ]
    VENVS_DIR.mkdir(parents=True, exist_ok=True)
    for step in steps:
        try:
            done = subprocess.run(
                step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot install {' '.join(peer.requirements)}: {exc}"
        if done.returncode != 0:
            lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines()]
            tail = [ln for ln in lines if ln and set(ln) != {"^"}][-2:]
            return f"cannot install {' '.join(peer.requirements)}: {' / '.join(tail)}"
    stamp.write_text(wanted)
    return None


def main() -> None:
    """`python bench/_peers.py` installs every peer (or those named) and says how it went."""
    wanted = set(sys.argv[1:])
    for peer in PEERS:
        if wanted and peer.name not in wanted:
            continue
        problem = ensure_venv(peer)
        print(f"{peer.name}: {problem or 'ready'}")


if __name__ == "__main__":
    main()
