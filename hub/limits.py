"""Overload protection: a cap on concurrently served requests, answered with 429 beyond it.

Like kube-apiserver's max-requests-inflight: long-running watches and followed logs do not count (they
would starve the cap), everything else does; a refused request gets a ``TooManyRequests`` Status with
``Retry-After`` so clients (client-go, kubectl) back off and retry.

Syncers' requests (status reports, heartbeats, desired-set reads) count against a budget of their own, of
the same size, as API Priority and Fairness gives kubelets a priority level apart from users: a thousand
clusters reporting at once are throttled among themselves, and a user's kubectl is still served.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apimachinery.errors import too_many_requests


def _is_long_running(scope: dict[str, Any]) -> bool:
    query = scope.get("query_string", b"")
    return b"watch=true" in query or b"watch=1" in query or b"follow=true" in query


def is_syncer_request(scope: dict[str, Any]) -> bool:
    """The syncer API (``/syncer/v1/…``) and a syncer's desired set (``/clusters/<space>/synctargets/…``)."""
    path = str(scope.get("path", ""))
    if path.startswith("/syncer/v1/"):
        return True
    return path.startswith("/clusters/") and path[len("/clusters/"):].partition("/")[2].startswith("synctargets/")


class InflightLimit:
    def __init__(self, app: Callable[..., Any], limit: int) -> None:
        self.app = app
        self.limit = limit
        self.inflight = {"users": 0, "syncers": 0}  # requests being served, per budget

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.limit <= 0 or _is_long_running(scope):
            await self.app(scope, receive, send)
            return
        budget = "syncers" if is_syncer_request(scope) else "users"
        if self.inflight[budget] >= self.limit:
            await _refuse(send)
            return
        self.inflight[budget] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.inflight[budget] -= 1


async def _refuse(send: Any) -> None:
    err = too_many_requests("too many requests in flight, please try again later")
    body = err.to_json()
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
