"""The test media (`tests/fixtures/media/`) and its goldens.

Tests compare against the golden files, never a re-encoding of their own.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIXTURE_PNG", "GOLDEN_B64", "GOLDEN_SHA256", "MEDIA_DIR"]

MEDIA_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "media"
FIXTURE_PNG = MEDIA_DIR / "fixture.png"
GOLDEN_B64 = (MEDIA_DIR / "fixture.png.base64").read_text().strip()
GOLDEN_SHA256 = (MEDIA_DIR / "fixture.png.sha256").read_text().split()[0]
