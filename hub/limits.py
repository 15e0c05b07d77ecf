"""Overload protection: a cap on concurrently served requests, answered with 429 beyond it.

Like kube-apiserver's max-requests-inflight: long-running watches and followed logs do not count (they
would starve the cap), everything else does; a refused request gets a ``TooManyRequests`` Status with
``Retry-After`` so clients (client-go, kubectl) back off and retry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from spaces.errors import too_many_requests


def _is_long_running(scope: dict[str, Any]) -> bool:
    query = scope.get("query_string", b"")
    return b"watch=true" in query or b"watch=1" in query or b"follow=true" in query


class InflightLimit:
    def __init__(self, app: Callable[..., Any], limit: int) -> None:
        self.app = app
        self.limit = limit
        self.inflight = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.limit <= 0 or _is_long_running(scope):
            await self.app(scope, receive, send)
            return
        if self.inflight >= self.limit:
            err = too_many_requests("too many requests in flight, please try again later")
            body = orjson.dumps(err.to_status())
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        self.inflight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.inflight -= 1
