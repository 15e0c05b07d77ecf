"""Table columns of the kinds a space only stores: Leases, PodTemplates, ReplicationControllers and
CSIStorageCapacities, as kube-apiserver's printers define them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from apiserver.builtin.tables.columns import (
    Obj,
    age_col,
    col,
    container_images,
    container_names,
    dict_at,
    field_doc,
    format_labels,
    int_at,
    name_col,
    str_at,
    template_cols,
)
from apiserver.resourcetypes import Column


def _lease() -> list[Column]:
    return [
        name_col(),
        col("Holder", "string", lambda o: str_at(o, "spec", "holderIdentity"),
             field_doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
        age_col(),
    ]


def _pod_template() -> list[Column]:
    return [
        name_col(),
        col("Containers", "string", container_names("template", "spec"), "Names of each container in the template."),
        col("Images", "string", container_images("template", "spec"),
             "Images referenced by each container in the template."),
        col("Pod Labels", "string", lambda o: format_labels(dict_at(o, "template", "metadata", "labels")),
             "The labels for the pod template."),
    ]


def _replication_controller() -> list[Column]:
    status_doc = "io.k8s.api.core.v1.ReplicationControllerStatus"
    spec_doc = "io.k8s.api.core.v1.ReplicationControllerSpec"
    return [
        name_col(),
        col("Desired", "integer", lambda o: int_at(o, "spec", "replicas"), field_doc(spec_doc, "replicas")),
        col("Current", "integer", lambda o: int_at(o, "status", "replicas"), field_doc(status_doc, "replicas")),
        col("Ready", "integer", lambda o: int_at(o, "status", "readyReplicas"),
             field_doc(status_doc, "readyReplicas")),
        age_col(),
        *template_cols("spec", "template", "spec",
                        selector=lambda o: format_labels(dict_at(o, "spec", "selector")),
                        selector_doc=field_doc(spec_doc, "selector")),
    ]


def _csi_storage_capacity() -> list[Column]:
    doc = "io.k8s.api.storage.v1.CSIStorageCapacity"

    def capacity(o: Obj) -> str:
        return str_at(o, "capacity") or "<unset>"

    return [
        name_col(),
        col("StorageClassName", "string", lambda o: str_at(o, "storageClassName"), field_doc(doc, "storageClassName")),
        col("Capacity", "string", capacity, field_doc(doc, "capacity")),
    ]


BUILDERS: dict[tuple[str, str], Callable[[], Iterable[Column]]] = {
    ("coordination.k8s.io", "Lease"): _lease,
    ("", "PodTemplate"): _pod_template,
    ("", "ReplicationController"): _replication_controller,
    ("storage.k8s.io", "CSIStorageCapacity"): _csi_storage_capacity,
}
