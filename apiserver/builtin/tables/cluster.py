"""Table columns of the cluster-wide kinds: RBAC, storage and scheduling classes, admission policies, Spaces."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from apiserver.builtin.tables.columns import (
    META,
    Obj,
    age_col,
    at,
    col,
    created_at_columns,
    dict_at,
    field_doc,
    int_at,
    list_at,
    name_col,
    str_at,
)
from apiserver.resourcetypes import Column


def _subjects(o: Obj, kind: str) -> str:
    names = []
    for subject in list_at(o, "subjects"):
        if str_at(subject, "kind") != kind:
            continue
        name = str_at(subject, "name")
        names.append(f"{str_at(subject, 'namespace')}/{name}" if kind == "ServiceAccount" else name)
    return ", ".join(names)


def _binding(kind: str) -> list[Column]:
    scope = kind[0].lower() + kind[1:]  # "roleBinding", as upstream words the descriptions
    return [
        name_col(),
        col("Role", "string", lambda o: f"{str_at(o, 'roleRef', 'kind')}/{str_at(o, 'roleRef', 'name')}",
             field_doc(f"io.k8s.api.rbac.v1.{kind}", "roleRef")),
        age_col(),
        col("Users", "string", lambda o: _subjects(o, "User"), f"Users in the {scope}", priority=1),
        col("Groups", "string", lambda o: _subjects(o, "Group"), f"Groups in the {scope}", priority=1),
        col("ServiceAccounts", "string", lambda o: _subjects(o, "ServiceAccount"),
             f"ServiceAccounts in the {scope}", priority=1),
    ]


_DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                              "storageclass.beta.kubernetes.io/is-default-class")


def _storage_class() -> list[Column]:
    doc = "io.k8s.api.storage.v1.StorageClass"

    def name(o: Obj) -> str:
        annotations = dict_at(o, "metadata", "annotations")
        is_default = any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS)
        return str_at(o, "metadata", "name") + (" (default)" if is_default else "")

    return [
        col("Name", "string", name, field_doc(META, "name"), format_="name"),
        col("Provisioner", "string", lambda o: str_at(o, "provisioner"), field_doc(doc, "provisioner")),
        col("ReclaimPolicy", "string", lambda o: str_at(o, "reclaimPolicy") or "Delete",
             field_doc(doc, "reclaimPolicy")),
        col("VolumeBindingMode", "string", lambda o: str_at(o, "volumeBindingMode") or "Immediate",
             field_doc(doc, "volumeBindingMode")),
        col("AllowVolumeExpansion", "string", lambda o: at(o, "allowVolumeExpansion") is True,
             field_doc(doc, "allowVolumeExpansion")),
        age_col(),
    ]


def _priority_class() -> list[Column]:
    doc = "io.k8s.api.scheduling.v1.PriorityClass"
    return [
        name_col(),
        col("Value", "integer", lambda o: int_at(o, "value"), field_doc(doc, "value")),
        col("Global-Default", "boolean", lambda o: at(o, "globalDefault") is True,
             field_doc(doc, "globalDefault")),
        age_col(),
        col("PreemptionPolicy", "string", lambda o: str_at(o, "preemptionPolicy"),
             field_doc(doc, "preemptionPolicy")),
    ]


def _admission_policy() -> list[Column]:
    def param_kind(obj: Obj) -> str:
        kind = dict_at(obj, "spec", "paramKind")
        return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if kind else "<unset>"

    return [name_col(),
            Column("Validations", "integer", lambda o: len(list_at(o, "spec", "validations")),
                   "Validations is the number of CEL validations of the policy."),
            Column("ParamKind", "string", param_kind, "ParamKind specifies the kind of resources used to "
                   "parameterize this policy"),
            age_col()]


def _admission_binding() -> list[Column]:
    def param_ref(obj: Obj) -> str:
        ref = dict_at(obj, "spec", "paramRef")
        if not ref:
            return "<unset>"
        return "/".join(p for p in (ref.get("namespace"), ref.get("name") or "*[selector]") if p)

    return [name_col(),
            Column("PolicyName", "string", lambda o: at(o, "spec", "policyName") or "",
                   "Policy is the name of the policy this binding refers to."),
            Column("ParamRef", "string", param_ref, "ParamRef is the parameter of the policy."),
            age_col()]


def _api_service() -> list[Column]:
    def service(o: Obj) -> str:
        ref = dict_at(o, "spec", "service")
        return f"{str_at(ref, 'namespace')}/{str_at(ref, 'name')}" if ref else "Local"

    def available(o: Obj) -> str:
        condition = next((c for c in list_at(o, "status", "conditions") if str_at(c, "type") == "Available"), None)
        if condition is None:
            return "Unknown"
        status, reason = str_at(condition, "status"), str_at(condition, "reason")
        return f"{status} ({reason})" if status != "True" and reason else status

    return [name_col(),
            col("Service", "string", service, "The reference to the service that hosts this API endpoint."),
            col("Available", "string", available, "Whether this service is available."),
            age_col()]


def _webhook_configuration() -> list[Column]:
    return [name_col(),
            col("Webhooks", "integer", lambda o: len(list_at(o, "webhooks")), "Webhooks indicates the number of "
                "webhooks in the configuration."),
            age_col()]


# The kinds of this module and the columns each shows.
BUILDERS: dict[tuple[str, str], Callable[[], Iterable[Column]]] = {
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): _admission_policy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): _admission_binding,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _webhook_configuration,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _webhook_configuration,
    ("rbac.authorization.k8s.io", "RoleBinding"): lambda: _binding("RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): lambda: _binding("ClusterRoleBinding"),
    ("storage.k8s.io", "StorageClass"): _storage_class,
    ("apiregistration.k8s.io", "APIService"): _api_service,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
    ("rbac.authorization.k8s.io", "Role"): created_at_columns,
    ("rbac.authorization.k8s.io", "ClusterRole"): created_at_columns,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): created_at_columns,
}
