"""Pods and Nodes: the core/v1 kinds a cluster serves and a space does not store.

Owns their :class:`~apiserver.resourcetypes.ResourceType` entries (names, scope, status subresource, the
upstream schemas ``io.k8s.api.core.v1.Pod``/``Node``), minimal strategies (upstream's pod defaults and
the pod-spec checks the built-in workloads already use, immutable pod specs, a Pending initial status)
and the server-side table columns of kube-apiserver's pod and node printers. Cells never raise: a pod
may be partial (no status yet, junk written by a client).

One definition for both sides: the simulator stores and serves them in every cluster (``sim.kinds``); the
hub lists its clusters' pods in a workload space with the same columns (``debug``).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

from apimachinery.durations import age
from apimachinery.errors import Cause
from apimachinery.fieldselectors import (
    NAME_FIELDS,
    NAME_NAMESPACE_FIELDS,
    SelectableFields,
    field_at,
    go_bool_at,
)
from apimachinery.names import forbidden, invalid
from apimachinery.nested import get
from apiserver.builtin.strategies import BuiltinStrategy, default_pod_spec, parse_quantity, validate_pod_spec
from apiserver.definitions import load_definitions
from apiserver.resourcetypes import Column, ResourceType

Obj = dict[str, Any]
POD_SCHEMA = "io.k8s.api.core.v1.Pod"
NODE_SCHEMA = "io.k8s.api.core.v1.Node"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# What DefaultTolerationSeconds admission adds to every pod.
_DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
)
_POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")


# --- defensive accessors --------------------------------------------------------------------------


_get = get  # every cell reads defensively: a pod may be partial


def _str(obj: Any, *path: str | int) -> str:
    value = _get(obj, *path)
    return value if isinstance(value, str) else ""


def _dicts(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --- pods -----------------------------------------------------------------------------------------


def qos_class(spec: Any) -> str:
    """``GetPodQOS``: Guaranteed when every container's cpu and memory limits equal its requests."""
    containers = _dicts(_get(spec, "containers")) + _dicts(_get(spec, "initContainers"))
    any_set = False
    guaranteed = bool(containers)
    for container in containers:
        requests = _get(container, "resources", "requests")
        limits = _get(container, "resources", "limits")
        requests = requests if isinstance(requests, dict) else {}
        limits = limits if isinstance(limits, dict) else {}
        if requests or limits:
            any_set = True
        for resource in ("cpu", "memory"):
            limit = parse_quantity(limits.get(resource))
            request = parse_quantity(requests.get(resource, limits.get(resource)))
            if limit is None or request != limit:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _without_mutable(spec: Any) -> Any:
    """A pod spec minus what an update may change (images, deadline, tolerations, an unset node)."""
    if not isinstance(spec, dict):
        return spec
    out = copy.deepcopy(spec)
    for key in ("containers", "initContainers"):
        for container in _dicts(out.get(key)):
            container.pop("image", None)
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "nodeName"):
        out.pop(key, None)
    return out


def _pod_ip(pod: Obj) -> str:
    """The pod's primary IP: the first of ``status.podIPs``, else the older ``status.podIP``; "" if none."""
    ips = _dicts(_get(pod, "status", "podIPs"))
    return (_str(ips[0], "ip") if ips else "") or _str(pod, "status", "podIP")


class PodStrategy(BuiltinStrategy):
    """Upstream pod defaults, the pod-spec rules of the workload templates, and immutable specs."""

    has_status = True
    selectable_fields = SelectableFields({
        **NAME_NAMESPACE_FIELDS,
        "spec.nodeName": field_at("spec", "nodeName"),
        "spec.restartPolicy": field_at("spec", "restartPolicy"),
        "spec.schedulerName": field_at("spec", "schedulerName"),
        "spec.serviceAccountName": field_at("spec", "serviceAccountName"),
        "spec.hostNetwork": go_bool_at("spec", "hostNetwork"),
        "status.phase": field_at("status", "phase"),
        "status.podIP": _pod_ip,
        "status.nominatedNodeName": field_at("status", "nominatedNodeName"),
    })

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        default_pod_spec(spec)
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        tolerations = spec.setdefault("tolerations", [])
        if isinstance(tolerations, list):
            present = {(t.get("key"), t.get("effect")) for t in _dicts(tolerations)}
            tolerations.extend(copy.deepcopy(t) for t in _DEFAULT_TOLERATIONS
                               if (t["key"], t["effect"]) not in present)

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Pending", "qosClass": qos_class(obj.get("spec"))}

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_pod_spec(obj.get("spec"), "spec")

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        old_node, new_node = _str(old, "spec", "nodeName"), _str(new, "spec", "nodeName")
        if old_node and new_node != old_node:
            causes.append(invalid("spec.nodeName", new_node, "field is immutable"))
        if _without_mutable(new.get("spec")) != _without_mutable(old.get("spec")):
            causes.append(forbidden("spec", _POD_UPDATE_FORBIDDEN))
        return causes


def pod_ready(pod: Any) -> bool:
    for condition in _dicts(_get(pod, "status", "conditions")):
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def _pod_status_reason(pod: Obj) -> tuple[str, int, int, int]:
    """``printPod``'s STATUS cell, ready containers, total containers and restarts."""
    containers = _dicts(_get(pod, "spec", "containers"))
    restartable_init = [c for c in _dicts(_get(pod, "spec", "initContainers")) if c.get("restartPolicy") == "Always"]
    total = len(containers) + len(restartable_init)
    reason = _str(pod, "status", "reason") or _str(pod, "status", "phase")
    restarts = 0
    ready = 0
    initializing = False
    init_statuses = _dicts(_get(pod, "status", "initContainerStatuses"))
    for i, status in enumerate(init_statuses):
        restarts += _int(status.get("restartCount"))
        terminated = _get(status, "state", "terminated")
        waiting = _get(status, "state", "waiting")
        if isinstance(terminated, dict) and _int(terminated.get("exitCode")) == 0:
            continue
        if status.get("started") is True and _get(status, "state", "running") is not None:
            if status.get("ready") is True:
                ready += 1
            continue
        initializing = True
        if isinstance(terminated, dict):
            reason = "Init:" + (_str(terminated, "reason") or f"ExitCode:{_int(terminated.get('exitCode'))}")
        elif isinstance(waiting, dict) and _str(waiting, "reason") and _str(waiting, "reason") != "PodInitializing":
            reason = "Init:" + _str(waiting, "reason")
        else:
            reason = f"Init:{i}/{len(_dicts(_get(pod, 'spec', 'initContainers')))}"
        break
    if not initializing:
        has_running = False
        for status in reversed(_dicts(_get(pod, "status", "containerStatuses"))):
            restarts += _int(status.get("restartCount"))
            waiting = _get(status, "state", "waiting")
            terminated = _get(status, "state", "terminated")
            if isinstance(waiting, dict) and _str(waiting, "reason"):
                reason = _str(waiting, "reason")
            elif isinstance(terminated, dict) and _str(terminated, "reason"):
                reason = _str(terminated, "reason")
            elif isinstance(terminated, dict):
                signal = _int(terminated.get("signal"))
                reason = f"Signal:{signal}" if signal else f"ExitCode:{_int(terminated.get('exitCode'))}"
            elif status.get("ready") is True and _get(status, "state", "running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if pod_ready(pod) else "NotReady"
    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Unknown" if _str(pod, "status", "reason") == "NodeLost" else "Terminating"
    return reason, ready, total, restarts


def _pod_cell(index: int) -> Callable[[Obj], Any]:
    return lambda pod: _pod_status_reason(pod)[index] if isinstance(pod, dict) else ""


def _pod_ready_cell(pod: Obj) -> str:
    _, ready, total, _ = _pod_status_reason(pod)
    return f"{ready}/{total}"


def _readiness_gates(pod: Obj) -> str:
    gates = _dicts(_get(pod, "spec", "readinessGates"))
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in _dicts(_get(pod, "status", "conditions"))}
    true = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return f"{true}/{len(gates)}"


# --- nodes ----------------------------------------------------------------------------------------


class NodeStrategy(BuiltinStrategy):
    """Nodes: status is the node's (the simulator's) to write; a pod CIDR must be a CIDR."""

    has_status = True
    selectable_fields = SelectableFields({**NAME_FIELDS, "spec.unschedulable": go_bool_at("spec", "unschedulable")})

    def validate(self, obj: Obj) -> list[Cause]:
        causes = []
        for i, cidr in enumerate(_get(obj, "spec", "podCIDRs") or []):
            if not isinstance(cidr, str) or "/" not in cidr:
                causes.append(invalid(f"spec.podCIDRs[{i}]", cidr, "must be a valid CIDR"))
        return causes


def node_roles(node: Obj) -> list[str]:
    """``findNodeRoles``: ``node-role.kubernetes.io/<role>`` labels and ``kubernetes.io/role``."""
    labels = _get(node, "metadata", "labels")
    roles: set[str] = set()
    for key, value in (labels.items() if isinstance(labels, dict) else ()):
        if isinstance(key, str) and key.startswith("node-role.kubernetes.io/") and key[24:]:
            roles.add(key[24:])
        elif key == "kubernetes.io/role" and isinstance(value, str) and value:
            roles.add(value)
    return sorted(roles)


def _node_status(node: Obj) -> str:
    status = []
    for condition in _dicts(_get(node, "status", "conditions")):
        if condition.get("type") == "Ready":
            status = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not status:
        status = ["Unknown"]
    if _get(node, "spec", "unschedulable") is True:
        status.append("SchedulingDisabled")
    return ",".join(status)


def _node_address(kind: str) -> Callable[[Obj], str]:
    def cell(node: Obj) -> str:
        for address in _dicts(_get(node, "status", "addresses")):
            if address.get("type") == kind:
                return _str(address, "address") or "<none>"
        return "<none>"

    return cell


def _node_info(field: str) -> Callable[[Obj], str]:
    return lambda node: _str(node, "status", "nodeInfo", field) or "<unknown>"


# --- columns --------------------------------------------------------------------------------------


@functools.cache
def _doc(definition: str, prop: str) -> str:
    node = load_definitions().get(definition, {}).get("properties", {}).get(prop, {})
    return node.get("description", "") if isinstance(node, dict) else ""


def _name_col() -> Column:
    return Column("Name", "string", lambda o: _str(o, "metadata", "name"), _doc(_META, "name"), format="name")


def _age_col() -> Column:
    return Column("Age", "string", lambda o: age(_str(o, "metadata", "creationTimestamp") or None),
                  _doc(_META, "creationTimestamp"))


def pod_columns() -> tuple[Column, ...]:
    status, spec = "io.k8s.api.core.v1.PodStatus", "io.k8s.api.core.v1.PodSpec"
    return (
        _name_col(),
        Column("Ready", "string", _pod_ready_cell, "The aggregate readiness state of this pod for accepting "
               "traffic."),
        Column("Status", "string", _pod_cell(0), "The aggregate status of the containers in this pod."),
        Column("Restarts", "string", lambda o: str(_pod_cell(3)(o)), "The number of times the containers in "
               "this pod have been restarted and when the last container in this pod has restarted."),
        _age_col(),
        Column("IP", "string", lambda o: _pod_ip(o) or "<none>", _doc(status, "podIP"), priority=1),
        Column("Node", "string", lambda o: _str(o, "spec", "nodeName") or "<none>", _doc(spec, "nodeName"),
               priority=1),
        Column("Nominated Node", "string", lambda o: _str(o, "status", "nominatedNodeName") or "<none>",
               _doc(status, "nominatedNodeName"), priority=1),
        Column("Readiness Gates", "string", _readiness_gates, _doc(spec, "readinessGates"), priority=1),
    )


def node_columns() -> tuple[Column, ...]:
    info = "io.k8s.api.core.v1.NodeSystemInfo"
    return (
        _name_col(),
        Column("Status", "string", _node_status, "The status of the node"),
        Column("Roles", "string", lambda o: ",".join(node_roles(o)) or "<none>", "The roles of the node"),
        _age_col(),
        Column("Version", "string", lambda o: _str(o, "status", "nodeInfo", "kubeletVersion"),
               _doc(info, "kubeletVersion")),
        Column("Internal-IP", "string", _node_address("InternalIP"),
               _doc("io.k8s.api.core.v1.NodeStatus", "addresses"), priority=1),
        Column("External-IP", "string", _node_address("ExternalIP"),
               _doc("io.k8s.api.core.v1.NodeStatus", "addresses"), priority=1),
        Column("OS-Image", "string", _node_info("osImage"), _doc(info, "osImage"), priority=1),
        Column("Kernel-Version", "string", _node_info("kernelVersion"), _doc(info, "kernelVersion"), priority=1),
        Column("Container-Runtime", "string", _node_info("containerRuntimeVersion"),
               _doc(info, "containerRuntimeVersion"), priority=1),
    )


@functools.cache
def cluster_types() -> tuple[ResourceType, ...]:
    """Pod and Node as kube-apiserver serves them (names as its discovery lists them; the simulator answers
    the pods' streaming subresources itself)."""
    return (
        ResourceType(group="", version="v1", kind="Pod", plural="pods", singular="pod", namespaced=True,
                     short_names=("po",), categories=("all",),
                     subresources=("attach", "exec", "log", "portforward", "status"), schema_name=POD_SCHEMA,
                     strategic_merge=True, columns=pod_columns(), strategy=PodStrategy(), returns_deleted_object=True),
        ResourceType(group="", version="v1", kind="Node", plural="nodes", singular="node", namespaced=False,
                     short_names=("no",), subresources=("status",), schema_name=NODE_SCHEMA,
                     strategic_merge=True, columns=node_columns(), strategy=NodeStrategy()),
    )
