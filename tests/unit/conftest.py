"""Fixtures shared by unit tests: the placement engine's example world, the revision log on both backends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from apiserver.store import LogStore
from placement.engine import PlacementEngine
from tests.conftest import postgres_schema
from tests.placement_world import example1_engine


@pytest.fixture
def example1() -> PlacementEngine:
    """The engine loaded with KubeStellar's example1 world (tests/placement_world.py)."""
    return example1_engine()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogStore]:
    """A fresh revision log on SQLite, and on a fresh schema of the local PostgreSQL (skipped, saying why,
    without one)."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    with postgres_schema() if request.param == "postgresql" else contextlib.nullcontext(url) as chosen:
        s = LogStore(chosen)
        yield s
        s.close()
