"""The placement REST API's errors as Kubernetes ``Status`` objects: our StatusErrors as they are, pydantic's
validation errors as a 422 with kube's field paths (400 when the body is not JSON), Starlette's 404/405 with
kube's messages (and the methods every route at the path serves), anything unexpected as a 500."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute

from apimachinery.errors import Cause, StatusError
from apiserver.api.asgi import store_failure_status
from apiserver.store import StorageFailed

if TYPE_CHECKING:  # FastAPI only for the API itself, built on its first request; the syncer routes use the rest
    from fastapi import FastAPI

log = logging.getLogger(__name__)

_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            406: "NotAcceptable", 409: "Conflict", 413: "RequestEntityTooLarge", 415: "UnsupportedMediaType",
            422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
_CAUSE_TYPES = {"missing": "FieldValueRequired", "extra_forbidden": "FieldValueForbidden",
                "literal_error": "FieldValueNotSupported", "union_tag_invalid": "FieldValueNotSupported",
                "string_too_long": "FieldValueTooLong", "too_long": "FieldValueTooMany"}


def status_json(err: StatusError) -> JSONResponse:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return JSONResponse(err.to_status(), status_code=err.code, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    from fastapi.exceptions import RequestValidationError

    async def on_status_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StatusError)
        return status_json(exc)

    async def on_validation_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return status_json(validation_status(exc.errors()))

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        code = exc.status_code
        if code == 404:
            message = "the server could not find the requested resource"
        elif code == 405:
            message = f"the server does not allow this method on the requested resource: {request.method}"
        else:
            message = str(exc.detail)
        response = status_json(StatusError(code, _REASONS.get(code, "Unknown"), message))
        if code == 405:
            response.headers["Allow"] = ", ".join(allowed_methods(app.router.routes, request.scope))
        elif exc.headers:
            response.headers.update(exc.headers)
        return response

    async def on_store_failure(request: Request, exc: Exception) -> JSONResponse:
        # Answered here rather than by the catch-all, which logs a traceback and hands the error on to the server.
        failure = store_failure_status(exc)
        return status_json(failure) if failure is not None else await on_unexpected(request, exc)

    async def on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("placement API request failed", exc_info=exc)
        return status_json(StatusError(500, "InternalError", f"an error on the server ({type(exc).__name__}) "
                                                             "has prevented the request from succeeding"))

    app.add_exception_handler(StatusError, on_status_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(StorageFailed, on_store_failure)
    app.add_exception_handler(DBAPIError, on_store_failure)  # a read while the database is down
    app.add_exception_handler(Exception, on_unexpected)


def validation_status(errors: Sequence[Any]) -> StatusError:
    """pydantic errors as a 422 Invalid Status (400 BadRequest when the body is not JSON at all)."""
    if any(e.get("type") == "json_invalid" for e in errors):
        detail = next(e for e in errors if e.get("type") == "json_invalid").get("ctx", {}).get("error", "")
        return StatusError(400, "BadRequest", f"the request body is not valid JSON: {detail}".rstrip(": "))
    causes = []
    for error in errors:
        field = field_path(error.get("loc") or ())
        message = str(error.get("msg", "invalid value"))
        if error.get("type") == "extra_forbidden":
            message = "unknown field"
        causes.append(Cause(_CAUSE_TYPES.get(str(error.get("type")), "FieldValueInvalid"), message, field))
    summary = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    return StatusError(422, "Invalid", f"the request is invalid: {summary}", causes=causes)


_OPERATOR_TAGS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def field_path(loc: Sequence[Any]) -> str:
    """``("body", "EdgePlacement", "spec", "downsync", 0, "apiGroup")`` → ``spec.downsync[0].apiGroup``.

    The location prefix and pydantic's union tags (the explain body's form, a requirement's operator) are
    left out: they are not fields the user wrote.
    """
    # The API's pydantic models only here, on an error: the syncer routes, which the hub imports before it
    # listens, use these errors but not the models (0.04 s of every start).
    from placement.api_models import EXPLAIN_FORMS

    parts = list(loc)
    if parts and parts[0] in ("body", "path", "query", "header"):
        parts = parts[1:]
    if parts and parts[0] in EXPLAIN_FORMS:
        parts = parts[1:]
    out = ""
    for i, part in enumerate(parts):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _OPERATOR_TAGS and i >= 2 and parts[i - 2] == "matchExpressions" and isinstance(parts[i - 1], int):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def allowed_methods(routes: Sequence[BaseRoute], scope: Mapping[str, Any]) -> list[str]:
    """The methods any route serves at the request's path (Starlette's own 405 names only one route's)."""
    path = route_path(scope)
    methods: set[str] = set()
    for route in routes:
        regex = getattr(route, "path_regex", None)
        route_methods = getattr(route, "methods", None)
        if regex is not None and route_methods and regex.match(path):
            methods.update(route_methods)
    return sorted(methods)


def route_path(scope: Mapping[str, Any]) -> str:
    """The request path relative to the mount point (what the routes match)."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", ""))
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root):]
    return path
