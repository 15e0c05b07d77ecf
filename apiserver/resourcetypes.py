"""Resource types: what a space serves, and the per-kind rules (the kube-apiserver "strategy").

The generic handlers in ``apiserver.api`` do everything that is the same for every kind (storage,
resourceVersion, preconditions, finalizers, watch). A kind contributes only a :class:`ResourceType`:
its names, scope, subresources, schema, table columns and a :class:`Strategy` with its defaults and
validation. Adding a kind must never touch the handlers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from apimachinery.errors import Cause
from apimachinery.fieldselectors import DEFAULT_FIELDS, SelectableFields
from apimachinery.names import NameRule

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


class Strategy:
    """Per-kind hooks; the default does nothing kind-specific."""

    # Whether a write through the status subresource may change metadata.finalizers. kube's status
    # strategies reset all metadata (ResetObjectMetaForStatus) except CRDs', whose finalizer controller
    # releases a CRD through its status, where admission policies on CRD updates do not reach.
    status_sets_finalizers = False
    # Which of apimachinery's name rules ``metadata.name`` follows (upstream's ``ValidateObjectMeta`` name
    # function of the kind): most kinds, and every custom resource, take DNS subdomains.
    name_rule: NameRule = "dns1123-subdomain"
    # The fields a ``fieldSelector`` may name (upstream's GetAttrs and field-label conversion of the kind):
    # metadata.name and metadata.namespace unless the kind offers more.
    selectable_fields: SelectableFields = DEFAULT_FIELDS

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """Set defaults and server-owned fields on a new object (status, defaults)."""

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """Carry over server-owned fields from ``old`` into ``new`` on an update."""

    def initial_status(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The status of an object nothing has reported on yet: ``None`` for no ``status`` field (custom
        resources); built-in kinds have upstream's, since kube's Go structs always serialize their status."""
        return None

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        """Kind-specific validation of a new object, after defaulting."""
        return []

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        """Kind-specific validation of an update (immutable fields …), after defaulting."""
        return self.validate(new)

    def validate_delete(self, obj: dict[str, Any]) -> list[Cause]:
        """Causes that forbid deleting ``obj`` (e.g. the root space)."""
        return []


class Conversion:
    """A kind served from another kind's storage: kube-apiserver serves ``events.k8s.io/v1`` Events from the
    core/v1 Event storage, so one Event is readable, watchable and writable through both APIs. The handlers
    store :meth:`to_stored` of what a client sends and serve :meth:`to_served` of what is stored."""

    stored_as: str = ""  # the group_resource whose storage holds the objects

    def to_stored(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The object in the storage kind's shape (a new dict; ``obj`` is left alone)."""
        return obj

    def to_served(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The stored object in this kind's shape (a new dict; ``obj`` is left alone)."""
        return obj

    def with_status_of(self, obj: dict[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
        """``obj`` (the object a status write makes: the stored one with the sent ``status``) with the whole
        status of ``sent``, for kinds whose served shape keeps part of the status outside ``status``."""
        return obj


@dataclass(frozen=True)
class ConversionWebhook:
    """Where a CRD's conversion webhook is reached (``spec.conversion.webhook.clientConfig.url``); the
    conversion itself is ``apiserver.crdconversion``."""

    url: str
    ca_bundle: bytes | None


@dataclass(frozen=True)
class Column:
    """One column of a ``meta.k8s.io/v1 Table``; ``cell`` renders it from the object."""

    name: str
    type: str
    cell: Callable[[dict[str, Any]], Any]
    description: str = ""
    format: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


@dataclass(frozen=True)
class ScalePaths:
    """Where a kind keeps what its scale subresource reads and writes (JSON paths, dot-separated)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = None  # a path to a selector string; None: spec.selector.matchLabels
    selector_is_label_map: bool = False  # spec.selector is a plain label map (ReplicationControllers)


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # "status", "scale"
    verbs: tuple[str, ...] = ALL_VERBS
    # Name of this kind's object schema in the definitions ($defs) map, for OpenAPI, explain,
    # strict field validation and strategic-merge metadata.
    schema_name: str | None = None
    # Built-in kinds accept strategic merge patch; custom resources must not (kubectl relies on it).
    strategic_merge: bool = False
    # Table columns, Name and Age included, in kubectl's order. Empty means Name and Age.
    columns: tuple[Column, ...] = ()
    strategy: Strategy = field(default_factory=Strategy)
    # Whether ``metadata.generation`` is kept: 1 on create, +1 on every change outside metadata and
    # status (kube's strategies do this for Deployments, Jobs, custom resources …; ConfigMaps have none).
    tracks_generation: bool = False
    # Whether managedFields are recorded. Off only for kinds the hub alone writes (read-only to clients):
    # their owner is always the hub, and a summary with an entry per cluster would pay for bookkeeping
    # over every entry on every write.
    tracks_managed_fields: bool = True
    # Custom resources carry their structural schema inline (built-ins use schema_name); it does not
    # take part in equality so that discovery caches keyed by type sets stay small.
    schema: Any = field(default=None, compare=False, repr=False)
    # The version objects are stored in (custom resources with several versions); "" = this one.
    storage_version: str = ""
    scale: ScalePaths | None = None
    # Validation that may be expensive (CEL rules) runs off the event loop.
    offload_validation: bool = False
    # What an immediate DELETE answers: the deleted object (upstream stores with ReturnDeletedObject:
    # pods, services, service accounts, storage classes) or, for every other kind, a Status naming it.
    returns_deleted_object: bool = False
    # A custom resource whose CRD is being deleted: still served for reading, updating and deleting (so
    # its finalizers can finish) but not for creating, and discovery lists only those verbs.
    terminating: bool = False
    # Served from another kind's storage (events.k8s.io Events from core Events); None: its own.
    conversion: Conversion | None = field(default=None, compare=False, repr=False)
    # A custom resource whose CRD converts between versions with a webhook (strategy Webhook); None: its
    # versions differ only in apiVersion.
    conversion_webhook: ConversionWebhook | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @cached_property
    def group_resource(self) -> str:
        """Storage key of the kind, independent of the version served. One string per type: every stored key
        and every index entry of the kind (thousands per space) refers to it, rather than to a copy of its own."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_resource(self) -> str:
        """The group_resource whose storage holds this kind's objects."""
        return self.conversion.stored_as if self.conversion is not None else self.group_resource

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def storage_api_version(self) -> str:
        version = self.storage_version or self.version
        return f"{self.group}/{version}" if self.group else version


def served(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The stored object as the requested version shows it (conversion None: only apiVersion differs)."""
    if rtype.conversion is not None:
        return rtype.conversion.to_served(obj)
    if obj.get("apiVersion") != rtype.api_version:
        obj["apiVersion"] = rtype.api_version
    return obj


def stored(rtype: ResourceType, obj: dict[str, Any]) -> bytes:
    """The bytes to store: the object in its kind's storage version."""
    if rtype.conversion is not None:
        return orjson.dumps(rtype.conversion.to_stored(obj))
    if rtype.storage_version and rtype.storage_version != rtype.version:
        return orjson.dumps({**obj, "apiVersion": rtype.storage_api_version})
    return orjson.dumps(obj)
