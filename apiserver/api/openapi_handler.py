"""Serving ``/openapi/v2`` the way kube-openapi's handler does: JSON or gnostic protobuf by ``Accept``,
one ETag for both (so ``Vary: Accept``), 304 for a matching ``If-None-Match`` and 406 when the client
accepts neither form."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from apiserver.api.codec import parse_accept
from apiserver.openapi.v2 import OpenAPIV2

_JSON = "application/json"
# client-go asks for the "@" spelling; kube-openapi accepts both and always answers with the ".".
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
_PROTOBUF_V2_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
# (type, subtype) offered, in kube-openapi's order of preference, and the answer's content type.
_OFFERS = (
    ("application", "json", _JSON),
    ("application", PROTOBUF_V2.split("/", 1)[1], _PROTOBUF_V2_ANSWER),
    ("application", _PROTOBUF_V2_ANSWER.split("/", 1)[1], _PROTOBUF_V2_ANSWER),
)


def negotiate(accept: str | None) -> str | None:
    """The content type to answer with, or None (406). Clauses are tried by quality, then the more
    specific first; within a clause the offers are tried in order, so ``*/*`` gets JSON."""
    clauses = []
    for media, params in parse_accept(accept or "*/*"):
        kind, _, subtype = media.partition("/")
        if kind == "*" and not subtype:
            subtype = "*"
        if not subtype or "/" in subtype:
            continue
        try:
            quality = float(params.get("q", "1"))
        except ValueError:
            quality = 0.0
        clauses.append((-quality, kind == "*", subtype == "*", kind, subtype))
    for *_, kind, subtype in sorted(clauses):
        for offer_type, offer_subtype, answer in _OFFERS:
            if kind in (offer_type, "*") and subtype in (offer_subtype, "*"):
                return answer
    return None


def _etag_matches(header: str | None, etag: str) -> bool:
    """``If-None-Match`` as net/http's ServeContent compares it: any listed tag, weakly, or ``*``."""
    for candidate in (header or "").split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


def openapi_v2_response(request: Request, doc: OpenAPIV2) -> Response:
    answer = negotiate(request.headers.get("accept"))
    headers = {"Vary": "Accept"}
    if answer is None:
        return Response(status_code=406, headers=headers)
    headers["ETag"] = f'"{doc.etag}"'
    if _etag_matches(request.headers.get("if-none-match"), headers["ETag"]):
        return Response(status_code=304, headers=headers)
    body = doc.json if answer == _JSON else doc.protobuf()
    return Response(body, media_type=answer, headers=headers)
