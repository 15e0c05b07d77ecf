"""Built-in kinds' objects for unit tests, and what the generic handlers do with them (create, validate, update)
through each kind's strategy."""

from __future__ import annotations

import copy
from typing import Any

from apiserver.builtin.kinds import builtin_types
from apiserver.resourcetypes import ResourceType
from spaces.kind import space_types

UID = "6f0c2b4e-1d1a-4c55-9a8e-2f3b7c9d0e11"


def rtype(kind: str) -> ResourceType:
    return next(t for t in (*builtin_types(), *space_types()) if t.kind == kind)


def create(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """What the generic create handler does with a kind's strategy: set the uid, then prepare."""
    obj = copy.deepcopy(obj)
    obj.setdefault("metadata", {}).setdefault("uid", UID)
    rtype(kind).strategy.prepare_for_create(obj)
    return obj


def causes(kind: str, obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c.field, c.message) for c in rtype(kind).strategy.validate(obj)]


def update_causes(kind: str, new: dict[str, Any], old: dict[str, Any]) -> list[tuple[str, str]]:
    strategy = rtype(kind).strategy
    strategy.prepare_for_update(new, old)
    return [(c.field, c.message) for c in strategy.validate_update(new, old)]


def deployment(**spec: Any) -> dict[str, Any]:
    base = {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                              "ports": [{"containerPort": 80}]}]}},
    }
    base.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"}, "spec": base}


def statefulset() -> dict[str, Any]:
    return {"metadata": {"name": "db"}, "spec": deployment()["spec"] | {"serviceName": "db"}}


def job(**spec: Any) -> dict[str, Any]:
    base = {"template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "pi", "image": "perl:5.34"}]}}}
    base.update(spec)
    return {"metadata": {"name": "pi", "namespace": "default"}, "spec": base}


def api_service(**spec: Any) -> dict[str, Any]:
    base = {"group": "example.my", "version": "v1090", "groupPriorityMinimum": 360, "versionPriority": 42,
            "service": {"namespace": "my-namespace", "name": "my-service"}}
    base.update(spec)
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1090.example.my"}, "spec": base}
