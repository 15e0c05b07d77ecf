"""``resource.Quantity``: parsing, and validation of resource lists and container requirements."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import invalid
from apimachinery.quantity import parse_quantity
from apiserver.builtin.strategies.objectfields import NEGATIVE

_QUANTITY_ERROR = ("quantities must match the regular expression "
                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def validate_quantities(values: Any, path: str) -> list[Cause]:
    causes = []
    for resource, quantity in (values or {}).items() if isinstance(values, dict) else ():
        parsed = parse_quantity(quantity)
        if parsed is None:
            causes.append(invalid(f"{path}[{resource}]", quantity, _QUANTITY_ERROR))
        elif parsed < 0:
            causes.append(invalid(f"{path}[{resource}]", quantity, NEGATIVE))
    return causes


def _overcommit_allowed(resource: str) -> bool:
    """Native resources (cpu, memory …) may request less than their limit; extended ones and hugepages not."""
    native = "/" not in resource or "kubernetes.io/" in resource
    return native and not resource.startswith("hugepages-")


def validate_resources(resources: Any, path: str) -> list[Cause]:
    if not isinstance(resources, dict):
        return []
    causes = validate_quantities(resources.get("limits"), f"{path}.limits")
    causes += validate_quantities(resources.get("requests"), f"{path}.requests")
    limits, requests = resources.get("limits"), resources.get("requests")
    if not isinstance(limits, dict) or not isinstance(requests, dict):
        return causes
    for resource, request in requests.items():
        if resource not in limits:
            continue
        req, lim = parse_quantity(request), parse_quantity(limits[resource])
        if req is None or lim is None:
            continue
        if req != lim and not _overcommit_allowed(str(resource)):
            causes.append(invalid(f"{path}.requests", request,
                                  f"must be equal to {resource} limit of {limits[resource]}"))
        elif req > lim:
            causes.append(invalid(f"{path}.requests", request,
                                  f"must be less than or equal to {resource} limit of {limits[resource]}"))
    return causes
