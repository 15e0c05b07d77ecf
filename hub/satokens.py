"""ServiceAccount tokens: JWTs the hub signs for a ServiceAccount of a space, and their verification.

A token is a compact JWT (HS256) with kube's claims (``iss``, ``sub`` = ``system:serviceaccount:<ns>:<name>``,
``aud``, ``iat``, ``nbf``, ``exp``) and kube's ``kubernetes.io`` claim naming the namespace and the ServiceAccount
with its uid, plus the space it belongs to. The signing key is a random 256-bit secret kept in the hub's database,
so that every hub process on it signs and verifies alike (a copy of the database can mint tokens, as a copy of
kube's service-account key can; the database is as sensitive as the data dir already). A token is accepted only
while a ServiceAccount of that name *and uid* exists in its space: deleting the ServiceAccount invalidates its
tokens at once, and one re-created under the same name does not bring them back.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Column, Engine, MetaData, String, Table, insert, select
from sqlalchemy.exc import IntegrityError

from apiserver.api.tokens import ReviewedToken
from apiserver.identity import AUTHENTICATED, Identity
from apiserver.store import Key
from apiserver.store.logstore import LogStore, create_schema
from hub.users import UserTokens

ISSUER = "https://kubernetes.default.svc"  # kube's default --service-account-issuer, also its API audience
HUB_AUDIENCE = ISSUER  # what a token must be for to be accepted by the hub
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
SPACE_CLAIM = "spacehub.io/space"
_HEADER = base64.urlsafe_b64encode(orjson.dumps({"alg": "HS256", "typ": "JWT"})).rstrip(b"=")

metadata = MetaData()
signing_keys = Table(
    "spacehub_signing_keys",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("key_hex", String(128), nullable=False),
)
KEY_NAME = "serviceaccount-tokens"


@dataclass(frozen=True)
class TokenClaims:
    space: str
    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]
    expires: int  # seconds since the epoch

    @property
    def username(self) -> str:
        return f"{SERVICE_ACCOUNT_PREFIX}{self.namespace}:{self.name}"

    def identity(self) -> Identity:
        """Who the token speaks for: kube's service-account user, scoped to its own space."""
        return Identity(self.username, (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{self.namespace}",
                                        AUTHENTICATED), space=self.space)


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def looks_like_jwt(token: str) -> bool:
    return token.startswith("eyJ") and token.count(".") == 2


class ServiceAccountTokens:
    """Signs and verifies ServiceAccount tokens, and reviews them and users' tokens (the spaces' TokenIssuer).
    Blocking (database reads): call from a thread or at startup."""

    api_audiences = (HUB_AUDIENCE,)

    def __init__(self, engine: Engine, store: LogStore, users: UserTokens) -> None:
        create_schema(engine, metadata)
        self.store = store
        self.users = users
        self._key = self._load_key(engine)

    @staticmethod
    def _load_key(engine: Engine) -> bytes:
        query = select(signing_keys.c.key_hex).where(signing_keys.c.name == KEY_NAME)
        with engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            with contextlib.suppress(IntegrityError), engine.begin() as conn:  # another process made one just now
                conn.execute(insert(signing_keys).values(name=KEY_NAME, key_hex=secrets.token_hex(32)))
            with engine.connect() as conn:
                row = conn.execute(query).first()
        assert row is not None
        return bytes.fromhex(str(row[0]))

    def mint(self, space: str, service_account: dict[str, Any], audiences: tuple[str, ...],
             seconds: int) -> tuple[str, int]:
        """A token for ``service_account`` (the stored object) and when it expires."""
        meta = service_account["metadata"]
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": f"{SERVICE_ACCOUNT_PREFIX}{meta['namespace']}:{meta['name']}",
                  "aud": list(audiences), "iat": now, "nbf": now, "exp": now + seconds,
                  "jti": secrets.token_hex(16),
                  "kubernetes.io": {"namespace": meta["namespace"],
                                    "serviceaccount": {"name": meta["name"], "uid": meta["uid"]}},
                  SPACE_CLAIM: space}
        signed = _HEADER + b"." + _b64(orjson.dumps(claims))
        return (signed + b"." + _b64(self._sign(signed))).decode(), now + seconds

    def _sign(self, signed: bytes) -> bytes:
        return hmac.new(self._key, signed, hashlib.sha256).digest()

    def claims_of(self, token: str) -> TokenClaims | None:
        """The claims of a token this hub signed that has not expired, whose ServiceAccount still exists with the
        uid it was minted for; None otherwise."""
        try:
            header, payload, signature = token.split(".")
            if not hmac.compare_digest(_unb64(signature), self._sign(f"{header}.{payload}".encode())):
                return None
            claims = orjson.loads(_unb64(payload))
            account = claims["kubernetes.io"]
            parsed = TokenClaims(str(claims[SPACE_CLAIM]), str(account["namespace"]),
                                 str(account["serviceaccount"]["name"]), str(account["serviceaccount"]["uid"]),
                                 tuple(str(a) for a in claims["aud"]), int(claims["exp"]))
            not_before = int(claims["nbf"])
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
            return None
        now = time.time()
        if not not_before - 60 <= now < parsed.expires:  # a minute of clock skew between hub processes
            return None
        row = self.store.get(Key(parsed.space, "serviceaccounts", parsed.namespace, parsed.name))
        if row is None or orjson.loads(row.value).get("metadata", {}).get("uid") != parsed.uid:
            return None
        return parsed

    def identity_of(self, token: str) -> Identity | None:
        """Who a token speaks for at the hub: only tokens for the hub's audience."""
        claims = self.claims_of(token)
        return claims.identity() if claims is not None and HUB_AUDIENCE in claims.audiences else None

    def review(self, space: str, token: str) -> ReviewedToken | None:
        """TokenReview in ``space``: a ServiceAccount token of that space (whatever its audience) or a user's
        token; a ServiceAccount token of another space is not vouched for here."""
        if looks_like_jwt(token):
            claims = self.claims_of(token)
            if claims is None or claims.space != space:
                return None
            return ReviewedToken(claims.identity(), claims.uid, claims.audiences)
        identity = self.users.identity_of(token)
        return None if identity is None else ReviewedToken(identity, "", None)
