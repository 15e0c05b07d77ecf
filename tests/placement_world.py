"""KubeStellar example1 for the placement engine's unit tests: builders of Locations, SyncTargets, placements and
workload objects, and the engine loaded with all of it.

Locations florin (env=prod) and guilder (env=prod, extended=yes); workload space wmw-c with edge-placement-c and
wmw-s with edge-placement-s. ``FLORIN`` and ``GUILDER`` are their desired sets, in the engine's order.
"""

from __future__ import annotations

from typing import Any

from inventory.kinds import EDGE_GROUP
from placement.engine import PlacementEngine
from placement.model import DesiredEntry, ObjectRef, WorkloadObject

CRD = "customresourcedefinitions.apiextensions.k8s.io"


def location(name: str, labels: dict[str, str], selector: dict[str, Any] | None = None,
             resource: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Location",
        "metadata": {"name": name, "labels": labels},
        "spec": {"resource": resource or {"group": EDGE_GROUP, "version": "v2alpha1", "resource": "synctargets"},
                 "instanceSelector": selector if selector is not None else {"matchLabels": {"id": name}}},
    }


def sync_target(name: str, labels: dict[str, str] | None = None, uid: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncTarget",
            "metadata": {"name": name, "uid": uid or f"uid-{name}", "labels": {"id": name, **(labels or {})}}}


def placement(name: str, location_selectors: list[dict[str, Any]], downsync: list[dict[str, Any]],
              singleton: bool = False) -> dict[str, Any]:
    return {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": location_selectors, "downsync": downsync,
                     "wantSingletonReportedState": singleton}}


KINDS = {
    "namespaces": ("Namespace", "v1"), "configmaps": ("ConfigMap", "v1"),
    "replicasets.apps": ("ReplicaSet", "apps/v1"), "deployments.apps": ("Deployment", "apps/v1"),
    "customizers.edge.kubestellar.io": ("Customizer", "edge.kubestellar.io/v2alpha1"),
    CRD: ("CustomResourceDefinition", "apiextensions.k8s.io/v1"),
    "crontabs.stable.example.com": ("CronTab", "stable.example.com/v1"),
    "apiservices.apiregistration.k8s.io": ("APIService", "apiregistration.k8s.io/v1"),
}


def ref(space: str, resource: str, namespace: str, name: str) -> ObjectRef:
    return ObjectRef(space, resource, namespace, name)


def wobj(space: str, resource: str, namespace: str, name: str, labels: dict[str, str] | None = None,
         revision: int = 1) -> WorkloadObject:
    kind, api_version = KINDS[resource]
    defines = None
    if resource == CRD:
        plural, _, group = name.partition(".")
        defines = (group, plural)
    return WorkloadObject(ref(space, resource, namespace, name), kind, api_version,
                          tuple(sorted((labels or {}).items())), revision, bool(namespace), defines)


def ns_ref(space: str, name: str) -> ObjectRef:
    return ref(space, "namespaces", "", name)


def view(entries: list[DesiredEntry]) -> list[tuple[str, str, str, str, str, bool]]:
    """Entries as (space, resource, namespace, name, kind, implicit), in the engine's order."""
    return [(e.ref.space, e.ref.resource, e.ref.namespace, e.ref.name, e.kind, e.implicit) for e in entries]


def refs(engine: PlacementEngine, target: str) -> set[ObjectRef]:
    return {e.ref for e in engine.desired(target)}


EXAMPLE_C = placement("edge-placement-c", [{"matchLabels": {"env": "prod"}}], [
    {"apiGroup": "", "resources": ["configmaps"], "namespaces": ["commonstuff"], "objectNames": ["httpd-htdocs"]},
    {"apiGroup": "apps", "resources": ["replicasets"], "namespaces": ["commonstuff"]},
], singleton=True)

EXAMPLE_S = placement("edge-placement-s", [{"matchLabels": {"env": "prod", "extended": "yes"}}], [
    {"namespaceSelectors": [{"matchLabels": {"special": "yes"}}]},
    {"apiGroup": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"],
     "objectNames": ["crontabs.stable.example.com"]},
    {"apiGroup": "apiregistration.k8s.io", "resources": ["apiservices"], "objectNames": ["v1090.example.my"]},
    {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["specialstuff"]},
], singleton=True)


def load_inventory(engine: PlacementEngine) -> None:
    engine.upsert_location(location("florin", {"loc-name": "florin", "env": "prod"}))
    engine.upsert_location(location("guilder", {"loc-name": "guilder", "env": "prod", "extended": "yes"}))
    engine.upsert_sync_target(sync_target("florin", {"loc-name": "florin", "env": "prod"}))
    engine.upsert_sync_target(sync_target("guilder", {"loc-name": "guilder", "env": "prod", "extended": "yes"}))


def load_common(engine: PlacementEngine) -> None:
    for obj in (wobj("wmw-c", "namespaces", "", "commonstuff"),
                wobj("wmw-c", "configmaps", "commonstuff", "httpd-htdocs"),
                wobj("wmw-c", "customizers.edge.kubestellar.io", "commonstuff", "example-customizer"),
                wobj("wmw-c", "replicasets.apps", "commonstuff", "commond")):
        engine.upsert_object(obj)
    engine.upsert_placement("wmw-c", EXAMPLE_C)


def load_special(engine: PlacementEngine, spec: dict[str, Any] = EXAMPLE_S) -> None:
    for obj in (wobj("wmw-s", CRD, "", "crontabs.stable.example.com"),
                wobj("wmw-s", "namespaces", "", "specialstuff", {"special": "yes"}),
                wobj("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object"),
                wobj("wmw-s", "configmaps", "specialstuff", "httpd-htdocs"),
                wobj("wmw-s", "customizers.edge.kubestellar.io", "specialstuff", "example-customizer"),
                wobj("wmw-s", "deployments.apps", "specialstuff", "speciald"),
                wobj("wmw-s", "apiservices.apiregistration.k8s.io", "", "v1090.example.my")):
        engine.upsert_object(obj)
    engine.upsert_placement("wmw-s", spec)


def example1_engine() -> PlacementEngine:
    """An engine holding all of example1: both Locations and SyncTargets, both spaces, both placements."""
    engine = PlacementEngine()
    load_inventory(engine)
    load_common(engine)
    load_special(engine)
    engine.drain_dirty()
    return engine


FLORIN = [
    ("wmw-c", "namespaces", "", "commonstuff", "namespace", True),
    ("wmw-c", "configmaps", "commonstuff", "httpd-htdocs", "object", False),
    ("wmw-c", "replicasets.apps", "commonstuff", "commond", "object", False),
]
GUILDER = [
    ("wmw-c", "namespaces", "", "commonstuff", "namespace", True),
    ("wmw-s", "namespaces", "", "specialstuff", "namespace", False),
    ("wmw-s", CRD, "", "crontabs.stable.example.com", "crd", False),
    ("wmw-c", "configmaps", "commonstuff", "httpd-htdocs", "object", False),
    ("wmw-c", "replicasets.apps", "commonstuff", "commond", "object", False),
    ("wmw-s", "apiservices.apiregistration.k8s.io", "", "v1090.example.my", "object", False),
    ("wmw-s", "configmaps", "specialstuff", "httpd-htdocs", "object", False),
    ("wmw-s", "crontabs.stable.example.com", "specialstuff", "my-new-cron-object", "object", False),
    ("wmw-s", "customizers.edge.kubestellar.io", "specialstuff", "example-customizer", "object", False),
    ("wmw-s", "deployments.apps", "specialstuff", "speciald", "object", False),
]
