"""Agents test fixtures: the scripted world and a virtual clock."""

from __future__ import annotations

import pytest
from agents_driver import VirtualClock


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()
