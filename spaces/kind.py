"""spacehub.io/v1alpha1 Spaces: the kind, its schema, table and strategy, and the reserved ``root`` space.

A space's children are the Space objects inside it (``apiserver.spacepaths``). A Space's ``spec.provider``
says who serves its API: ``builtin`` (the default: the hub's own store) or ``kube`` (a Kubernetes API server
the hub reaches through the kubeconfig in ``spec.kubeconfigSecretRef``, a Secret in the parent space;
``spaces.providers``). The provider is fixed at creation. ``spec.namespaceMapping`` is the default of its
EdgePlacements' namespace mapping (``spaces.nsmapping``). The API server serves the kind where spaces live
(``Catalog(root_types=space_types(), ...)``) and knows nothing more of it.
"""

from __future__ import annotations

import functools
from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import forbidden, invalid, is_dns1123_label, is_dns1123_subdomain, not_supported, required
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.objectfields import IMMUTABLE, Obj, name_of
from apiserver.builtin.tables.columns import age_col, col, name_col, str_at
from apiserver.catalog import Catalog
from apiserver.resourcetypes import Column, ResourceType
from apiserver.spacepaths import ROOT
from spaces.nsmapping import MAPPING_FIELD, mapping_causes

SPACE_GROUP = "spacehub.io"
SPACE_VERSION = "v1alpha1"
SPACE_SCHEMA = "io.spacehub.v1alpha1.Space"
SPACES = f"spaces.{SPACE_GROUP}"  # the kind's resource in the store
_META_REF = "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META_REF = "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
BUILTIN, KUBE = "builtin", "kube"
PROVIDERS = (BUILTIN, KUBE)
SECRET_REF = "kubeconfigSecretRef"


def provider_of(obj: Obj) -> str:
    """The space's provider; ``builtin`` when the spec does not name one."""
    spec = obj.get("spec")
    provider = spec.get("provider") if isinstance(spec, dict) else None
    return provider if isinstance(provider, str) and provider else BUILTIN


def _ref_causes(ref: Any) -> list[Cause]:
    path = f"spec.{SECRET_REF}"
    if not isinstance(ref, dict):
        return [required(path, "a kube space reads its kubeconfig from a Secret in the parent space")]
    causes = []
    for field, check in (("namespace", is_dns1123_label), ("name", is_dns1123_subdomain)):
        value = ref.get(field)
        if not isinstance(value, str) or not value:
            causes.append(required(f"{path}.{field}"))
        else:
            causes.extend(invalid(f"{path}.{field}", value, msg) for msg in check(value))
    key = ref.get("key")
    if not isinstance(key, str) or not key:
        causes.append(required(f"{path}.key", "the Secret's data key holding the kubeconfig"))
    return causes


def provider_causes(obj: Obj) -> list[Cause]:
    """What is wrong with a Space's provider settings: a known provider, and the Secret reference exactly
    when the provider is ``kube``."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    provider = spec.get("provider")
    if provider is not None and provider not in PROVIDERS:
        return [not_supported("spec.provider", provider, PROVIDERS)]
    if provider_of(obj) == KUBE:
        return _ref_causes(spec.get(SECRET_REF))
    if spec.get(SECRET_REF) is not None:
        return [forbidden(f"spec.{SECRET_REF}", 'may only be set when spec.provider is "kube"')]
    return []


def spec_causes(obj: Obj) -> list[Cause]:
    """What is wrong with a Space's spec: its provider settings and its default namespace mapping."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    return provider_causes(obj) + mapping_causes(spec.get(MAPPING_FIELD), f"spec.{MAPPING_FIELD}")


class SpaceStrategy(BuiltinStrategy):
    """Spaces are made and removed by users, except ``root``, which the hub itself owns."""

    has_status = True
    # A space name is a path segment of the hub URL and a DNS label of its own endpoint.
    name_rule = "dns1123-label"

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Pending"}

    def validate(self, obj: Obj) -> list[Cause]:
        if name_of(obj) == ROOT:
            return [forbidden("metadata.name", "the root space is created by the hub and cannot be created")]
        return spec_causes(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        # Updating root (labels, annotations) is fine; only its creation and deletion are reserved.
        # The provider is fixed: the space's objects live with it, and nothing moves them to another.
        if provider_of(new) != provider_of(old):
            return [invalid("spec.provider", provider_of(new), IMMUTABLE)]
        return spec_causes(new)

    def validate_delete(self, obj: Obj) -> list[Cause]:
        """Causes that forbid deleting ``obj``; the handlers call it before a delete of a Space."""
        if name_of(obj) == ROOT:
            return [forbidden("metadata.name", "the root space cannot be deleted")]
        return []


def _space() -> list[Column]:
    return [
        name_col(),
        col("Phase", "string", lambda o: str_at(o, "status", "phase"), "The lifecycle phase of the space."),
        col("URL", "string", lambda o: str_at(o, "status", "url"),
             "The URL at which the space serves its Kubernetes API.", priority=1),
        age_col(),
    ]


@functools.cache
def space_types() -> tuple[ResourceType, ...]:
    """The Space kind, for the catalogue's ``root_types``."""
    return (
        ResourceType(
            group=SPACE_GROUP, version=SPACE_VERSION, kind="Space", plural="spaces", singular="space",
            namespaced=False, short_names=("sp",), subresources=("status",), schema_name=SPACE_SCHEMA,
            # Spaces are the hub's own kind: like any custom resource, no strategic merge patch.
            strategic_merge=False, columns=tuple(_space()), strategy=SpaceStrategy(), tracks_generation=True,
        ),
    )


def _type_meta(api_version: str, kind: str) -> dict[str, Any]:
    """apiVersion and kind properties shaped like the upstream definitions' (nullable, single-valued)."""
    return {
        "apiVersion": {
            "description": "APIVersion defines the versioned schema of this representation of an object.",
            "type": ["string", "null"], "enum": [api_version],
        },
        "kind": {
            "description": "Kind is a string value representing the REST resource this object represents.",
            "type": ["string", "null"], "enum": [kind],
        },
    }


def space_definitions() -> dict[str, dict[str, Any]]:
    """Schemas of the hub's own kinds, in the form of :func:`~apiserver.definitions.load_definitions`."""
    api_version = f"{SPACE_GROUP}/{SPACE_VERSION}"
    return {
        SPACE_SCHEMA: {
            "description": "Space is an isolated Kubernetes API served by the hub, with its own objects.",
            "type": ["object", "null"],
            "properties": {
                **_type_meta(api_version, "Space"),
                "metadata": {"$ref": _META_REF, "description": "Standard object's metadata."},
                "spec": {
                    "description": "Spec of the space: who serves its API, and where its namespaces go in clusters.",
                    "type": ["object", "null"],
                    "properties": {
                        "provider": {
                            "description": "Who serves the space's API: builtin (the hub's own store, the default) "
                                           "or kube (a Kubernetes API server reached through a kubeconfig). Immutable.",
                            "type": ["string", "null"], "enum": ["builtin", "kube", None]},
                        "kubeconfigSecretRef": {
                            "description": "With provider kube: the Secret in the parent space whose data key holds "
                                           "the kubeconfig of the API server.",
                            "type": ["object", "null"],
                            "properties": {
                                "namespace": {"description": "Namespace of the Secret.", "type": ["string", "null"]},
                                "name": {"description": "Name of the Secret.", "type": ["string", "null"]},
                                "key": {"description": "Data key holding the kubeconfig.",
                                        "type": ["string", "null"]},
                            },
                        },
                        "namespaceMapping": {
                            "description": "Where the space's namespaces are written in clusters, for its "
                                           "EdgePlacements that set no namespaceMapping of their own: map names "
                                           "namespaces one by one, template (\"{{space}}-{{namespace}}\") the others.",
                            "type": ["object", "null"],
                            "properties": {
                                "template": {"description": "The cluster namespace of a space namespace; "
                                                            "{{space}} and {{namespace}} are replaced.",
                                             "type": ["string", "null"]},
                                "map": {"description": "Cluster namespace by space namespace.",
                                        "type": ["object", "null"],
                                        "additionalProperties": {"type": ["string", "null"]}},
                            },
                        },
                    },
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "status": {
                    "$ref": f"#/$defs/{SPACE_SCHEMA}Status",
                    "description": "Most recently observed status of the space, written by the hub.",
                },
            },
            "x-kubernetes-group-version-kind": [{"group": SPACE_GROUP, "kind": "Space",
                                                 "version": SPACE_VERSION}],
        },
        f"{SPACE_SCHEMA}Status": {
            "description": "SpaceStatus is the observed state of a space.",
            "type": ["object", "null"],
            "properties": {
                "phase": {"description": "Lifecycle phase of the space, as the hub last observed it.",
                          "type": ["string", "null"]},
                "url": {"description": "URL at which the space serves its Kubernetes API.",
                        "type": ["string", "null"]},
                "conditions": {
                    "description": "Observations of the space; a kube space's ProviderReachable says whether the "
                                   "hub reaches its API server.",
                    "type": ["array", "null"],
                    "items": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.Condition"},
                },
            },
        },
        f"{SPACE_SCHEMA}List": {
            "description": "SpaceList is a list of spaces.",
            "type": ["object", "null"],
            "required": ["items"],
            "properties": {
                **_type_meta(api_version, "SpaceList"),
                "items": {"description": "Items is the list of spaces.", "type": "array",
                          "items": {"$ref": f"#/$defs/{SPACE_SCHEMA}"}},
                "metadata": {"$ref": _LIST_META_REF, "description": "Standard list metadata."},
            },
            "x-kubernetes-group-version-kind": [{"group": SPACE_GROUP, "kind": "SpaceList",
                                                 "version": SPACE_VERSION}],
        },
    }


def spaces_catalog(*, extra_types: tuple[ResourceType, ...] = (), upstream_types: tuple[ResourceType, ...] = (),
                   nested_spaces: bool = False) -> Catalog:
    """The catalogue of a process that serves spaces: the API server's kinds plus the Space kind in ``root`` (in
    every space, with ``nested_spaces``)."""
    return Catalog(extra_types=extra_types, upstream_types=upstream_types, root_types=space_types(),
                   root_definitions=space_definitions(), nested_spaces=nested_spaces)
