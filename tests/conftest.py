"""Shared fixtures: a real hub per test session (and fresh ones for tests that restart it)."""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness import Hub, free_port

SHARED = Path(__file__).resolve().parents[2] / "shared"


PG_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres connect_timeout=3"


@contextlib.contextmanager
def postgres_schema() -> Iterator[str]:
    """The URL of a fresh schema in the local PostgreSQL, dropped afterwards (skips, saying why, without one)."""
    try:
        import psycopg

        conn = psycopg.connect(PG_DSN, autocommit=True)
    except Exception as exc:
        pytest.skip(f"PostgreSQL not reachable at 127.0.0.1:5432 (database test): {exc}")
    schema = f"spacehub_test_{secrets.token_hex(4)}"
    conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield (f"postgresql+psycopg://postgres@127.0.0.1:5432/test"
               f"?options=-csearch_path%3D{schema}")
    finally:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    with postgres_schema() as url:
        yield url


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    base = tmp_path_factory.mktemp("hub")
    h = Hub(data_dir=base / "data", port=free_port(), home=base / "home")
    h.start()
    yield h
    h.stop()


def _own_hub(tmp_path: Path, *extra_args: str) -> Iterator[Hub]:
    h = Hub(data_dir=tmp_path / "data", port=free_port(), home=tmp_path / "home", extra_args=extra_args)
    h.start()
    yield h
    h.stop()


@pytest.fixture
def fresh_hub(tmp_path: Path) -> Iterator[Hub]:
    """A hub of the test's own, for tests that kill or restart it; stopped at the end."""
    yield from _own_hub(tmp_path)


@pytest.fixture
def compacting_hub(tmp_path: Path) -> Iterator[Hub]:
    """A hub that compacts every 0.5 s keeping only 20 revisions, for tests of expiry (410)."""
    yield from _own_hub(tmp_path, "--compact-interval", "0.5", "--compact-horizon", "20")


@pytest.fixture
def space(hub: Hub, request: pytest.FixtureRequest) -> str:
    """A new, empty space named after the test."""
    name = "t-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[5:45].strip("-")
    hub.create_space(name)
    return name


@pytest.fixture
def hub_factory(tmp_path: Path) -> Iterator[Callable[..., Hub]]:
    """Start a hub of the test's own with extra ``spacehub hub serve`` flags; all stopped at the end."""
    started: list[Hub] = []

    def start(*extra_args: str) -> Hub:
        base = tmp_path / f"hub{len(started)}"
        h = Hub(data_dir=base / "data", port=free_port(), home=base / "home", extra_args=extra_args)
        h.start()
        started.append(h)
        return h

    yield start
    for h in started:
        h.stop()
