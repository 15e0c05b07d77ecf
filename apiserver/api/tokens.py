"""TokenRequest (``serviceaccounts/<name>/token``) and TokenReview: kube's token endpoints over a server's issuer.

Validation, defaults and the answers' shapes are kube-apiserver's (``ValidateTokenRequest``, the ``token`` REST
of ServiceAccounts, the ``tokenreviews`` REST); signing and checking tokens is the issuer's (the hub's, in
``hub.satokens``), given to the server as a :class:`TokenIssuer`. Nothing is stored.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any, Protocol

from apimachinery import errors
from apiserver.identity import Identity
from apiserver.resourcetypes import ResourceType
from apiserver.writeoptions import now_rfc3339

TOKEN_REVIEW = "tokenreviews.authentication.k8s.io"
AUTHENTICATION = "authentication.k8s.io/v1"
DEFAULT_SECONDS = 3600  # kube's default expirationSeconds
MIN_SECONDS = 600
MAX_SECONDS = 1 << 32


@dataclass(frozen=True)
class ReviewedToken:
    identity: Identity
    uid: str  # the ServiceAccount's uid; "" for other credentials
    audiences: tuple[str, ...] | None  # what the token is for; None: any audience (a user's bearer token)


class TokenIssuer(Protocol):
    api_audiences: tuple[str, ...]  # what a TokenRequest without audiences gets, and a TokenReview checks by default

    def mint(self, space: str, service_account: dict[str, Any], audiences: tuple[str, ...],
             seconds: int) -> tuple[str, int]: ...  # blocking

    def review(self, space: str, token: str) -> ReviewedToken | None: ...  # blocking


def token_request_type(service_accounts: ResourceType) -> ResourceType:
    """What a body posted to ``serviceaccounts/<name>/token`` is: a TokenRequest (for decoding protobuf)."""
    return dataclasses.replace(service_accounts, group="authentication.k8s.io", version="v1", kind="TokenRequest")


def _spec(body: Any, kind: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    spec = body.get("spec")
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise errors.bad_request(f"{kind}.spec must be an object")
    return spec


def _audiences(spec: dict[str, Any], kind: str) -> tuple[str, ...]:
    audiences = spec.get("audiences") or []
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise errors.bad_request(f"{kind}.spec.audiences must be a list of strings")
    return tuple(audiences)


def token_request_parameters(body: Any, issuer: TokenIssuer) -> tuple[tuple[str, ...], int]:
    """The audiences and lifetime a TokenRequest asks for, defaulted and validated as kube does."""
    spec = _spec(body, "TokenRequest")
    audiences = _audiences(spec, "TokenRequest") or issuer.api_audiences
    seconds = spec.get("expirationSeconds", DEFAULT_SECONDS)
    if seconds is None:
        seconds = DEFAULT_SECONDS
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise errors.bad_request("TokenRequest.spec.expirationSeconds must be an integer")
    causes = []
    if seconds < MIN_SECONDS:
        causes.append(errors.Cause("FieldValueInvalid", f"Invalid value: {seconds}: may not specify a duration "
                                   "less than 10 minutes", "spec.expirationSeconds"))
    elif seconds > MAX_SECONDS:
        causes.append(errors.Cause("FieldValueInvalid", f"Invalid value: {seconds}: may not specify a duration "
                                   "larger than 2^32 seconds", "spec.expirationSeconds"))
    if spec.get("boundObjectRef") is not None:
        # Binding to a Pod or Secret needs those to live here; a space's pods run on clusters.
        causes.append(errors.Cause("FieldValueNotSupported", "Unsupported value: tokens bound to objects are not "
                                   "issued by this server", "spec.boundObjectRef"))
    if causes:
        raise errors.invalid("TokenRequest", "authentication.k8s.io", "", causes)
    return audiences, seconds


def token_request_answer(service_account: dict[str, Any], audiences: tuple[str, ...], seconds: int, token: str,
                         expires: int) -> dict[str, Any]:
    meta = service_account["metadata"]
    expiry = dt.datetime.fromtimestamp(expires, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"kind": "TokenRequest", "apiVersion": AUTHENTICATION,
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "creationTimestamp": now_rfc3339()},
            "spec": {"audiences": list(audiences), "expirationSeconds": seconds, "boundObjectRef": None},
            "status": {"token": token, "expirationTimestamp": expiry}}


def token_review_token(body: Any) -> tuple[str, tuple[str, ...]]:
    """The token and audiences a TokenReview asks about."""
    spec = _spec(body, "TokenReview")
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    return token, _audiences(spec, "TokenReview")


def token_review_answer(body: dict[str, Any], asked: tuple[str, ...], issuer: TokenIssuer,
                        reviewed: ReviewedToken | None) -> dict[str, Any]:
    """The review with its status: authenticated when the token is valid for one of the audiences asked (the
    server's own when none is), as kube's authenticator checks a token's audiences."""
    wanted = asked or issuer.api_audiences
    status: dict[str, Any] = {"user": {}}
    if reviewed is None:
        status["error"] = "invalid bearer token"
    else:
        matching = list(wanted) if reviewed.audiences is None else [a for a in wanted if a in reviewed.audiences]
        if not matching:
            status["error"] = "token audiences are invalid for the target audiences"
        else:
            user: dict[str, Any] = {"username": reviewed.identity.name, "groups": list(reviewed.identity.groups)}
            if reviewed.uid:
                user["uid"] = reviewed.uid
            if reviewed.identity.space is not None:
                user["extra"] = {"spacehub.io/space": [reviewed.identity.space]}
            status = {"authenticated": True, "user": user, "audiences": matching}
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {"kind": "TokenReview", "apiVersion": AUTHENTICATION,
            "metadata": {**metadata, "creationTimestamp": now_rfc3339()},
            "spec": {**_spec(body, "TokenReview")}, "status": status}
