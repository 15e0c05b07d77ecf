"""People's credentials: bearer tokens of users and administrators, stored as SHA-256 hashes.

Every row is one token of one user, with the groups it carries and an optional expiry; the database is
shared by all hub processes, so a token minted through one works on all. A token is a random 256-bit secret,
so an unsalted SHA-256 is enough to make a leaked database useless (nothing to brute-force). Revoking or
rotating sets an expiry instead of deleting, so that the rule below cannot bring a revoked token back.

The administrator's first token is the one in the data dir (``admin.token``, written at first start): each hub
process adopts the token of its data dir unless that very token is already known (an expired or revoked
one stays so). Someone who can write the data dir can read the database, so adoption grants nothing new;
it is also how an operator recovers a lost admin credential: write a new ``admin.token`` and restart.

Each process remembers a token it looked up for ``CACHE_SECONDS``: a token revoked through another process
stops working there within that time (at once in the process that revoked it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import secrets
import threading
import time
from dataclasses import dataclass

import orjson
from sqlalchemy import Column, Engine, Float, MetaData, String, Table, Text, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from apiserver.identity import ADMINS, AUTHENTICATED, Identity
from apiserver.store.logstore import create_schema

ADMIN_USER = "admin"
CACHE_SECONDS = 5.0
RESERVED_PREFIXES = ("system:", "syncer:")  # names kube and the syncers' credentials use

metadata = MetaData()
user_tokens = Table(
    "spacehub_user_tokens",
    metadata,
    Column("token_sha256", String(64), primary_key=True),
    Column("user", String(253), nullable=False, index=True),
    Column("groups", Text, nullable=False),  # JSON list
    Column("created", String(32), nullable=False),
    Column("expires", Float, nullable=True),  # seconds since the epoch; NULL: until revoked
)


@dataclass(frozen=True)
class UserSummary:
    name: str
    groups: tuple[str, ...]
    active_tokens: int
    expires: float | None  # when its last token stops (or stopped); None: one never expires


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_user(name: str, groups: tuple[str, ...]) -> list[str]:
    """What is wrong with a user name and its groups (empty: nothing)."""
    problems = []
    if not name or len(name) > 253 or any(c.isspace() for c in name):
        problems.append(f'user name "{name}" must be 1 to 253 characters without whitespace')
    if name == ADMIN_USER or name.startswith(RESERVED_PREFIXES):
        problems.append(f'user name "{name}" is reserved')
    for group in groups:
        if not group or any(c.isspace() for c in group) or group.startswith(RESERVED_PREFIXES):
            problems.append(f'group "{group}" is reserved or malformed (system: and syncer: groups are the '
                            "server's)")
    return problems


class UserTokens:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_schema(engine, metadata)
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Identity, float | None, float]] = {}  # digest -> (who, expiry, looked up)

    def identity_of(self, token: str) -> Identity | None:
        """Who a token belongs to, or None (unknown, expired or revoked). Blocking on a miss: one short read."""
        digest = _digest(token)
        now = time.time()
        with self._lock:
            cached = self._cache.get(digest)
        if cached is None or now - cached[2] > CACHE_SECONDS:
            with self.engine.connect() as conn:
                row = conn.execute(select(user_tokens.c.user, user_tokens.c.groups, user_tokens.c.expires).where(
                    user_tokens.c.token_sha256 == digest)).first()
            if row is None:
                with self._lock:
                    self._cache.pop(digest, None)
                return None
            who = Identity(str(row[0]), (*orjson.loads(row[1]), AUTHENTICATED))
            cached = (who, float(row[2]) if row[2] is not None else None, now)
            with self._lock:
                if len(self._cache) > 65536:
                    self._cache.clear()
                self._cache[digest] = cached
        who, expires, _ = cached
        return None if expires is not None and now >= expires else who

    def mint(self, user: str, groups: tuple[str, ...], expires: float | None = None) -> str:
        token = "u-" + secrets.token_urlsafe(32)
        self._insert(token, user, groups, expires)
        return token

    def _insert(self, token: str, user: str, groups: tuple[str, ...], expires: float | None) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(user_tokens).values(token_sha256=_digest(token), user=user,
                                                    groups=orjson.dumps(list(groups)).decode(), created=_now(),
                                                    expires=expires))

    def expire(self, user: str, at: float) -> int:
        """Every token of ``user`` stops working at ``at`` (sooner where it would already); how many were live."""
        with self.engine.begin() as conn:
            changed = conn.execute(update(user_tokens).where(
                user_tokens.c.user == user,
                or_(user_tokens.c.expires.is_(None), user_tokens.c.expires > at)).values(expires=at)).rowcount
        with self._lock:
            self._cache = {k: v for k, v in self._cache.items() if v[0].name != user}
        return int(changed or 0)

    def revoke(self, user: str) -> int:
        return self.expire(user, time.time())

    def users(self) -> list[UserSummary]:
        """Every user with its newest groups, how many of its tokens work, and until when."""
        now = time.time()
        with self.engine.connect() as conn:
            rows = conn.execute(select(user_tokens.c.user, user_tokens.c.groups, user_tokens.c.expires)
                                .order_by(user_tokens.c.user, user_tokens.c.created)).all()
        by_user: dict[str, tuple[str, list[float | None]]] = {}
        for name, groups, expires in rows:
            by_user[name] = (groups, [*by_user.get(name, ("", []))[1], expires])
        out = []
        for name, (groups, expiries) in by_user.items():
            live = [e for e in expiries if e is None or e > now]
            if any(e is None for e in live):
                until = None
            else:
                until = max((e for e in (live or expiries) if e is not None), default=None)
            out.append(UserSummary(name, tuple(orjson.loads(groups)), len(live), until))
        return out

    # --- the administrator ------------------------------------------------------------------------------

    def adopt_admin(self, token: str) -> None:
        """Make the data dir's admin token a credential, unless this token is known already (see above)."""
        with self.engine.connect() as conn:
            known = conn.execute(select(user_tokens.c.user).where(
                user_tokens.c.token_sha256 == _digest(token))).first()
        if known is None:
            with contextlib.suppress(IntegrityError):  # another hub process on this data dir adopted it just now
                self._insert(token, ADMIN_USER, (ADMINS,), None)

    def rotate_admin(self, grace_seconds: float) -> str:
        """A new admin token; the earlier ones stop ``grace_seconds`` from now."""
        self.expire(ADMIN_USER, time.time() + max(0.0, grace_seconds))
        token = "a-" + secrets.token_urlsafe(32)
        self._insert(token, ADMIN_USER, (ADMINS,), None)
        return token
