"""Syncer tokens in the store (inventory/credentials.py): expiry after rotation, and databases from before it."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, text

from inventory.credentials import SyncerCredentials


def test_a_database_from_before_rotation_gets_its_expiry_column_and_keeps_its_tokens(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    old = SyncerCredentials(engine)
    token = old.mint("florin", "2026-01-01T00:00:00Z")
    with engine.begin() as conn:  # as a hub of the previous release left it
        conn.execute(text("ALTER TABLE spacehub_tokens DROP COLUMN expires"))
    credentials = SyncerCredentials(engine)
    assert credentials.sync_target_of(token) == "florin"
    newer = credentials.rotate("florin", "2026-01-02T00:00:00Z", grace_seconds=0)
    assert credentials.sync_target_of(newer) == "florin"
    assert credentials.sync_target_of(token) is None


class Clock:
    """Wall-clock seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1_767_225_600.0

    def __call__(self) -> float:
        return self.now


def test_rotation_never_lengthens_a_grace_period_already_running(tmp_path: Path) -> None:
    clock = Clock()
    credentials = SyncerCredentials(create_engine(f"sqlite:///{tmp_path / 'hub.db'}"), clock=clock)
    first = credentials.mint("guilder", "2026-01-01T00:00:00Z")
    second = credentials.rotate("guilder", "2026-01-01T00:01:00Z", grace_seconds=0.2)
    third = credentials.rotate("guilder", "2026-01-01T00:02:00Z", grace_seconds=3600)  # must not revive the first
    clock.now += 0.19
    assert credentials.sync_target_of(first) == "guilder"  # still within its grace period
    clock.now += 0.01
    assert credentials.sync_target_of(first) is None  # 0.2 s after the first rotation, not an hour
    assert credentials.sync_target_of(second) == "guilder"  # the second rotation's grace period
    clock.now += 3600
    assert credentials.sync_target_of(second) is None
    assert credentials.sync_target_of(third) == "guilder"  # the newest never expires
