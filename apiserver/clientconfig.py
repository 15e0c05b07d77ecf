"""A webhook's ``clientConfig`` as kube validates it, for admission and CRD conversion webhooks alike.

A space has no Services with endpoints, so a webhook is reached only through ``clientConfig.url``; a
``service`` reference is refused when the configuration is written rather than failing every call later.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from apimachinery.errors import Cause


def _validate_url(url: Any, path: str, causes: list[Cause]) -> None:
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme != "https":
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {url!r}: 'https' is the only allowed URL scheme",
                            path))
    elif not parts.hostname:
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{url}": host must be specified', path))
    elif parts.username or parts.password:
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{url}": user information is not permitted '
                            "in the URL", path))
    elif parts.fragment or url.endswith("#"):
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{url}": fragments are not permitted in the URL',
                            path))
    elif parts.query or url.endswith("?"):
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{url}": query parameters are not permitted '
                            "in the URL", path))


def _ca_bundle(value: Any, path: str, causes: list[Cause]) -> bytes | None:
    if value in (None, ""):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, TypeError, ValueError):
        causes.append(Cause("FieldValueInvalid", "Invalid value: caBundle must be base64-encoded PEM certificates",
                            path))
        return None


def validate_client_config(client: Mapping[str, Any], path: str, causes: list[Cause]) -> bytes | None:
    """Check a ``clientConfig`` at ``path`` (appending to ``causes``); returns its decoded CA bundle."""
    if client.get("service") is not None:
        causes.append(Cause("FieldValueForbidden", "Forbidden: a space has no Services with endpoints to call; "
                            "give the webhook's address in clientConfig.url", f"{path}.service"))
    elif not client.get("url"):
        causes.append(Cause("FieldValueRequired", "Required value: exactly one of url or service is required", path))
    else:
        _validate_url(client["url"], f"{path}.url", causes)
    return _ca_bundle(client.get("caBundle"), f"{path}.caBundle", causes)
