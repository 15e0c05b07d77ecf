"""Bearer-token authentication and per-credential path scoping for every hub endpoint.

Health and version probes are open. A user's or administrator's token (``hub.users``) establishes who is
calling, and the authorizer decides what they may do (``hub.access``, ``apiserver.api.handlers``); a syncer
token reaches only its own SyncTarget's paths (``inventory.credentials``); a ServiceAccount's token
(``hub.satokens``) speaks for that ServiceAccount in its own space only; an unknown, expired or revoked
token is 401. The identity goes into the request scope (``apiserver.identity``) for what follows. WebSocket
handshakes (the syncers' tunnels) are authenticated exactly like HTTP requests, and refused with an HTTP
error and its Status before the connection is upgraded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from apimachinery.errors import forbidden, unauthorized
from apiserver.api.asgi import send_status, store_failure_status
from apiserver.identity import SCOPE_KEY, Identity
from hub.satokens import ServiceAccountTokens, looks_like_jwt
from hub.users import UserTokens
from inventory.credentials import SYNCER_TOKEN_PREFIX, SyncerCredentials, syncer_identity, syncer_paths

UNAUTHENTICATED_PATHS = frozenset({"/healthz", "/readyz", "/livez", "/version"})


AUTHENTICATED_SCOPES = ("http", "websocket")  # lifespan is the only other kind: no request, no credential


class TokenAuth:
    """ASGI middleware: identifies the bearer token and enforces what it may reach."""

    def __init__(self, app: Callable[..., Any], users: Callable[[], UserTokens],
                 credentials: Callable[[], SyncerCredentials], inventory_space: str,
                 public: frozenset[str] = UNAUTHENTICATED_PATHS, public_prefixes: tuple[str, ...] = (),
                 service_accounts: Callable[[], ServiceAccountTokens | None] = lambda: None) -> None:
        """``public``, ``public_prefixes``: paths served without a token (probes, the API's documentation);
        ``service_accounts``: the spaces' ServiceAccount tokens (None: not accepted)."""
        self.app = app
        self.service_accounts = service_accounts
        self.public = public
        self.public_prefixes = public_prefixes
        self.users = users  # both looked up per request: the store opens at startup
        self.credentials = credentials
        self.inventory_space = inventory_space

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] not in AUTHENTICATED_SCOPES or path in self.public or path.startswith(self.public_prefixes):
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        token = header[7:].strip().decode(errors="replace") if header[:7].lower() == b"bearer " else ""
        try:
            identity, target = await self._owner(token)
        except Exception as exc:  # a token not cached while the database is down: 503, as any request then
            failure = store_failure_status(exc)
            if failure is None:
                raise
            await send_status(scope, send, failure)
            return
        if identity is None:
            if target is None:
                await send_status(scope, send, unauthorized())
                return
            if not scope["path"].startswith(syncer_paths(target, self.inventory_space)):
                await send_status(scope, send, forbidden(f'syncer:{target} may only access the data of sync '
                                                          f'target "{target}"'))
                return
            identity = syncer_identity(target)
        scope[SCOPE_KEY] = identity
        await self.app(scope, receive, send)

    async def _owner(self, token: str) -> tuple[Identity | None, str | None]:
        """The user or ServiceAccount ``token`` belongs to, or the sync target whose syncer it is."""
        identity, target = None, None
        service_accounts = self.service_accounts()
        if service_accounts is not None and looks_like_jwt(token):  # no other credential has this shape
            # Each use reads the ServiceAccount (deleting it ends its tokens at once): off the event loop.
            identity = await asyncio.to_thread(service_accounts.identity_of, token)
        elif token.startswith(SYNCER_TOKEN_PREFIX):  # look where the token most likely is first
            target = self.credentials().sync_target_of(token)
        if target is None and identity is None and token and not looks_like_jwt(token):
            identity = self.users().identity_of(token)
            if identity is None and not token.startswith(SYNCER_TOKEN_PREFIX):
                target = self.credentials().sync_target_of(token)
        return identity, target
