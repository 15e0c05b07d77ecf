"""core/v1 kinds other than Services: Namespaces, ConfigMaps, Secrets, ServiceAccounts, Events,
LimitRanges, ResourceQuotas and PersistentVolumeClaims.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Iterable
from typing import Any

from apimachinery.errors import Cause
from apimachinery.fieldselectors import (
    NAME_FIELDS,
    NAME_NAMESPACE_FIELDS,
    FieldGetter,
    SelectableFields,
    field_at,
)
from apimachinery.names import (
    duplicate,
    forbidden,
    invalid,
    is_config_map_key,
    is_qualified_name,
    not_supported,
    required,
    too_long,
)
from apimachinery.nested import dicts, get
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.objectfields import (
    Obj,
    child,
    immutable,
    metadata_of,
    name_of,
    normalised,
    set_default,
    spec_of,
)
from apiserver.builtin.strategies.quantities import parse_quantity, validate_quantities

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")


class NamespaceStrategy(BuiltinStrategy):
    name_rule = "dns1123-label"
    has_status = True
    selectable_fields = SelectableFields({**NAME_FIELDS, "status.phase": field_at("status", "phase")})

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Active"}

    def default(self, obj: Obj) -> None:
        # Every namespace carries its own name as a label, so selectors can pick namespaces by name.
        name = name_of(obj)
        if name:
            labels = child(metadata_of(obj), "labels")
            labels[NAMESPACE_NAME_LABEL] = name

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        # The "kubernetes" finalizer makes deletion wait for the namespace's content to be purged.
        spec = child(obj, "spec")
        finalizers = spec.get("finalizers") if isinstance(spec.get("finalizers"), list) else []
        if "kubernetes" not in finalizers:
            spec["finalizers"] = [*finalizers, "kubernetes"]

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # spec.finalizers only changes through the finalize subresource.
        old_spec = spec_of(old)
        if "finalizers" in old_spec:
            child(new, "spec")["finalizers"] = copy.deepcopy(old_spec["finalizers"])
        elif isinstance(new.get("spec"), dict):
            new["spec"].pop("finalizers", None)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = []
        finalizers = get(obj, "spec", "finalizers")
        for finalizer in finalizers if isinstance(finalizers, list) else []:
            name = str(finalizer)
            causes += [invalid("spec.finalizers", finalizer, m) for m in is_qualified_name(name)]
            if "/" not in name and name not in _STANDARD_FINALIZERS:
                causes.append(invalid("spec.finalizers", finalizer,
                                      "name is neither a standard finalizer name nor is it fully qualified"))
        return causes


# Objects are kept in etcd whole, and mounted whole into pods: data is capped at 1 MiB.
MAX_DATA_SIZE = 1024 * 1024


def _unwrap_base64(values: Any) -> None:
    """Base64 values as Go's decoder reads them: line breaks ignored (kustomize wraps generated Secrets at 70
    columns); kube stores the bytes and encodes them back unwrapped, so the stored form is unwrapped too."""
    if isinstance(values, dict):
        for key, value in values.items():
            if isinstance(value, str) and ("\n" in value or "\r" in value):
                values[key] = value.replace("\r", "").replace("\n", "")


def _decoded(value: Any) -> bytes:
    try:
        return base64.b64decode(value if isinstance(value, str) else "", validate=True)
    except (binascii.Error, ValueError):
        return b""


def _validate_data_keys(data: Any, path: str) -> list[Cause]:
    if not isinstance(data, dict):
        return []
    return [invalid(f"{path}[{key}]", key, m) for key in data for m in is_config_map_key(str(key))]


def _validate_immutable_data(new: Obj, old: Obj, fields: Iterable[str]) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    causes = []
    if new.get("immutable") is not True:
        causes.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    for field in fields:
        if normalised(new.get(field)) != normalised(old.get(field)):
            causes.append(forbidden(field, "field is immutable when `immutable` is set"))
    return causes


class ConfigMapStrategy(BuiltinStrategy):
    def default(self, obj: Obj) -> None:
        _unwrap_base64(obj.get("binaryData"))

    def validate(self, obj: Obj) -> list[Cause]:
        causes = _validate_data_keys(obj.get("data"), "data")
        causes += _validate_data_keys(obj.get("binaryData"), "binaryData")
        data, binary = obj.get("data"), obj.get("binaryData")
        if isinstance(data, dict) and isinstance(binary, dict):
            causes += [invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
                       for key in data if key in binary]
        size = sum(len(str(v).encode()) for v in (data or {}).values()) if isinstance(data, dict) else 0
        size += sum(len(_decoded(v)) for v in binary.values()) if isinstance(binary, dict) else 0
        if size > MAX_DATA_SIZE:
            # The whole object is too big, so upstream reports it against the empty path.
            causes.append(too_long("", MAX_DATA_SIZE))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new) + _validate_immutable_data(new, old, ("data", "binaryData"))


# Keys that a typed Secret must carry, per upstream's ValidateSecret.
_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


class SecretStrategy(BuiltinStrategy):
    selectable_fields = SelectableFields({**NAME_NAMESPACE_FIELDS, "type": field_at("type")})

    def default(self, obj: Obj) -> None:
        set_default(obj, "type", "Opaque")
        _unwrap_base64(obj.get("data"))
        # stringData is a write-only convenience: it lands in data, encoded, and is never stored.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            data = child(obj, "data")
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()

    def validate(self, obj: Obj) -> list[Cause]:
        causes = _validate_data_keys(obj.get("data"), "data")
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        for key, value in data.items():
            try:
                base64.b64decode(value if isinstance(value, str) else "\0", validate=True)
            except (binascii.Error, ValueError):
                causes.append(invalid(f"data[{key}]", "<secret contents redacted>", "must be base64-encoded"))
        if sum(len(_decoded(v)) for v in data.values()) > MAX_DATA_SIZE:
            causes.append(too_long("data", MAX_DATA_SIZE))
        secret_type = obj.get("type")
        for key in _SECRET_REQUIRED_KEYS.get(str(secret_type), ()):
            if key not in data:
                causes.append(required(f"data[{key}]"))
        if secret_type == "kubernetes.io/service-account-token":
            annotations = get(obj, "metadata", "annotations") or {}
            if not annotations.get("kubernetes.io/service-account.name"):
                causes.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
        if secret_type == "kubernetes.io/basic-auth" and not ({"username", "password"} & set(data)):
            causes.append(required("data[username]", "either username or password must be specified"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new) + immutable(new.get("type"), old.get("type"), "type")
        return causes + _validate_immutable_data(new, old, ("data",))


class ServiceAccountStrategy(BuiltinStrategy):
    def validate(self, obj: Obj) -> list[Cause]:
        causes = []
        for field in ("secrets", "imagePullSecrets"):
            for i, ref in enumerate(dicts(obj.get(field))):
                if not ref.get("name"):
                    causes.append(required(f"{field}[{i}].name"))
        return causes


def _involved_object(obj: Obj) -> Obj:
    # core/v1 calls it involvedObject, events.k8s.io/v1 calls it regarding.
    return obj.get("involvedObject") or obj.get("regarding") or {}


def involved_object_field(name: str) -> FieldGetter:
    """A field of the object an Event is about, whichever API's shape the Event is in."""
    return lambda obj: str(_involved_object(obj).get(name) or "")


def event_reporting_component(obj: Obj) -> str:
    return obj.get("reportingComponent") or obj.get("reportingController") or ""


def _event_source(obj: Obj) -> str:
    source = obj.get("source") or obj.get("deprecatedSource") or {}
    return source.get("component") or event_reporting_component(obj)


# The parts of the object an Event is about that a field selector may name, in both APIs.
INVOLVED_OBJECT_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


class EventStrategy(BuiltinStrategy):
    """core/v1 Events, old style (no eventTime) as kubectl and older clients write them, or new style."""

    selectable_fields = SelectableFields({
        **NAME_NAMESPACE_FIELDS,
        **{f"involvedObject.{name}": involved_object_field(name) for name in INVOLVED_OBJECT_FIELDS},
        "reason": field_at("reason"),
        "reportingComponent": event_reporting_component,
        "source": _event_source,
        "type": field_at("type"),
    })

    def validate(self, obj: Obj) -> list[Cause]:
        event_ns = get(obj, "metadata", "namespace") or ""
        involved_ns = get(obj, "involvedObject", "namespace") or ""
        mismatch = invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
        if not obj.get("eventTime"):
            # Events about cluster-scoped objects live in "default", for compatibility with old clients.
            if involved_ns:
                return [mismatch] if event_ns != involved_ns else []
            return [mismatch] if event_ns not in ("", "default") else []
        causes = [mismatch] if not involved_ns and event_ns not in ("default", "kube-system") else []
        component = obj.get("reportingComponent")
        if not component:
            causes.append(required("reportingComponent"))
        else:
            causes += [invalid("reportingComponent", component, m) for m in is_qualified_name(str(component))]
        for key in ("reportingInstance", "action", "reason"):
            if not obj.get(key):
                causes.append(required(key))
        return causes


class LimitRangeStrategy(BuiltinStrategy):
    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        seen: set[str] = set()
        for i, limit in enumerate(dicts(get(obj, "spec", "limits"))):
            at = f"spec.limits[{i}]"
            limit_type = limit.get("type")
            if not limit_type:
                causes.append(required(f"{at}.type"))
            elif str(limit_type) in seen:
                causes.append(duplicate(f"{at}.type", limit_type))
            seen.add(str(limit_type))
            for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                causes += validate_quantities(limit.get(key), f"{at}.{key}")
            low, high = limit.get("min"), limit.get("max")
            if isinstance(low, dict) and isinstance(high, dict):
                for resource, minimum in low.items():
                    lo, hi = parse_quantity(minimum), parse_quantity(high.get(resource))
                    if lo is not None and hi is not None and lo > hi:
                        detail = f"min value {minimum} is greater than max value {high[resource]}"
                        causes.append(invalid(f"{at}.min[{resource}]", minimum, detail))
        return causes


class ResourceQuotaStrategy(BuiltinStrategy):
    has_status = True

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_quantities(get(obj, "spec", "hard"), "spec.hard")


_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


class PersistentVolumeClaimStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Pending"}

    def default(self, obj: Obj) -> None:
        set_default(child(obj, "spec"), "volumeMode", "Filesystem")

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes = []
        modes = spec.get("accessModes")
        if not modes:
            causes.append(required("spec.accessModes", "at least 1 access mode is required"))
        for mode in modes if isinstance(modes, list) else []:
            if mode not in _ACCESS_MODES:
                causes.append(not_supported("spec.accessModes", mode, _ACCESS_MODES))
        if not spec.get("dataSourceRef") and not spec.get("dataSource"):
            storage = get(spec, "resources", "requests", "storage")
            if storage is None:
                causes.append(required("spec.resources[storage]"))
            elif (parsed := parse_quantity(storage)) is None or parsed <= 0:
                causes.append(invalid("spec.resources[storage]", storage, "must be greater than zero"))
        if spec.get("volumeMode") not in ("Block", "Filesystem"):
            causes.append(not_supported("spec.volumeMode", spec.get("volumeMode"), ("Block", "Filesystem")))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        new_spec, old_spec = copy.deepcopy(spec_of(new)), copy.deepcopy(spec_of(old))
        # The binder may set volumeName once; bound claims may grow; the attributes class may move.
        if not old_spec.get("volumeName"):
            old_spec["volumeName"] = new_spec.get("volumeName")
        for spec in (new_spec, old_spec):
            spec.pop("volumeAttributesClassName", None)
            requests = get(spec, "resources", "requests")
            if get(old, "status", "phase") == "Bound" and isinstance(requests, dict):
                requests.pop("storage", None)
        if normalised(new_spec) != normalised(old_spec):
            causes.append(forbidden("spec", "spec is immutable after creation except resources.requests and "
                                            "volumeAttributesClassName for bound claims"))
        return causes
