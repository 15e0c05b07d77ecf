"""apiextensions.k8s.io/v1 CustomResourceDefinitions: names, scope and versions (serving the defined
resources is elsewhere).
"""

from __future__ import annotations

from apimachinery.errors import Cause
from apimachinery.names import duplicate, invalid, is_dns1035_label, is_dns1123_subdomain, not_supported, required
from apimachinery.nested import dicts, get
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.objectfields import Obj, child, immutable, name_of, set_default, spec_of


def _storage_version(obj: Obj) -> str | None:
    for version in dicts(get(obj, "spec", "versions")):
        if version.get("storage") is True and isinstance(version.get("name"), str):
            return version["name"]
    return None


class CustomResourceDefinitionStrategy(BuiltinStrategy):
    """Stored and validated for names and scope only; serving the defined resources is elsewhere."""

    has_status = True
    status_sets_finalizers = True

    def initial_status(self, obj: Obj) -> Obj:
        storage = _storage_version(obj)
        return {"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": [storage] if storage else []}

    def default(self, obj: Obj) -> None:
        spec = child(obj, "spec")
        names = child(spec, "names")
        kind = names.get("kind")
        if isinstance(kind, str) and kind:
            set_default(names, "singular", kind.lower())
            set_default(names, "listKind", f"{kind}List")
        set_default(child(spec, "conversion"), "strategy", "None")

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # Every version ever used for storage stays listed until a migration removes it.
        storage = _storage_version(new)
        status = child(new, "status")
        stored = status.get("storedVersions") if isinstance(status.get("storedVersions"), list) else []
        if storage and storage not in stored:
            status["storedVersions"] = [*stored, storage]

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
        causes: list[Cause] = []
        group = spec.get("group")
        if not group:
            causes.append(required("spec.group"))
        else:
            causes += [invalid("spec.group", group, m) for m in is_dns1123_subdomain(str(group))]
            if "." not in str(group):
                causes.append(invalid("spec.group", group, "should be a domain with at least one dot"))
        for key in ("plural", "singular"):
            value = names.get(key)
            if key == "plural" and not value:
                causes.append(required("spec.names.plural"))
            elif value:
                errors = is_dns1035_label(str(value))
                if errors:
                    causes.append(invalid(f"spec.names.{key}", value, ",".join(errors)))
        for key in ("kind", "listKind"):
            if not names.get(key):
                causes.append(required(f"spec.names.{key}"))
        scope = spec.get("scope")
        if not scope:
            causes.append(required("spec.scope"))
        elif scope not in ("Cluster", "Namespaced"):
            causes.append(not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
        if names.get("plural") and group and name_of(obj) != f"{names['plural']}.{group}":
            causes.append(invalid("metadata.name", name_of(obj), 'must be spec.names.plural+"."+spec.group'))
        versions = dicts(spec.get("versions"))
        if sum(1 for v in versions if v.get("storage") is True) != 1:
            causes.append(invalid("spec.versions", spec.get("versions"),
                                  "must have exactly one version marked as storage version"))
        seen: set[str] = set()
        for i, version in enumerate(versions):
            name = version.get("name")
            if not name:
                causes.append(required(f"spec.versions[{i}].name"))
                continue
            causes += [invalid(f"spec.versions[{i}].name", name, m) for m in is_dns1035_label(str(name))]
            if str(name) in seen:
                causes.append(duplicate(f"spec.versions[{i}].name", name))
            seen.add(str(name))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        causes += immutable(get(new, "spec", "group"), get(old, "spec", "group"), "spec.group")
        causes += immutable(get(new, "spec", "names", "plural"), get(old, "spec", "names", "plural"),
                             "spec.names.plural")
        return causes
