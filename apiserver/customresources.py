"""Custom resources: turning an accepted CustomResourceDefinition into served resource types.

Each served version of a CRD becomes a :class:`ResourceType` whose Strategy prunes, defaults and
validates objects with the version's structural schema and its CEL rules, and whose table columns
come from ``additionalPrinterColumns``. Objects are stored in the storage version; with conversion
``None`` only ``apiVersion`` differs between versions, with ``Webhook`` the CRD's webhook converts them
(see ``apiserver.crdconversion``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml

from apimachinery import kubejsonpath
from apimachinery.durations import age
from apimachinery.errors import Cause
from apiserver.crdschema import default_object, schema_field_path, schema_for_version, validate_crd, validate_object
from apiserver.resourcetypes import ALL_VERBS, Column, ConversionWebhook, ResourceType, ScalePaths, Strategy
from cel.crd_rules import CompiledRules, compile_crd_rules
from cel.crd_rules import validate_object as validate_rules

CRD_RESOURCE = "customresourcedefinitions.apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first, then others by name."""
    m = _VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, version)


def schema_definition_name(group: str, version: str, kind: str) -> str:
    """Upstream's OpenAPI name for a custom resource schema: reversed group, version, kind."""
    return ".".join([*reversed(group.split(".")), version, kind])


class CustomResourceStrategy(Strategy):
    """Defaults and validation of one served version of a CRD (pruning happens at decode time)."""

    def __init__(self, kind: str, schema: Mapping[str, Any] | None, rules: CompiledRules | None) -> None:
        self.kind = kind
        self.schema = schema
        self.rules = rules

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        if self.schema is not None:
            default_object(obj, self.schema)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        if self.schema is not None:
            default_object(new, self.schema)

    def _check(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        causes: list[Cause] = []
        if self.schema is not None:
            # metadata.name is checked for every kind by the object service.
            causes.extend(validate_object(obj, self.schema, self.kind, check_name=False))
        if self.rules is not None and not causes:
            # Like the apiserver, CEL rules run only on objects that pass the schema.
            causes.extend(validate_rules(self.rules, obj, old))
        return causes

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        return self._check(obj, None)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        return self._check(new, old)


class CustomResourceDefinitionStrategy(Strategy):
    """Wraps the built-in CRD strategy with full schema checks and CEL compilation of every version."""

    def __init__(self, base: Strategy) -> None:
        self.base = base

    @property  # type: ignore[override]
    def status_sets_finalizers(self) -> bool:
        return self.base.status_sets_finalizers

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        self.base.prepare_for_create(obj)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        self.base.prepare_for_update(new, old)

    def _check(self, crd: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        causes = list(validate_crd(crd, old))
        if causes:
            return causes
        for i, version in enumerate((crd.get("spec") or {}).get("versions") or []):
            schema = schema_for_version(crd, version.get("name", ""))
            if schema is None:
                continue
            _rules, problems = compile_crd_rules(schema)
            # Upstream reports schema errors under spec.validation when all versions share one schema,
            # under spec.versions[i].schema otherwise; the CEL causes follow the same rule.
            prefix = schema_field_path(crd, i)
            for cause in problems:
                field = cause.field
                if field.startswith("spec.validation.openAPIV3Schema"):
                    field = prefix + field[len("spec.validation.openAPIV3Schema"):]
                elif not field.startswith("spec."):
                    field = f"{prefix}.{field}" if field else prefix
                causes.append(Cause(cause.type, cause.message, field))
        return causes

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        return self.base.validate(obj) + self._check(obj, None)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        return self.base.validate_update(new, old) + self._check(new, old)

    def validate_delete(self, obj: dict[str, Any]) -> list[Cause]:
        return self.base.validate_delete(obj)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def _cell(path: str, col_type: str) -> Any:
    steps = kubejsonpath.parse(path)

    def render(obj: dict[str, Any]) -> Any:
        found = kubejsonpath.values(obj, steps)
        if not found:
            return None
        if len(found) > 1:
            return ",".join(_text(v) for v in found)
        value = found[0]
        if col_type == "date" and isinstance(value, str):
            return age(value)
        if col_type in ("integer", "number", "boolean") and isinstance(value, (int, float, bool)):
            return value
        return _text(value)

    return render


def _columns(version: Mapping[str, Any]) -> tuple[Column, ...]:
    name = Column("Name", "string", lambda o: (o.get("metadata") or {}).get("name", ""),
                  "Name must be unique within a namespace.", "name")
    printer = version.get("additionalPrinterColumns") or []
    if not printer:
        return (name, Column("Age", "date", lambda o: age((o.get("metadata") or {}).get("creationTimestamp")),
                             "CreationTimestamp is a timestamp representing the server time when this object was "
                             "created."))
    cols = [name]
    for col in printer:
        col_type = col.get("type", "string")
        try:
            cell = _cell(col.get("jsonPath", ""), col_type)
        except kubejsonpath.JSONPathError:
            continue
        cols.append(Column(col.get("name", ""), col_type, cell, col.get("description", ""),
                           col.get("format", ""), int(col.get("priority", 0) or 0)))
    return tuple(cols)


def _scale(version: Mapping[str, Any]) -> ScalePaths | None:
    scale = (version.get("subresources") or {}).get("scale")
    if not isinstance(scale, dict):
        return None
    return ScalePaths(scale.get("specReplicasPath", ".spec.replicas"),
                      scale.get("statusReplicasPath", ".status.replicas"), scale.get("labelSelectorPath"))


def conversion_webhook(spec: Mapping[str, Any]) -> ConversionWebhook | None:
    """The webhook a CRD converts with (``spec.conversion.strategy: Webhook``; validated when written)."""
    conversion = spec.get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return None
    client = (conversion.get("webhook") or {}).get("clientConfig") or {}
    ca_bundle = client.get("caBundle")
    return ConversionWebhook(client.get("url", ""), base64.b64decode(ca_bundle) if ca_bundle else None)


def types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types an accepted CRD serves, preferred version first."""
    spec = crd.get("spec") or {}
    names = (crd.get("status") or {}).get("acceptedNames") or spec.get("names") or {}
    group = spec.get("group", "")
    versions = [v for v in spec.get("versions") or [] if v.get("served")]
    storage = next((v.get("name", "") for v in spec.get("versions") or [] if v.get("storage")), "")
    webhook = conversion_webhook(spec)
    out = []
    for version in sorted(versions, key=lambda v: version_priority(v.get("name", ""))):
        vname = version["name"]
        schema = schema_for_version(crd, vname)
        rules: CompiledRules | None = None
        if schema is not None:
            rules, _ = compile_crd_rules(schema)
        subresources = version.get("subresources") or {}
        served_subs = tuple(s for s in ("status", "scale") if s in subresources)
        out.append(ResourceType(
            group=group, version=vname, kind=names.get("kind", ""), plural=names.get("plural", ""),
            singular=names.get("singular") or names.get("kind", "").lower(),
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            subresources=served_subs, verbs=ALL_VERBS,
            schema_name=schema_definition_name(group, vname, names.get("kind", "")),
            strategic_merge=False, columns=_columns(version),
            strategy=CustomResourceStrategy(names.get("kind", ""), schema, rules),
            tracks_generation=True, schema=schema, storage_version=storage, scale=_scale(version),
            offload_validation=rules is not None, conversion_webhook=webhook,
        ))
    return out


def openapi_definitions(types: Sequence[ResourceType]) -> dict[str, dict[str, Any]]:
    """Definition entries for custom resource schemas, shaped like the built-in ones for OpenAPI/explain."""
    defs: dict[str, dict[str, Any]] = {}
    for t in types:
        if t.schema_name is None:
            continue
        node = dict(t.schema) if isinstance(t.schema, Mapping) else {"type": "object",
                                                                     "x-kubernetes-preserve-unknown-fields": True}
        props = dict(node.get("properties") or {})
        props.setdefault("apiVersion", {"type": "string", "description": "APIVersion defines the versioned "
                                        "schema of this representation of an object."})
        props.setdefault("kind", {"type": "string", "description": "Kind is a string value representing the "
                                  "REST resource this object represents."})
        props["metadata"] = {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                             "description": "Standard object's metadata."}
        node["properties"] = props
        node["x-kubernetes-group-version-kind"] = [{"group": t.group, "version": t.version, "kind": t.kind}]
        defs[t.schema_name] = node
    return defs


def types_from_crd_files(directory: Path) -> tuple[ResourceType, ...]:
    """The resource types of the CRD definitions (``*.yaml``) in ``directory``: kinds a package serves
    in every space from its own definitions, with the same machinery as a user's CRD."""
    types: list[ResourceType] = []
    for path in sorted(directory.glob("*.yaml")):
        types.extend(types_from_crd(yaml.safe_load(path.read_text())))
    return tuple(types)
