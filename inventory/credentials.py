"""Syncer credentials: one bearer token per SyncTarget, what it may reach, and the identity it carries.

Tokens are stored only as SHA-256 hashes in the hub's database (next to the revision log), so every hub
replica accepts them and a leaked database does not leak credentials. Rotating a cluster's credential
mints a new token and gives the old ones an expiry (a grace period for the syncer to be handed the new
bootstrap); the SyncTarget is annotated with the rotation, so that every hub process drops the tokens it
had cached. A syncer token reaches only its own SyncTarget's data (``syncer_paths``); the hub's
authenticator enforces it and the sync server checks the identity again.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    Column,
    Engine,
    Float,
    MetaData,
    String,
    Table,
    delete,
    insert,
    inspect,
    or_,
    select,
    text,
    update,
)

from apiserver.identity import AUTHENTICATED, Identity
from apiserver.store.logstore import create_schema

SYNCERS = "spacehub:syncers"  # the group of every syncer identity
SYNCER_TOKEN_PREFIX = "st-"  # so that the authenticator looks up a syncer's token in the right table first

metadata = MetaData()
tokens_table = Table(
    "spacehub_tokens",
    metadata,
    Column("token_sha256", String(64), primary_key=True),
    Column("sync_target", String(253), nullable=False, index=True),
    Column("created", String(32), nullable=False),
    Column("expires", Float, nullable=True),  # seconds since the epoch; NULL: until revoked
)


def syncer_identity(sync_target: str) -> Identity:
    return Identity(f"syncer:{sync_target}", (SYNCERS, AUTHENTICATED))


def syncer_paths(sync_target: str, inventory_space: str) -> tuple[str, ...]:
    """Paths a syncer credential may use: its desired set (kube API and REST) and its sync connection (the
    stream, its reports and its pod tunnel, all under ``/syncer/v1/targets/<target>/``)."""
    return (f"/clusters/{inventory_space}/synctargets/{sync_target}/",
            f"/placement/v1/clusters/{sync_target}/desired", f"/syncer/v1/targets/{sync_target}/")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SyncerCredentials:
    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        # Wall-clock seconds: expiries are stored in the shared database, so every hub process compares them
        # with the same time (tests pass a clock they move).
        self._clock = clock
        create_schema(engine, metadata)
        _add_expiry_column(engine)
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[str, float | None]] = {}  # token digest -> (sync target, expiry)

    def sync_target_of(self, token: str) -> str | None:
        """The SyncTarget a token belongs to, or None (blocking on a cache miss: one short SQL read)."""
        digest = _digest(token)
        with self._lock:
            cached = self._cache.get(digest)
        if cached is None:
            with self.engine.connect() as conn:
                row = conn.execute(select(tokens_table.c.sync_target, tokens_table.c.expires).where(
                    tokens_table.c.token_sha256 == digest)).first()
            if row is None:
                return None
            cached = (str(row[0]), float(row[1]) if row[1] is not None else None)
            with self._lock:
                self._cache[digest] = cached
        target, expires = cached
        return None if expires is not None and self._clock() >= expires else target

    def mint(self, sync_target: str, created: str) -> str:
        token = SYNCER_TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self.engine.begin() as conn:
            conn.execute(insert(tokens_table).values(token_sha256=_digest(token), sync_target=sync_target,
                                                     created=created))
        return token

    def rotate(self, sync_target: str, created: str, grace_seconds: float) -> str:
        """A new token for ``sync_target``; its other tokens stop working ``grace_seconds`` from now (sooner if
        they were to expire sooner already)."""
        token = SYNCER_TOKEN_PREFIX + secrets.token_urlsafe(32)
        until = self._clock() + max(0.0, grace_seconds)
        with self.engine.begin() as conn:
            conn.execute(update(tokens_table).where(
                tokens_table.c.sync_target == sync_target,
                or_(tokens_table.c.expires.is_(None), tokens_table.c.expires > until)).values(expires=until))
            conn.execute(insert(tokens_table).values(token_sha256=_digest(token), sync_target=sync_target,
                                                     created=created))
        self._forget(sync_target)
        return token

    def revoke(self, sync_target: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(tokens_table).where(tokens_table.c.sync_target == sync_target))
        self._forget(sync_target)

    def _forget(self, sync_target: str) -> None:
        with self._lock:
            self._cache = {k: v for k, v in self._cache.items() if v[0] != sync_target}

    # Inventory listener: a SyncTarget deleted through another hub process had its tokens revoked there, and
    # one rotated there (annotated) had expiries set: this process's cache must not keep accepting them. The
    # inventory tells of deletions, rotations and label/spec changes only (not heartbeats), so the target's
    # tokens are simply read again.
    def location_changed(self, _name: str, _location: dict[str, Any] | None) -> None:
        return

    def sync_target_changed(self, name: str, _target: dict[str, Any] | None) -> None:
        self._forget(name)


def _add_expiry_column(engine: Engine) -> None:
    """Databases of hubs from before rotation have no ``expires`` column: add it (every process may try)."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"ALTER TABLE {tokens_table.name} ADD COLUMN IF NOT EXISTS expires DOUBLE PRECISION"))
        elif "expires" not in {column["name"] for column in inspect(conn).get_columns(tokens_table.name)}:
            conn.execute(text(f"ALTER TABLE {tokens_table.name} ADD COLUMN expires REAL"))
