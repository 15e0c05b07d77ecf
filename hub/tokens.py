"""Credentials: the admin token and per-SyncTarget syncer tokens with what each may reach.

Syncer tokens are stored only as SHA-256 hashes in the hub's database (next to the revision log), so
every hub replica accepts them and a leaked database does not leak credentials. A syncer token can
reach only its own SyncTarget's data; everything else gets 403.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass

from sqlalchemy import Column, Engine, MetaData, String, Table, delete, insert, select

metadata = MetaData()
tokens_table = Table(
    "spacehub_tokens",
    metadata,
    Column("token_sha256", String(64), primary_key=True),
    Column("sync_target", String(253), nullable=False, index=True),
    Column("created", String(32), nullable=False),
)


@dataclass(frozen=True)
class Identity:
    name: str
    admin: bool = False
    sync_target: str | None = None

    def allowed_prefixes(self, inventory_space: str) -> tuple[str, ...]:
        """Paths a syncer credential may use: its own desired set and (later) its sync stream."""
        t = self.sync_target
        return (f"/clusters/{inventory_space}/synctargets/{t}/", f"/placement/v1/clusters/{t}/desired",
                f"/syncer/v1/targets/{t}/")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    def __init__(self, engine: Engine, admin_token: str) -> None:
        self.engine = engine
        self.admin_token = admin_token
        metadata.create_all(engine)
        self._lock = threading.Lock()
        self._cache: dict[str, Identity] = {}

    def identify(self, token: str) -> Identity | None:
        """The identity of a bearer token, or None (blocking on a cache miss: call off the event loop
        for unknown tokens, or accept one short SQL read)."""
        if hmac.compare_digest(token, self.admin_token):
            return Identity("admin", admin=True)
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
        identity = Identity(f"syncer:{row[0]}", sync_target=row[0])
        with self._lock:
            self._cache[digest] = identity
        return identity

    def mint(self, sync_target: str, created: str) -> str:
        token = "st-" + secrets.token_urlsafe(32)
        with self.engine.begin() as conn:
            conn.execute(insert(tokens_table).values(token_sha256=_digest(token), sync_target=sync_target,
                                                     created=created))
        return token

    def revoke(self, sync_target: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(tokens_table).where(tokens_table.c.sync_target == sync_target))
        with self._lock:
            self._cache = {k: v for k, v in self._cache.items() if v.sync_target != sync_target}
