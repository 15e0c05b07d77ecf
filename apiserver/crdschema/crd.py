"""Validation of ``apiextensions.k8s.io/v1`` CustomResourceDefinitions, as the apiserver does it.

Upstream validates the *internal* version of a CRD, which explains two things clients see:

* when every version has the same schema (the usual single-version case), conversion from v1
  moves it to the spec, and its errors are reported under ``spec.validation.openAPIV3Schema``;
  otherwise under ``spec.versions[i].schema.openAPIV3Schema``. The same goes for
  ``subresources``, ``additionalPrinterColumns`` and ``selectableFields``;
* ``spec.version`` is the first version's name, so a bad first name is reported twice.

Before validation the request is defaulted (``singular``, ``listKind``, ``conversion``) and the
status is prepared (create: ``storedVersions`` is the storage version; update: the old status plus
the storage version), so removing a version still in ``status.storedVersions`` fails.

spacehub-specific: a conversion webhook is reached only through its ``url`` (a ``service`` is refused, as
for admission webhooks) and must speak ConversionReview ``v1``.
CEL compilation of ``x-kubernetes-validations`` is done by cel, and ``metadata`` beyond
the ``<plural>.<group>`` name rule (DNS-subdomain names, labels, annotations, update immutability)
by the generic object machinery in apiserver.service.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from apimachinery import gofmt
from apimachinery.errors import Cause
from apimachinery.names import is_dns1035_label, is_dns1123_subdomain
from apiserver.clientconfig import validate_client_config
from apiserver.crdschema import formats, internaljson
from apiserver.crdschema.defaultsvalidation import validate_defaults
from apiserver.crdschema.schemachecks import (
    Options,
    check_schema,
    field_path_string,
    has_defaults,
    has_invalid_map_list_keys,
    has_invalid_types,
    has_kubernetes_extensions,
    has_non_atomic_set_type,
    root_fields_problem,
    root_validator,
    schema_has,
    valid_field_path,
)
from apiserver.crdschema.schemavalidation import go_equal
from apiserver.crdschema.structural import items_schema, new_structural_error, sstr, stype, validate_structural

_PER_VERSION = ("schema", "subresources", "additionalPrinterColumns", "selectableFields")
_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
_APPROVAL = "api-approved.kubernetes.io"
_APPROVAL_LINK = "see https://github.com/kubernetes/enhancements/pull/1111"
MAX_SELECTABLE_FIELDS = 8


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _versions(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [v for v in _list(spec.get("versions")) if isinstance(v, dict)]


# --- defaulting and helpers others use -----------------------------------------------------------


def default_crd(crd: dict[str, Any]) -> None:
    """The v1 defaults upstream applies when decoding a CRD (in place)."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = _text(names.get("kind"))
        if not names.get("singular"):
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = kind + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}


def schema_for_version(crd: Mapping[str, Any], version: str) -> Mapping[str, Any] | None:
    """The version's ``openAPIV3Schema`` (or a legacy top-level ``spec.validation`` one)."""
    spec = _dict(crd.get("spec"))
    for v in _versions(spec):
        if v.get("name") == version:
            schema = _dict(v.get("schema")).get("openAPIV3Schema")
            if isinstance(schema, Mapping):
                return schema
            break
    legacy = _dict(spec.get("validation")).get("openAPIV3Schema")
    return legacy if isinstance(legacy, Mapping) else None


def _normalized(value: Any) -> Any:
    """Semantic equality of converted values: nil and empty slices are the same, so are null fields."""
    if isinstance(value, Mapping):
        return {k: _normalized(v) for k, v in value.items() if v is not None and v != []}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def _field_value(version: Mapping[str, Any], field: str) -> Any:
    value = _normalized(version.get(field))
    # The lists are slices: nil and empty are semantically equal. schema and subresources are
    # pointers, where an empty object differs from none.
    if field in ("additionalPrinterColumns", "selectableFields") and not value:
        return None
    return value


def _hoisted(versions: list[dict[str, Any]]) -> set[str]:
    """Per-version fields that conversion moves to the spec because all versions agree on them."""
    if not versions:
        return set()
    return {field for field in _PER_VERSION
            if all(go_equal(_field_value(v, field), _field_value(versions[0], field)) for v in versions)}


def schema_field_path(crd: Mapping[str, Any], index: int) -> str:
    """Where errors in version ``index``'s schema are reported (see the module docstring)."""
    if "schema" in _hoisted(_versions(_dict(crd.get("spec")))):
        return "spec.validation.openAPIV3Schema"
    return f"spec.versions[{index}].schema.openAPIV3Schema"


# --- pieces of the spec --------------------------------------------------------------------------


def _enum_strings(path: str, value: str, accepted: tuple[str, ...], required: bool) -> list[Cause]:
    if not value:
        return [gofmt.required(path)] if required else []
    return [] if value in accepted else [gofmt.not_supported(path, value, accepted)]


def _names(names: Mapping[str, Any], path: str) -> list[Cause]:
    out = []
    for field, lower in (("plural", False), ("singular", False), ("kind", True), ("listKind", True)):
        value = _text(names.get(field))
        if not value:
            continue
        errs = is_dns1035_label(value.lower() if lower else value)
        if errs:
            detail = ",".join(errs)
            if lower:
                detail = "may have mixed case, but should otherwise match: " + detail
            out.append(gofmt.invalid(gofmt.child(path, field), value, detail))
    for i, short in enumerate(_list(names.get("shortNames"))):
        if errs := is_dns1035_label(_text(short)):
            out.append(gofmt.invalid(gofmt.index(gofmt.child(path, "shortNames"), i), short, ",".join(errs)))
    kind = _text(names.get("kind"))
    if kind and kind == names.get("listKind"):
        out.append(gofmt.invalid(gofmt.child(path, "listKind"), kind, "kind and listKind may not be the same"))
    for i, category in enumerate(_list(names.get("categories"))):
        if errs := is_dns1035_label(_text(category)):
            out.append(gofmt.invalid(gofmt.index(gofmt.child(path, "categories"), i), category, ",".join(errs)))
    return out


def _simple_json_path(value: str, path: str) -> list[Cause]:
    if not value:
        return [gofmt.invalid(path, value, "must not be empty")]
    if value[0] != ".":
        return [gofmt.invalid(path, value, "must be a simple json path starting with .")]
    return []


def _subresources(sub: Any, path: str) -> list[Cause]:
    scale = _dict(sub).get("scale") if isinstance(sub, Mapping) else None
    if not isinstance(scale, Mapping):
        return []
    out: list[Cause] = []
    for field, prefix, under in (("specReplicasPath", ".spec.", ".spec"),
                                 ("statusReplicasPath", ".status.", ".status")):
        where = gofmt.child(path, f"scale.{field}")
        value = _text(scale.get(field))
        if not value:
            out.append(gofmt.required(where))
        elif errs := _simple_json_path(value, where):
            out.extend(errs)
        elif not value.startswith(prefix):
            out.append(gofmt.invalid(where, value, f"should be a json path under {under}"))
    selector = scale.get("labelSelectorPath")
    if isinstance(selector, str) and selector:
        where = gofmt.child(path, "scale.labelSelectorPath")
        if errs := _simple_json_path(selector, where):
            out.extend(errs)
        elif not selector.startswith((".spec.", ".status.")):
            out.append(gofmt.invalid(where, gofmt.GoJSON(selector),
                                     "should be a json path under either .spec or .status"))
    return out


def _column(col: Mapping[str, Any], path: str) -> list[Cause]:
    out = []
    if not _text(col.get("name")):
        out.append(gofmt.required(gofmt.child(path, "name")))
    col_type = _text(col.get("type"))
    types_text = "must be one of " + ",".join(_COLUMN_TYPES)
    if not col_type:
        out.append(gofmt.required(gofmt.child(path, "type"), types_text))
    elif col_type not in _COLUMN_TYPES:
        out.append(gofmt.invalid(gofmt.child(path, "type"), col_type, types_text))
    fmt = _text(col.get("format"))
    if fmt and fmt not in _COLUMN_FORMATS:
        out.append(gofmt.invalid(gofmt.child(path, "format"), fmt, "must be one of " + ",".join(_COLUMN_FORMATS)))
    json_path = _text(col.get("jsonPath"))
    if not json_path:
        out.append(gofmt.required(gofmt.child(path, "JSONPath")))
    else:
        out.extend(_simple_json_path(json_path, gofmt.child(path, "JSONPath")))
    return out


def _selectable_fields(fields: list[Any], schema: Mapping[str, Any], path: str) -> list[Cause]:
    out = []
    unique: set[str] = set()
    for i, f in enumerate(fields):
        where = gofmt.child(gofmt.index(path, i), "jsonPath")
        json_path = _text(_dict(f).get("jsonPath"))
        if not json_path:
            out.append(gofmt.required(where))
            continue
        resolved = valid_field_path(json_path, schema, allow_array_notation=False)
        if isinstance(resolved, str):
            out.append(gofmt.invalid(where, json_path, f"is an invalid path: {resolved}"))
            continue
        segments, found = resolved
        if segments and segments[0] == ("metadata", True):
            out.append(gofmt.invalid(where, json_path, "must not point to fields in metadata"))
        if found is None or stype(found) not in ("string", "boolean", "integer"):
            out.append(gofmt.invalid(where, json_path, "must point to a field of type string, boolean or integer. "
                                                       "Enum string fields and strings with formats are allowed."))
        key = field_path_string(segments)
        if key in unique:
            out.append(gofmt.duplicate(where, json_path))
        unique.add(key)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        out.append(gofmt.too_many(path, len(unique), MAX_SELECTABLE_FIELDS))
    return out


def _validation(container: Any, status_enabled: bool, opts: Options, path: str) -> list[Cause]:
    """validateCustomResourceDefinitionValidation for one schema (``path`` is its CustomResourceValidation)."""
    if not isinstance(container, Mapping):
        return []
    schema = container.get("openAPIV3Schema")
    if not isinstance(schema, Mapping):
        return []
    root = gofmt.child(path, "openAPIV3Schema")
    out: list[Cause] = []
    if status_enabled and (problem := root_fields_problem(schema, root)) is not None:
        out.append(problem)
    if schema.get("nullable") is True:
        out.append(gofmt.forbidden(gofmt.child(path, "openAPIV3Schema.nullable"),
                                   "nullable cannot be true at the root"))
    init_errors: list[Cause] = []
    if opts.require_structural_schema:
        if (err := new_structural_error(schema)) is not None:
            # Overlaps with the per-node checks below; shown only when those find nothing.
            init_errors.append(gofmt.invalid(root, "", err))
        elif structural := validate_structural(root, schema):
            out.extend(structural)
        else:
            out.extend(validate_defaults(root, schema, opts.require_pruned_defaults))
    check_schema(schema, root, root_validator(opts), True, opts, out)
    if not out:
        out.extend(init_errors)
    return out


def _deprecation_warning(version: Mapping[str, Any]) -> list[str]:
    warning = version.get("deprecationWarning")
    if version.get("deprecated") is not True and warning is not None:
        return ["can only be set for deprecated versions"]
    if not isinstance(warning, str):
        return []
    errs = []
    if len(warning.encode()) > 256:
        errs.append("must be <= 256 characters long")
    if not warning:
        errs.append("must not be an empty string")
    offset = 0
    for ch in warning:
        if not (ch.isprintable() or ch == " "):
            errs.append("must only contain printable UTF-8 characters; non-printable character found at index "
                        f"{offset}")
            break
        offset += len(ch.encode())
    return errs


def _status_enabled(sub: Any) -> bool:
    return isinstance(sub, Mapping) and isinstance(sub.get("status"), Mapping)


def _conversion(conversion: Any, path: str) -> list[Cause]:
    if not isinstance(conversion, Mapping):
        return []
    out: list[Cause] = []
    strategy = _text(conversion.get("strategy"))
    out.extend(_enum_strings(gofmt.child(path, "strategy"), strategy, ("None", "Webhook"), True))
    # v1's webhook.clientConfig and webhook.conversionReviewVersions, named as the internal fields.
    webhook = _dict(conversion.get("webhook"))
    client = webhook.get("clientConfig")
    versions = webhook.get("conversionReviewVersions")
    if strategy != "Webhook":
        if client is not None:
            out.append(gofmt.forbidden(gofmt.child(path, "webhookClientConfig"),
                                       "should not be set when strategy is not set to Webhook"))
        if versions:
            out.append(gofmt.forbidden(gofmt.child(path, "conversionReviewVersions"),
                                       "should not be set when strategy is not set to Webhook"))
        return out
    if not isinstance(client, Mapping):
        out.append(gofmt.required(gofmt.child(path, "webhookClientConfig"), "required when strategy is set to Webhook"))
    else:
        validate_client_config(client, gofmt.child(path, "webhookClientConfig"), out)
    # spacehub speaks ConversionReview v1 only (v1beta1 reviews are long deprecated).
    if not versions:
        out.append(gofmt.required(gofmt.child(path, "conversionReviewVersions"), "must specify one of v1"))
    elif "v1" not in _list(versions):
        out.append(gofmt.invalid(gofmt.child(path, "conversionReviewVersions"), versions,
                                 "must include at least one of v1"))
    return out


def _spec(spec: dict[str, Any], opts: Options, require_openapi_schema: bool) -> list[Cause]:
    out: list[Cause] = []
    group = _text(spec.get("group"))
    if not group:
        out.append(gofmt.required("spec.group"))
    elif errs := is_dns1123_subdomain(group):
        out.append(gofmt.invalid("spec.group", group, ",".join(errs)))
    elif len(group.split(".")) < 2:
        out.append(gofmt.invalid("spec.group", group, "should be a domain with at least one dot"))
    out.extend(_enum_strings("spec.scope", _text(spec.get("scope")), ("Cluster", "Namespaced"), True))

    preserve = spec.get("preserveUnknownFields") is True
    versions = _versions(spec)
    hoisted = _hoisted(versions)
    first = versions[0] if versions else {}
    top_schema = first.get("schema") if "schema" in hoisted else None
    top_subresources = first.get("subresources") if "subresources" in hoisted else None
    top_columns = first.get("additionalPrinterColumns") if "additionalPrinterColumns" in hoisted else None
    top_selectable = first.get("selectableFields") if "selectableFields" in hoisted else None

    def per_version(v: Mapping[str, Any], field: str) -> Any:
        return None if field in hoisted else v.get(field)

    top_has_schema = isinstance(_dict(top_schema).get("openAPIV3Schema"), Mapping)
    if not top_has_schema:
        for i, v in enumerate(versions):
            has = isinstance(_dict(per_version(v, "schema")).get("openAPIV3Schema"), Mapping)
            where = f"spec.versions[{i}].schema.openAPIV3Schema"
            if require_openapi_schema and not has:
                out.append(gofmt.required(where))
            elif not require_openapi_schema and not preserve and v.get("served") is True and not has:
                out.append(gofmt.required(where, "because otherwise all fields are pruned"))
    if preserve and any(has_defaults(_dict(v.get("schema")).get("openAPIV3Schema")) for v in versions):
        out.append(gofmt.invalid("spec.preserveUnknownFields", True, "must be false in order to use defaults in the "
                                                                    "schema"))
    if not preserve or any(has_defaults(s) or has_kubernetes_extensions(s) for s in _schemas(spec)):
        # Pruning (and defaulting, and the extensions) require structural schemas.
        opts = dataclasses.replace(opts, require_structural_schema=True)

    storage = 0
    seen: set[str] = set()
    unique = True
    any_status = _status_enabled(top_subresources) or any(_status_enabled(per_version(v, "subresources"))
                                                           for v in versions)
    for i, v in enumerate(versions):
        base = f"spec.versions[{i}]"
        name = _text(v.get("name"))
        if v.get("storage") is True:
            storage += 1
        if name in seen:
            unique = False
        seen.add(name)
        if errs := is_dns1035_label(name):
            out.append(gofmt.invalid(f"{base}.name", name, ",".join(errs)))
        warning = v.get("deprecationWarning")
        out.extend(gofmt.invalid(f"{base}.deprecationWarning", gofmt.GoJSON(warning), e)
                   for e in _deprecation_warning(v))
        subresources = per_version(v, "subresources") if "subresources" not in hoisted else top_subresources
        out.extend(_validation(per_version(v, "schema"), _status_enabled(subresources), opts, f"{base}.schema"))
        out.extend(_subresources(per_version(v, "subresources"), f"{base}.subresources"))
        for j, col in enumerate(_list(per_version(v, "additionalPrinterColumns"))):
            out.extend(_column(_dict(col), f"{base}.additionalPrinterColumns[{j}]"))
        selectable = _list(per_version(v, "selectableFields"))
        if selectable:
            schema = _dict(per_version(v, "schema")).get("openAPIV3Schema")
            if not isinstance(schema, Mapping):
                out.append(gofmt.invalid(f"{base}.selectableFields", "",
                                         "may only be set when `version.schema.openAPIV3Schema` is not included"))
            else:
                if (err := new_structural_error(schema)) is not None:
                    out.append(gofmt.invalid(f"{base}.schema.openAPIV3Schema", "", err))
                out.extend(_selectable_fields(selectable, schema, f"{base}.selectableFields"))

    versions_value = gofmt.GoJSON(raw=internaljson.versions_json(versions, hoisted)
                                  if isinstance(spec.get("versions"), list) else "null")
    if not unique:
        out.append(gofmt.invalid("spec.versions", versions_value, "must contain unique version names"))
    if storage != 1:
        out.append(gofmt.invalid("spec.versions", versions_value, "must have exactly one version marked as storage "
                                                                  "version"))
    # Conversion sets spec.version to the first version's name and validates it again.
    first_name = _text(first.get("name"))
    if first_name and (errs := is_dns1035_label(first_name)):
        out.append(gofmt.invalid("spec.version", first_name, ",".join(errs)))

    names = _dict(spec.get("names"))
    for field in ("plural", "singular", "kind", "listKind"):
        if not _text(names.get(field)):
            out.append(gofmt.required(f"spec.names.{field}"))
    out.extend(_names(names, "spec.names"))
    out.extend(_validation(top_schema, any_status, opts, "spec.validation"))
    out.extend(_subresources(top_subresources, "spec.subresources"))
    for j, col in enumerate(_list(top_columns)):
        out.extend(_column(_dict(col), f"spec.additionalPrinterColumns[{j}]"))
    if _list(top_selectable):
        schema = _dict(top_schema).get("openAPIV3Schema")
        if not isinstance(top_schema, Mapping):
            out.append(gofmt.invalid("spec.selectableFields", "",
                                     "may only be set when validations.schema is included"))
        elif isinstance(schema, Mapping):
            if (err := new_structural_error(schema)) is not None:
                out.append(gofmt.invalid("spec.schema.openAPIV3Schema", "", err))
            out.extend(_selectable_fields(_list(top_selectable), schema, "spec.selectableFields"))
    conversion = spec.get("conversion")
    strategy = _text(_dict(conversion).get("strategy"))
    if strategy and strategy != "None" and preserve:
        out.append(gofmt.invalid("spec.conversion.strategy", strategy, "must be None if spec.preserveUnknownFields "
                                                                      "is true"))
    out.extend(_conversion(conversion, "spec.conversion"))
    return out


def _stored_versions(stored: list[str] | None, versions: list[dict[str, Any]]) -> list[Cause]:
    path = "status.storedVersions"
    if not stored:
        return [gofmt.invalid(path, gofmt.GoJSON(stored), "must have at least one stored version")]
    out = []
    remaining = {v: i for i, v in enumerate(stored)}
    for v in versions:
        name = _text(v.get("name"))
        if v.get("storage") is True and name not in remaining:
            out.append(gofmt.invalid(path, gofmt.GoJSON(stored), f"must have the storage version {name}"))
        remaining.pop(name, None)
    for v, i in sorted(remaining.items(), key=lambda kv: kv[1]):
        out.append(gofmt.invalid(gofmt.index(path, i), v,
                                 f"missing from spec.versions; {v} was previously a storage version, and must remain "
                                 f"in spec.versions until a storage migration ensures no data remains persisted in "
                                 f"{v} and removes {v} from status.storedVersions"))
    return out


def _approval_state(annotations: Mapping[str, Any]) -> tuple[str, str]:
    value = _text(annotations.get(_APPROVAL))
    if not value:
        return "missing", (f"protected groups must have approval annotation {gofmt.go_quote(_APPROVAL)}, "
                           f"{_APPROVAL_LINK}")
    if value.startswith("unapproved"):
        return "bypassed", ""
    if formats.is_request_uri(value) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?[^/?#@]+", value):
        return "approved", ""
    return "invalid", (f"protected groups must have approval annotation {gofmt.go_quote(_APPROVAL)} with either a "
                       f'URL or a reason starting with "unapproved", {_APPROVAL_LINK}')


def _api_approval(crd: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    group = _text(_dict(crd.get("spec")).get("group"))
    if not (group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))):
        return []
    annotations = _dict(_dict(crd.get("metadata")).get("annotations"))
    state, reason = _approval_state(annotations)
    if old is not None and _approval_state(_dict(_dict(old.get("metadata")).get("annotations")))[0] == state:
        return []
    path = f"metadata.annotations[{_APPROVAL}]"
    if state == "missing":
        return [gofmt.required(path, reason)]
    if state == "invalid":
        return [gofmt.invalid(path, _text(annotations.get(_APPROVAL)), reason)]
    return []


def _mask_trailing_dash(name: str) -> str:
    # Upstream's maskTrailingDash drops two characters, not one, before appending "a".
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def _metadata(crd: Mapping[str, Any], spec: Mapping[str, Any]) -> list[Cause]:
    """The CRD-specific part of upstream's name function: the name must be <plural>.<group>.

    Its other part (a DNS subdomain, and "name or generateName is required") is the generic object
    check spacehub's service applies to every kind, so it is not repeated here.
    """
    meta = _dict(crd.get("metadata"))
    names = _dict(spec.get("names"))
    required_name = f"{_text(names.get('plural'))}.{_text(spec.get('group'))}"
    mismatch = 'must be spec.names.plural+"."+spec.group'
    out = []
    generate = _text(meta.get("generateName"))
    if generate:
        for msg in is_dns1123_subdomain(_mask_trailing_dash(generate)) + (
                [mismatch] if generate != required_name else []):
            out.append(gofmt.invalid("metadata.generateName", generate, msg))
    name = _text(meta.get("name"))
    if name and name != required_name:
        out.append(gofmt.invalid("metadata.name", name, mismatch))
    return out


def _established(crd: Mapping[str, Any]) -> bool:
    return any(isinstance(c, Mapping) and c.get("type") == "Established" and c.get("status") == "True"
               for c in _list(_dict(crd.get("status")).get("conditions")))


def _schemas(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    schemas = [_dict(v.get("schema")).get("openAPIV3Schema") for v in _versions(spec)]
    schemas.append(_dict(spec.get("validation")).get("openAPIV3Schema"))
    return [s for s in schemas if isinstance(s, Mapping)]


def _has_unpruned_defaults(schema: Mapping[str, Any]) -> bool:
    if not has_defaults(schema) or new_structural_error(schema) is not None or validate_structural("", schema):
        return False
    return any(c.message.endswith("must not have unknown fields") for c in validate_defaults("", schema, True))


def _options_for_update(old_spec: Mapping[str, Any]) -> tuple[Options, bool]:
    """Checks that only apply if the old object already satisfied them (no tightening on update)."""
    schemas = _schemas(old_spec)
    all_have_schema = isinstance(_dict(old_spec.get("validation")).get("openAPIV3Schema"), Mapping) or all(
        isinstance(_dict(v.get("schema")).get("openAPIV3Schema"), Mapping) for v in _versions(old_spec))
    return Options(
        require_valid_property_type=not any(has_invalid_types(s) for s in schemas),
        require_structural_schema=not any(new_structural_error(s) is not None or validate_structural("", s)
                                          for s in schemas),
        require_pruned_defaults=not any(_has_unpruned_defaults(s) for s in schemas),
        require_atomic_set_type=not any(has_non_atomic_set_type(s) for s in schemas),
        require_map_list_keys_map_set_validation=not any(has_invalid_map_list_keys(s) for s in schemas),
    ), all_have_schema


def validate_crd(crd: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[Cause]:
    """Causes for an apiextensions.k8s.io/v1 CustomResourceDefinition (create, or update from ``old``)."""
    c = copy.deepcopy(dict(crd))
    default_crd(c)
    spec = _dict(c.get("spec"))
    versions = _versions(spec)
    storage = next((_text(v.get("name")) for v in versions if v.get("storage") is True), None)
    if old is None:
        stored: list[str] | None = [storage] if storage is not None else None
        status: Mapping[str, Any] = {}
        opts, require_schema = Options(), True
    else:
        status = _dict(old.get("status"))
        stored = [s for s in _list(status.get("storedVersions")) if isinstance(s, str)]
        if storage is not None and storage not in stored:
            stored.append(storage)
        opts, require_schema = _options_for_update(_dict(old.get("spec")))

    out: list[Cause] = []
    if old is None:
        out.extend(_metadata(c, spec))
    out.extend(_spec(spec, opts, require_schema))
    if old is not None:
        old_spec = _dict(old.get("spec"))
        old_names = _dict(old_spec.get("names"))
        names = _dict(spec.get("names"))
        immutable = [("spec.group", spec.get("group"), old_spec.get("group")),
                     ("spec.names.plural", names.get("plural"), old_names.get("plural"))]
        if _established(old):
            immutable[:0] = [("spec.scope", spec.get("scope"), old_spec.get("scope")),
                             ("spec.names.kind", names.get("kind"), old_names.get("kind"))]
        for path, new_value, old_value in immutable:
            if new_value != old_value:
                out.append(gofmt.invalid(path, new_value if new_value is not None else "", "field is immutable"))
    out.extend(_names(_dict(status.get("acceptedNames")), "status.acceptedNames"))
    out.extend(_stored_versions(stored, versions))
    out.extend(_api_approval(c, old))
    old_preserve = old is not None and _dict(old.get("spec")).get("preserveUnknownFields") is True
    if not old_preserve and spec.get("preserveUnknownFields") is True:
        out.append(gofmt.invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                                 "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
    return out


# --- warnings ------------------------------------------------------------------------------------


def _unrecognized_formats(schema: Mapping[str, Any]) -> list[str]:
    found: list[str] = []

    def pred(s: Mapping[str, Any]) -> bool:
        fmt = sstr(s, "format")
        if fmt:
            t = stype(s)
            if t in ("", "string"):
                bad = not formats.supported_string_format(fmt)
            elif t == "integer":
                bad = fmt not in ("int32", "int64")
            elif t == "number":
                bad = fmt not in ("float", "double")
            else:
                bad = True
            if bad:
                found.append(fmt)
        return False

    schema_has(schema, pred)
    return found


def _set_of_compounds(schema: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()

    def pred(s: Mapping[str, Any]) -> bool:
        items = items_schema(s)
        if s.get("x-kubernetes-list-type") == "set" and items is not None and stype(items) in ("object", "array"):
            found.add(f"x-kubernetes-list-type: set for items of type {gofmt.go_quote(stype(items))} is not "
                      "supported by server-side apply or CEL validation rules")
        return False

    schema_has(schema, pred)
    return found


def _warning_schemas(crd: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Each distinct schema once: identical per-version schemas count as the one top-level schema."""
    versions = _versions(_dict(crd.get("spec")))
    if "schema" in _hoisted(versions):
        versions = versions[:1]
    schemas = [_dict(v.get("schema")).get("openAPIV3Schema") for v in versions]
    return [s for s in schemas if isinstance(s, Mapping)]


def crd_warnings(crd: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    """The warnings upstream returns for a CRD write (only newly introduced ones on update)."""
    new_formats = [f for s in _warning_schemas(crd) for f in _unrecognized_formats(s)]
    old_formats = {f for s in _warning_schemas(old) for f in _unrecognized_formats(s)} if old else set()
    warnings = [f"unrecognized format {gofmt.go_quote(f)}" for f in new_formats if f not in old_formats]
    old_sets = set().union(*(_set_of_compounds(s) for s in _warning_schemas(old))) if old else set()
    new_sets = set().union(*(_set_of_compounds(s) for s in _warning_schemas(crd)))
    warnings.extend(sorted(new_sets - old_sets))
    # The apiserver's warning recorder drops repeated texts.
    return list(dict.fromkeys(warnings))
