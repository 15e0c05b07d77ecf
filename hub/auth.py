"""Bearer-token authentication and per-credential path scoping for every hub endpoint.

Health and version probes are open. The admin token reaches everything; a syncer token reaches only
its own SyncTarget's paths (``inventory.credentials``); anything else is 401 (unknown token) or 403.
The identity goes into the request scope (``spaces.identity``) for handlers that check it again.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

import orjson

from inventory.credentials import SyncerCredentials, syncer_identity, syncer_paths
from spaces.errors import StatusError, forbidden, unauthorized
from spaces.identity import ADMINS, AUTHENTICATED, SCOPE_KEY, Identity

UNAUTHENTICATED_PATHS = frozenset({"/healthz", "/readyz", "/livez", "/version"})
ADMIN = Identity("admin", (ADMINS, AUTHENTICATED))


async def _send_status(send: Any, err: StatusError) -> None:
    body = orjson.dumps(err.to_status())
    await send({"type": "http.response.start", "status": err.code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class TokenAuth:
    """ASGI middleware: identifies the bearer token and enforces what it may reach."""

    def __init__(self, app: Callable[..., Any], admin_token: str, credentials: Callable[[], SyncerCredentials],
                 inventory_space: str, public: frozenset[str] = UNAUTHENTICATED_PATHS,
                 public_prefixes: tuple[str, ...] = ()) -> None:
        """``public``, ``public_prefixes``: paths served without a token (probes, the API's documentation)."""
        self.app = app
        self.public = public
        self.public_prefixes = public_prefixes
        self.admin_token = admin_token
        self.credentials = credentials  # looked up per request: the store opens at startup
        self.inventory_space = inventory_space

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in self.public or path.startswith(self.public_prefixes):
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        token = header[7:].strip().decode(errors="replace") if header[:7].lower() == b"bearer " else ""
        if token and hmac.compare_digest(token.encode(), self.admin_token.encode()):
            identity = ADMIN
        else:
            target = self.credentials().sync_target_of(token) if token else None
            if target is None:
                await _send_status(send, unauthorized())
                return
            if not scope["path"].startswith(syncer_paths(target, self.inventory_space)):
                await _send_status(send, forbidden(f'syncer:{target} may only access the data of sync target '
                                                   f'"{target}"'))
                return
            identity = syncer_identity(target)
        scope[SCOPE_KEY] = identity
        await self.app(scope, receive, send)
