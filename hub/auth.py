"""Bearer-token authentication and per-credential path scoping for every hub endpoint.

Health and version probes are open. The admin token reaches everything; a syncer token reaches only
its own SyncTarget's paths (see ``hub.tokens``); anything else is 401 (unknown token) or 403.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from hub.tokens import TokenStore
from spaces.errors import StatusError, forbidden, unauthorized

UNAUTHENTICATED_PATHS = frozenset({"/healthz", "/readyz", "/livez", "/version"})


async def _send_status(send: Any, err: StatusError) -> None:
    body = orjson.dumps(err.to_status())
    await send({"type": "http.response.start", "status": err.code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class TokenAuth:
    """ASGI middleware: identifies the bearer token and enforces what it may reach."""

    def __init__(self, app: Callable[..., Any], tokens: Callable[[], TokenStore], inventory_space: str) -> None:
        self.app = app
        self.tokens = tokens
        self.inventory_space = inventory_space

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in UNAUTHENTICATED_PATHS:
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        identity = None
        if header[:7].lower() == b"bearer ":
            identity = self.tokens().identify(header[7:].strip().decode(errors="replace"))
        if identity is None:
            await _send_status(send, unauthorized())
            return
        if not identity.admin and not scope["path"].startswith(identity.allowed_prefixes(self.inventory_space)):
            await _send_status(send, forbidden(f"{identity.name} may only access the data of sync target "
                                               f'"{identity.sync_target}"'))
            return
        scope["spacehub.identity"] = identity
        await self.app(scope, receive, send)
