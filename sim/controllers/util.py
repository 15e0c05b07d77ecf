"""Object helpers the simulated controllers share: owner references, pod state, template hashes,
``IntOrString`` fenceposts, conditions and resource requests. Pure functions on plain dicts.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from apimachinery.nested import dicts as dicts  # re-exported for the controllers
from apimachinery.nested import get as get
from apimachinery.quantity import parse_quantity
from apiserver.controllers.conditions import new_condition as new_condition  # re-exported for the controllers
from apiserver.controllers.conditions import set_condition as set_condition

Obj = dict[str, Any]
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
POD_TEMPLATE_HASH = "pod-template-hash"
REVISION_HASH = "controller-revision-hash"


def as_int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def meta(obj: Obj) -> Obj:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def uid(obj: Obj) -> str:
    return str(meta(obj).get("uid") or "")


def labels(obj: Any) -> dict[str, str]:
    value = get(obj, "metadata", "labels")
    return value if isinstance(value, dict) else {}


def deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def generation(obj: Obj) -> int:
    return as_int(meta(obj).get("generation"), 1)


# --- ownership ------------------------------------------------------------------------------------


def controller_ref(obj: Any) -> Obj | None:
    for ref in dicts(get(obj, "metadata", "ownerReferences")):
        if ref.get("controller") is True:
            return ref
    return None


def owner_ref(owner: Obj) -> Obj:
    """A controller reference to ``owner`` as kube's controllers write it."""
    m = meta(owner)
    return {"apiVersion": owner.get("apiVersion", ""), "kind": owner.get("kind", ""), "name": m.get("name", ""),
            "uid": m.get("uid", ""), "controller": True, "blockOwnerDeletion": True}


# --- pods -----------------------------------------------------------------------------------------


def phase(pod: Obj) -> str:
    return str(get(pod, "status", "phase") or "")


def pod_active(pod: Obj) -> bool:
    """``IsPodActive``: not finished and not being deleted."""
    return phase(pod) not in ("Succeeded", "Failed") and not deleting(pod)


def condition(obj: Any, kind: str) -> Obj | None:
    for c in dicts(get(obj, "status", "conditions")):
        if c.get("type") == kind:
            return c
    return None


def pod_ready(pod: Obj) -> bool:
    c = condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def available_in(pod: Obj, min_ready_seconds: int, now: datetime | None = None) -> float | None:
    """Seconds until a ready pod counts as available (0: it does); None when it is not ready."""
    if not pod_ready(pod):
        return None
    if min_ready_seconds <= 0:
        return 0.0
    since = parse_time((condition(pod, "Ready") or {}).get("lastTransitionTime"))
    if since is None:
        return 0.0
    remaining = min_ready_seconds - ((now or datetime.now(UTC)) - since).total_seconds()
    return max(0.0, remaining)


def pod_from_template(template: Any, namespace: str, owner: Obj, *, name: str = "", generate_name: str = "",
                      extra_labels: dict[str, str] | None = None, extra_annotations: dict[str, str] | None = None,
                      node_name: str = "") -> Obj:
    """``GetPodFromTemplate``: a pod carrying the template's labels, annotations and finalizers."""
    template = template if isinstance(template, dict) else {}
    tmeta = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    pod_meta: Obj = {"namespace": namespace, "labels": {**(tmeta.get("labels") or {}), **(extra_labels or {})},
                     "ownerReferences": [owner_ref(owner)]}
    if name:
        pod_meta["name"] = name
    else:
        pod_meta["generateName"] = generate_name
    annotations = {**(tmeta.get("annotations") or {}), **(extra_annotations or {})}
    if annotations:
        pod_meta["annotations"] = annotations
    if tmeta.get("finalizers"):
        pod_meta["finalizers"] = list(tmeta["finalizers"])
    spec = copy.deepcopy(template.get("spec")) if isinstance(template.get("spec"), dict) else {}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


@dataclass(frozen=True)
class Requests:
    """What a pod asks of its node: one pod slot, cpu (millicores) and memory (bytes)."""

    pods: int = 0
    cpu_milli: int = 0
    memory: int = 0

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.pods + other.pods, self.cpu_milli + other.cpu_milli, self.memory + other.memory)

    def __sub__(self, other: Requests) -> Requests:
        return Requests(self.pods - other.pods, self.cpu_milli - other.cpu_milli, self.memory - other.memory)

    def fits(self, capacity: Requests) -> bool:
        return self.pods <= capacity.pods and self.cpu_milli <= capacity.cpu_milli and self.memory <= capacity.memory


def _quantity(value: Any, scale: int = 1) -> int:
    parsed = parse_quantity(value)
    if parsed is None or parsed < 0:
        return 0
    return math.ceil(parsed * Decimal(scale))


def pod_requests(spec: Any) -> Requests:
    """``PodRequests``: the sum over containers, or the largest init container if that is more."""
    def of(container: Obj) -> tuple[int, int]:
        # A request left out defaults to its limit (upstream defaulting).
        requests = get(container, "resources", "requests")
        limits = get(container, "resources", "limits")
        merged = {**(limits if isinstance(limits, dict) else {}), **(requests if isinstance(requests, dict) else {})}
        return _quantity(merged.get("cpu"), 1000), _quantity(merged.get("memory"))

    cpu = memory = 0
    for container in dicts(get(spec, "containers")):
        c, m = of(container)
        cpu, memory = cpu + c, memory + m
    for container in dicts(get(spec, "initContainers")):
        c, m = of(container)
        cpu, memory = max(cpu, c), max(memory, m)
    return Requests(1, cpu, memory)


def node_allocatable(node: Obj) -> Requests:
    alloc = get(node, "status", "allocatable")
    alloc = alloc if isinstance(alloc, dict) else {}
    return Requests(_quantity(alloc.get("pods", "110")), _quantity(alloc.get("cpu"), 1000),
                    _quantity(alloc.get("memory")))


# --- hashes and counts ----------------------------------------------------------------------------


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template: Any, collision_count: int = 0) -> str:
    """``ComputeHash``: FNV-32a of the pod template, rendered with ``SafeEncodeString``."""
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        data += str(collision_count).encode()
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in str(fnv32a(data)))


def scaled(value: Any, total: int, round_up: bool) -> int:
    """``GetScaledValueFromIntOrPercent``."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            return 0
        exact = Decimal(percent) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return as_int(value)


def fenceposts(rolling: Any, replicas: int) -> tuple[int, int]:
    """``ResolveFenceposts``: (maxSurge, maxUnavailable); both zero would deadlock, so unavailable is 1."""
    rolling = rolling if isinstance(rolling, dict) else {}
    surge = scaled(rolling.get("maxSurge", "25%"), replicas, True)
    unavailable = scaled(rolling.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def omit_zero(status: Obj, *fields: str) -> Obj:
    """Drop ``omitempty`` integer fields that are zero, as Go serialises them."""
    for name in fields:
        if status.get(name) == 0:
            del status[name]
    return status


def ordinal_of(name: str, prefix: str) -> int | None:
    """The ordinal of a StatefulSet pod name (``web-2`` → 2), or None."""
    if not name.startswith(prefix + "-"):
        return None
    tail = name[len(prefix) + 1:]
    return int(tail) if tail.isdigit() and (tail == "0" or not tail.startswith("0")) else None
