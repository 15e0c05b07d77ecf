"""Bearer-token authentication for every hub endpoint except health and version probes."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from spaces.errors import unauthorized

UNAUTHENTICATED_PATHS = frozenset({"/healthz", "/readyz", "/livez", "/version"})


class TokenAuth:
    """ASGI middleware: 401 ``Status`` unless the request carries a known bearer token."""

    def __init__(self, app: Callable[..., Any], tokens: Callable[[], Iterable[str]]) -> None:
        self.app = app
        self.tokens = tokens

    def _authorized(self, header: bytes | None) -> bool:
        if not header or not header.lower().startswith(b"bearer "):
            return False
        presented = header[7:].strip()
        return any(hmac.compare_digest(presented, t.encode()) for t in self.tokens())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in UNAUTHENTICATED_PATHS:
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if self._authorized(header):
            await self.app(scope, receive, send)
            return
        body = orjson.dumps(unauthorized().to_status())
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
