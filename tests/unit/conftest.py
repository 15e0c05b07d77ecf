"""Fixtures of the placement engine's unit tests."""

from __future__ import annotations

import pytest

from placement.engine import PlacementEngine
from tests.placement_world import example1_engine


@pytest.fixture
def example1() -> PlacementEngine:
    """The engine loaded with KubeStellar's example1 world (tests/placement_world.py)."""
    return example1_engine()
