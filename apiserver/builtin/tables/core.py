"""Table columns of the core/v1 kinds (Namespace, ConfigMap, Secret, Service, Event, quotas, claims)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from apiserver.builtin.eventsv1 import to_core
from apiserver.builtin.tables.columns import (
    META,
    Obj,
    access_modes,
    age_col,
    at,
    col,
    created_at_columns,
    default_columns,
    dict_at,
    field_doc,
    format_labels,
    int_at,
    list_at,
    load_balancer,
    name_col,
    since,
    str_at,
)
from apiserver.resourcetypes import Column


def _namespace() -> list[Column]:
    return [name_col(), col("Status", "string", lambda o: str_at(o, "status", "phase"),
                              "The status of the namespace"), age_col()]


def _configmap() -> list[Column]:
    def data(o: Obj) -> int:
        return len(dict_at(o, "data")) + len(dict_at(o, "binaryData"))

    return [name_col(), col("Data", "string", data, field_doc("io.k8s.api.core.v1.ConfigMap", "data")),
            age_col()]


def _secret() -> list[Column]:
    doc = "io.k8s.api.core.v1.Secret"
    return [name_col(), col("Type", "string", lambda o: str_at(o, "type"), field_doc(doc, "type")),
            col("Data", "string", lambda o: len(dict_at(o, "data")), field_doc(doc, "data")), age_col()]


def _service_external_ip(o: Obj) -> str:
    svc_type = str_at(o, "spec", "type")
    external = [ip for ip in list_at(o, "spec", "externalIPs") if isinstance(ip, str)]
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if svc_type == "LoadBalancer":
        lb = load_balancer(at(o, "status"))
        if external:
            return ",".join((lb.split(",") if lb else []) + external)
        return lb or "<pending>"
    if svc_type == "ExternalName":
        return str_at(o, "spec", "externalName")
    return "<unknown>"


def _service_ports(o: Obj) -> str:
    pieces = []
    for port in list_at(o, "spec", "ports"):
        number, protocol, node_port = int_at(port, "port"), str_at(port, "protocol"), int_at(port, "nodePort")
        pieces.append(f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}")
    return ",".join(pieces) or "<none>"


def _service() -> list[Column]:
    doc = "io.k8s.api.core.v1.ServiceSpec"

    def cluster_ip(o: Obj) -> str:
        ips = list_at(o, "spec", "clusterIPs")
        return ips[0] if ips and isinstance(ips[0], str) else "<none>"

    return [
        name_col(),
        col("Type", "string", lambda o: str_at(o, "spec", "type"), field_doc(doc, "type")),
        col("Cluster-IP", "string", cluster_ip, field_doc(doc, "clusterIP")),
        col("External-IP", "string", _service_external_ip, field_doc(doc, "externalIPs")),
        col("Port(s)", "string", _service_ports, field_doc(doc, "ports")),
        age_col(),
        col("Selector", "string", lambda o: format_labels(at(o, "spec", "selector")),
             field_doc(doc, "selector"), priority=1),
    ]


def _event_first_seen(o: Obj) -> str:
    if str_at(o, "firstTimestamp"):
        return since(o, "firstTimestamp")
    return since(o, "eventTime")


def _event_last_seen(o: Obj) -> str:
    if isinstance(at(o, "series"), dict):
        return since(o, "series", "lastObservedTime")
    if str_at(o, "lastTimestamp"):
        return since(o, "lastTimestamp")
    return _event_first_seen(o)


def _event_count(o: Obj) -> int:
    if isinstance(at(o, "series"), dict):
        return int_at(o, "series", "count")
    # Singleton events of the events.k8s.io API carry no count.
    return int_at(o, "count") or 1


def _event_object(o: Obj) -> str:
    kind, name = str_at(o, "involvedObject", "kind").lower(), str_at(o, "involvedObject", "name")
    return f"{kind}/{name}" if name else kind


def _event_source(o: Obj) -> str:
    component = str_at(o, "source", "component") or str_at(o, "reportingComponent")
    instance = str_at(o, "source", "host") or str_at(o, "reportingInstance")
    return f"{component}, {instance}" if instance else component


def _event() -> list[Column]:
    doc = "io.k8s.api.core.v1.Event"
    return [
        col("Last Seen", "string", _event_last_seen, field_doc(doc, "lastTimestamp")),
        col("Type", "string", lambda o: str_at(o, "type"), field_doc(doc, "type")),
        col("Reason", "string", lambda o: str_at(o, "reason"), field_doc(doc, "reason")),
        col("Object", "string", _event_object, field_doc(doc, "involvedObject")),
        col("Subobject", "string", lambda o: str_at(o, "involvedObject", "fieldPath"),
             field_doc("io.k8s.api.core.v1.ObjectReference", "fieldPath"), priority=1),
        col("Source", "string", _event_source, field_doc(doc, "source"), priority=1),
        col("Message", "string", lambda o: str_at(o, "message").strip(), field_doc(doc, "message")),
        col("First Seen", "string", _event_first_seen, field_doc(doc, "firstTimestamp"), priority=1),
        col("Count", "string", _event_count, field_doc(doc, "count"), priority=1),
        col("Name", "string", lambda o: str_at(o, "metadata", "name"), field_doc(META, "name"), priority=1,
             format_="name"),
    ]


def _events_v1_event() -> list[Column]:
    """Upstream prints events.k8s.io Events with core's printer (one internal type): the same columns."""
    return [dataclasses.replace(c, cell=lambda o, cell=c.cell: cell(to_core(o))) for c in _event()]


def _resource_quota() -> list[Column]:
    def split(o: Obj) -> tuple[str, str]:
        hard, used = dict_at(o, "status", "hard"), dict_at(o, "status", "used")
        requests, limits = [], []
        for resource in sorted(hard):
            target = limits if resource.split(".")[0] == "limits" and "." in resource else requests
            target.append(f"{resource}: {used.get(resource, '0')}/{hard[resource]}")
        return ", ".join(requests), ", ".join(limits)

    return [
        name_col(),
        col("Request", "string", lambda o: split(o)[0],
             "Request represents a minimum amount of cpu/memory that a container may consume."),
        col("Limit", "string", lambda o: split(o)[1],
             "Limits control the maximum amount of cpu/memory that a container may use independent of "
             "contention on the node."),
        age_col(),
    ]


def _pvc() -> list[Column]:
    status_doc = "io.k8s.api.core.v1.PersistentVolumeClaimStatus"
    spec_doc = "io.k8s.api.core.v1.PersistentVolumeClaimSpec"

    def phase(o: Obj) -> str:
        return "Terminating" if str_at(o, "metadata", "deletionTimestamp") else str_at(o, "status", "phase")

    def bound(o: Obj) -> bool:
        return bool(str_at(o, "spec", "volumeName"))

    def storage_class(o: Obj) -> str:
        # The beta annotation predates spec.storageClassName and still wins, as in upstream's helper.
        annotation = at(o, "metadata", "annotations", "volume.beta.kubernetes.io/storage-class")
        return annotation if isinstance(annotation, str) else str_at(o, "spec", "storageClassName")

    return [
        name_col(),
        col("Status", "string", phase, field_doc(status_doc, "phase")),
        col("Volume", "string", lambda o: str_at(o, "spec", "volumeName"), field_doc(spec_doc, "volumeName")),
        col("Capacity", "string", lambda o: str_at(o, "status", "capacity", "storage") if bound(o) else "",
             field_doc(status_doc, "capacity")),
        col("Access Modes", "string",
             lambda o: access_modes(at(o, "status", "accessModes")) if bound(o) else "",
             field_doc(status_doc, "accessModes")),
        col("StorageClass", "string", storage_class, "StorageClass of the pvc"),
        col("VolumeAttributesClass", "string",
             lambda o: str_at(o, "spec", "volumeAttributesClassName") or "<unset>",
             "VolumeAttributesClass of the pvc"),
        age_col(),
        col("VolumeMode", "string", lambda o: str_at(o, "spec", "volumeMode") or "<unset>",
             field_doc(spec_doc, "volumeMode"), priority=1),
    ]


# The kinds of this module and the columns each shows.
BUILDERS: dict[tuple[str, str], Callable[[], Iterable[Column]]] = {
    ("", "Namespace"): _namespace,
    ("", "ConfigMap"): _configmap,
    ("", "Secret"): _secret,
    ("", "Service"): _service,
    ("", "Event"): _event,
    ("events.k8s.io", "Event"): _events_v1_event,
    ("", "ResourceQuota"): _resource_quota,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "ServiceAccount"): default_columns,
    ("", "LimitRange"): created_at_columns,
}
