"""Request bodies in, JSON out: the media types a kube-apiserver speaks, minus protobuf responses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import yaml
from starlette.requests import Request
from starlette.responses import Response

from apimachinery import errors

try:
    _YamlLoader: type = yaml.CSafeLoader
except AttributeError:  # libyaml missing: the pure-Python loader is slower but equivalent
    _YamlLoader = yaml.SafeLoader

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def decode_body(body: bytes, content_type: str | None) -> Any:
    kind = media_type(content_type)
    if kind in ("", JSON, "*/*"):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc
    if kind in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            return yaml.load(body, Loader=_YamlLoader)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error converting YAML to JSON: {exc}") from exc
    raise errors.unsupported_media_type(kind)


def decode_apply_body(body: bytes) -> Any:
    """An apply configuration: YAML by media type, but kubectl sends JSON, which parses much faster."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return decode_body(body, "application/yaml")


def parse_accept(header: str | None) -> list[tuple[str, dict[str, str]]]:
    out = []
    for part in (header or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        params = {}
        for f in fields[1:]:
            if "=" in f:
                k, v = f.split("=", 1)
                params[k.strip()] = v.strip()
        out.append((fields[0].lower(), params))
    return out


def table_version(accept: str | None) -> str | None:
    """The meta.k8s.io Table version the client prefers, if it asked for a Table first."""
    for kind, params in parse_accept(accept):
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and kind == JSON:
            return params.get("v", "v1")
        if kind in (JSON, "*/*", "application/*"):
            return None
    return None


def warning_text(text: str) -> str:
    """``text`` as the quoted text of a Warning header, as kube's ``NewWarningHeader`` writes it: quotes and
    backslashes escaped, line breaks as spaces, and the UTF-8 bytes sent as they are. ASGI header values are
    Latin-1 strings, so the UTF-8 bytes are passed as the Latin-1 characters of the same bytes."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(" " if ord(c) < 0x20 or c == "\x7f" else c for c in escaped)
    return '"' + escaped.encode("utf-8", "replace").decode("latin-1") + '"'


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None,
                  media: str = JSON) -> Response:
    return Response(orjson.dumps(obj), status_code=status, media_type=media, headers=headers)


def status_response(err: errors.StatusError) -> Response:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return Response(err.to_json(), status_code=err.code, media_type=JSON, headers=headers)


def answering_errors(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint that answers a ``StatusError`` raised by ``handler`` as its ``Status``."""
    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except errors.StatusError as exc:
            return status_response(exc)

    return endpoint


def success_status(details: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        out["details"] = details
    return out
