"""ServiceAccount tokens (hub/satokens.py): signature, expiry, the ServiceAccount's uid, audience, the shared key."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from sqlalchemy import create_engine

from apiserver.store import Key
from hub.satokens import HUB_AUDIENCE, ServiceAccountTokens
from hub.users import UserTokens


class AccountsStore:
    """The one read the tokens make of the object store: a ServiceAccount by key."""

    def __init__(self) -> None:
        self.accounts: dict[Key, dict[str, Any]] = {}

    def get(self, key: Key) -> Any:
        found = self.accounts.get(key)
        return None if found is None else SimpleNamespace(value=orjson.dumps(found))


ROBOT = {"metadata": {"name": "robot", "namespace": "default", "uid": "uid-1"}}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ServiceAccountTokens, AccountsStore, Any]:
    engine = create_engine(f"sqlite:///{tmp_path / 'hub.db'}")
    store = AccountsStore()
    store.accounts[Key("team", "serviceaccounts", "default", "robot")] = ROBOT
    return ServiceAccountTokens(engine, store, UserTokens(engine)), store, engine  # type: ignore[arg-type]


def test_a_minted_token_speaks_for_its_service_account_in_its_space(setup: Any) -> None:
    tokens, _, _ = setup
    token, _ = tokens.mint("team", ROBOT, (HUB_AUDIENCE,), 600)
    who = tokens.identity_of(token)
    assert who is not None and who.name == "system:serviceaccount:default:robot" and who.space == "team"
    assert who.groups == ("system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")


def test_every_process_on_the_database_verifies_the_same_tokens(setup: Any) -> None:
    tokens, store, engine = setup
    token, _ = tokens.mint("team", ROBOT, (HUB_AUDIENCE,), 600)
    other = ServiceAccountTokens(engine, store, UserTokens(engine))
    assert other.identity_of(token) is not None


def test_expired_tampered_or_orphaned_tokens_are_refused(setup: Any) -> None:
    tokens, store, _ = setup
    expired, _ = tokens.mint("team", ROBOT, (HUB_AUDIENCE,), -1)
    assert tokens.claims_of(expired) is None
    token, _ = tokens.mint("team", ROBOT, (HUB_AUDIENCE,), 600)
    header, payload, signature = token.split(".")
    claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["spacehub.io/space"] = "other"
    forged = base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=").decode()
    assert tokens.claims_of(f"{header}.{forged}.{signature}") is None
    assert tokens.claims_of(f"{header}.{payload}.{signature[:-2]}") is None
    assert tokens.claims_of("eyJ.not.atoken") is None
    # The ServiceAccount re-created under the same name has another uid: the old tokens stay dead.
    store.accounts[Key("team", "serviceaccounts", "default", "robot")] = {
        "metadata": {**ROBOT["metadata"], "uid": "uid-2"}}
    assert tokens.claims_of(token) is None


def test_another_audience_is_not_the_hubs_but_is_reviewed_for_that_audience(setup: Any) -> None:
    tokens, _, _ = setup
    token, _ = tokens.mint("team", ROBOT, ("https://vault.example",), 600)
    assert tokens.identity_of(token) is None
    reviewed = tokens.review("team", token)
    assert reviewed is not None and reviewed.audiences == ("https://vault.example",) and reviewed.uid == "uid-1"
    assert tokens.review("elsewhere", token) is None  # another space's review does not vouch for it


def test_users_tokens_are_reviewed_too(setup: Any) -> None:
    tokens, _, _ = setup
    user_token = tokens.users.mint("alice", ("devs",))
    reviewed = tokens.review("team", user_token)
    assert reviewed is not None and reviewed.identity.name == "alice" and reviewed.audiences is None
    assert tokens.review("team", "u-unknown") is None
