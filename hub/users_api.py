"""``/spacehub/v1``: users' tokens and the administrator's token rotation (``spacehub user …``).

Tokens only: what a user may do is stated by RBAC bindings in the spaces, which ``spacehub user create``
writes through the spaces' API like any other object. Who may call these endpoints is the authorizer's
decision (non-resource URLs in the root space, ``hub.access``): administrators, unless bound otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from apimachinery import errors
from apiserver.api.codec import answering_errors, json_response
from hub.users import UserTokens, check_user

API = "/spacehub/v1"
RunSync = Callable[..., Awaitable[Any]]


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return body


def _seconds(body: dict[str, Any], field: str) -> float | None:
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise errors.invalid("UserToken", "spacehub.io", "", [errors.Cause(
            "FieldValueInvalid", f"Invalid value: {value!r}: must be a number of seconds, 0 or more", field)])
    return float(value)


def user_routes(users: Callable[[], UserTokens], run_sync: Callable[[], RunSync]) -> list[BaseRoute]:
    """``users`` and ``run_sync`` are looked up per request: the core builds them at startup."""

    async def list_users(_request: Request) -> Response:
        found = await run_sync()(users().users)
        return json_response({"kind": "UserList", "items": [
            {"name": u.name, "groups": list(u.groups), "activeTokens": u.active_tokens, "expires": u.expires}
            for u in found]})

    async def mint(request: Request) -> Response:
        name = request.path_params["name"]
        body = await _body(request)
        groups = body.get("groups") or []
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise errors.bad_request("groups must be a list of strings")
        problems = check_user(name, tuple(groups))
        if problems:
            raise errors.invalid("UserToken", "spacehub.io", name, [
                errors.Cause("FieldValueInvalid", problem, "") for problem in problems])
        lifetime = _seconds(body, "expiresSeconds")
        expires = time.time() + lifetime if lifetime else None
        token = await run_sync()(users().mint, name, tuple(groups), expires)
        return json_response({"name": name, "groups": groups, "token": token, "expires": expires}, 201)

    async def revoke(request: Request) -> Response:
        name = request.path_params["name"]
        revoked = await run_sync()(users().revoke, name)
        if not revoked:
            raise errors.not_found("users", "spacehub.io", name)
        return json_response({"name": name, "revokedTokens": revoked})

    async def rotate_admin(request: Request) -> Response:
        grace = _seconds(await _body(request), "graceSeconds")
        token = await run_sync()(users().rotate_admin, 600.0 if grace is None else grace)
        return json_response({"token": token})

    return [Route(f"{API}/users", answering_errors(list_users)),
            Route(f"{API}/users/{{name}}/tokens", answering_errors(mint), methods=["POST"]),
            Route(f"{API}/users/{{name}}:revoke", answering_errors(revoke), methods=["POST"]),
            Route(f"{API}/admin:rotate-token", answering_errors(rotate_admin), methods=["POST"])]
