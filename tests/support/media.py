"""The shared test media (`shared/fixtures/media/`) and its goldens.

CI clones the repo beside `shared/`; a work tree may sit deeper, so the nearest ancestor holding
`shared/fixtures` wins. Tests compare against the golden files, never a re-encoding of their own.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIXTURE_PNG", "GOLDEN_B64", "GOLDEN_SHA256", "MEDIA_DIR", "SHARED"]


def _find_shared() -> Path:
    repo = Path(__file__).resolve().parents[2]
    for base in repo.parents:
        candidate = base / "shared"
        if (candidate / "fixtures").is_dir():
            return candidate
    raise RuntimeError(f"no shared/fixtures beside {repo} or any of its ancestors")


SHARED = _find_shared()
MEDIA_DIR = SHARED / "fixtures" / "media"
FIXTURE_PNG = MEDIA_DIR / "fixture.png"
GOLDEN_B64 = (MEDIA_DIR / "fixture.png.base64").read_text().strip()
GOLDEN_SHA256 = (MEDIA_DIR / "fixture.png.sha256").read_text().split()[0]
