"""Kubernetes ``Status`` errors.

Every failure a client can see is a :class:`StatusError`; the HTTP layer renders it as a
``meta/v1 Status`` with the code, reason and causes that apimachinery's ``api/errors`` uses, so
client-go and kubectl classify it correctly (``IsNotFound``, ``IsConflict`` …).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass(frozen=True)
class Cause:
    type: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.type, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class StatusError(Exception):
    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: list[Cause] = field(default_factory=list)
    retry_after: int | None = None
    uid: str = ""

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def to_status(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.uid:
            details["uid"] = self.uid
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        # kube's Status struct puts details before code, and clients that compare error bodies see the order.
        if details:
            status["details"] = details
        status["code"] = self.code
        return status

    def to_json(self) -> bytes:
        """The Status as kube-apiserver writes it: JSON in the struct's field order, ending with a newline."""
        return orjson.dumps(self.to_status()) + b"\n"


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                       name=name, group=group, kind=resource)


def already_exists(resource: str, group: str, name: str) -> StatusError:
    return StatusError(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
                       name=name, group=group, kind=resource)


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    return StatusError(409, "Conflict",
                       f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
                       name=name, group=group, kind=resource)


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> StatusError:
    summary = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    if len(causes) > 1:
        summary = f"[{summary}]"
    qualified = f"{kind}.{group}" if group else kind
    return StatusError(422, "Invalid", f'{qualified} "{name}" is invalid: {summary}',
                       name=name, group=group, kind=kind, causes=causes)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def forbidden(message: str) -> StatusError:
    return StatusError(403, "Forbidden", message)


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized")


def method_not_allowed(message: str) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                       f"accepted media types include: application/json, application/yaml, "
                       f"application/json-patch+json, application/merge-patch+json, "
                       f"application/strategic-merge-patch+json (got {content_type!r})")


def too_many_requests(message: str, retry_after: int = 1) -> StatusError:
    return StatusError(429, "TooManyRequests", message, retry_after=retry_after)
