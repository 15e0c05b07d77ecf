"""Syncer credentials: one bearer token per SyncTarget, what it may reach, and the identity it carries.

Tokens are stored only as SHA-256 hashes in the hub's database (next to the revision log), so every hub
replica accepts them and a leaked database does not leak credentials. A syncer token reaches only its
own SyncTarget's data (``syncer_paths``); the hub's authenticator enforces it and the sync server checks
the identity again.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from typing import Any

from sqlalchemy import Column, Engine, MetaData, String, Table, delete, insert, select

from spaces.identity import AUTHENTICATED, Identity
from spaces.store.logstore import create_schema

SYNCERS = "spacehub:syncers"  # the group of every syncer identity

metadata = MetaData()
tokens_table = Table(
    "spacehub_tokens",
    metadata,
    Column("token_sha256", String(64), primary_key=True),
    Column("sync_target", String(253), nullable=False, index=True),
    Column("created", String(32), nullable=False),
)


def syncer_identity(sync_target: str) -> Identity:
    return Identity(f"syncer:{sync_target}", (SYNCERS, AUTHENTICATED))


def syncer_paths(sync_target: str, inventory_space: str) -> tuple[str, ...]:
    """Paths a syncer credential may use: its desired set (kube API and REST) and its sync connection."""
    return (f"/clusters/{inventory_space}/synctargets/{sync_target}/",
            f"/placement/v1/clusters/{sync_target}/desired", f"/syncer/v1/targets/{sync_target}/")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SyncerCredentials:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_schema(engine, metadata)
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}  # token digest -> sync target

    def sync_target_of(self, token: str) -> str | None:
        """The SyncTarget a token belongs to, or None (blocking on a cache miss: one short SQL read)."""
        digest = _digest(token)
        with self._lock:
            cached = self._cache.get(digest)
        if cached is not None:
            return cached
        with self.engine.connect() as conn:
            row = conn.execute(select(tokens_table.c.sync_target).where(
                tokens_table.c.token_sha256 == digest)).first()
        if row is None:
            return None
        with self._lock:
            self._cache[digest] = row[0]
        return str(row[0])

    def mint(self, sync_target: str, created: str) -> str:
        token = "st-" + secrets.token_urlsafe(32)
        with self.engine.begin() as conn:
            conn.execute(insert(tokens_table).values(token_sha256=_digest(token), sync_target=sync_target,
                                                     created=created))
        return token

    def revoke(self, sync_target: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(tokens_table).where(tokens_table.c.sync_target == sync_target))
        self._forget(sync_target)

    def _forget(self, sync_target: str) -> None:
        with self._lock:
            self._cache = {k: v for k, v in self._cache.items() if v != sync_target}

    # Inventory listener: a SyncTarget deleted through another hub process had its tokens revoked there;
    # this process's cache must not keep accepting them.
    def location_changed(self, _name: str, _location: dict[str, Any] | None) -> None:
        return

    def sync_target_changed(self, name: str, target: dict[str, Any] | None) -> None:
        if target is None:
            self._forget(name)
