"""Table columns of the built-in kinds: what ``kubectl get`` prints, as the server-side printers define it.

Column names, types, formats, priorities (1 = only with ``-o wide``) and cell renderings follow
kube-apiserver's ``pkg/printers/internalversion`` handlers; kinds that have no handler upstream (Roles,
LimitRanges, CRDs …) get the generic ``Name`` / ``Created At`` table of ``rest.DefaultTableConvertor``.
The server always renders the wide cells (kubectl hides priority-1 columns itself), so every column here
has a cell.

Cells take the stored object as a plain dict and never raise: objects may be partial (a failed write, a
status not yet written), so every field is read through the defensive accessors below.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from spaces.builtin.definitions import load_definitions
from spaces.registry import Column

Obj = dict[str, Any]
_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# --- defensive accessors --------------------------------------------------------------------------


def _get(obj: Any, *path: str | int) -> Any:
    node = obj
    for key in path:
        if isinstance(key, int):
            if not isinstance(node, list) or not -len(node) <= key < len(node):
                return None
            node = node[key]
        else:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
    return node


def _str(obj: Any, *path: str | int) -> str:
    value = _get(obj, *path)
    return value if isinstance(value, str) else ""


def _int(obj: Any, *path: str | int) -> int:
    value = _get(obj, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(obj: Any, *path: str | int) -> list[Any]:
    value = _get(obj, *path)
    return value if isinstance(value, list) else []


def _dict(obj: Any, *path: str | int) -> dict[str, Any]:
    value = _get(obj, *path)
    return value if isinstance(value, dict) else {}


def _intstr(value: Any) -> str:
    """``intstr.IntOrString.String()``."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, int | str) else ""


# --- time -----------------------------------------------------------------------------------------


def _parse_time(timestamp: Any) -> datetime | None:
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        parsed = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``: about two significant figures."""
    whole = int(seconds)  # Go truncates toward zero
    # Up to two seconds in the future is tolerated as clock skew between machines.
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        s = whole % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """The AGE cell: ``HumanDuration(now - timestamp)``, or ``<unknown>`` when there is no timestamp."""
    then = _parse_time(timestamp)
    if then is None:
        return "<unknown>"
    current = now or datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    return human_duration((current - then).total_seconds())


def _since(obj: Any, *path: str) -> str:
    return age(_str(obj, *path) or None)


def _age_cell(obj: Obj) -> str:
    return _since(obj, "metadata", "creationTimestamp")


def _created_at(obj: Obj) -> str:
    then = _parse_time(_str(obj, "metadata", "creationTimestamp"))
    return then.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if then else ""


# --- formatting helpers shared by several kinds ---------------------------------------------------


def _format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: sorted ``k=v`` pairs, ``<none>`` when empty."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def _selector_string(selector: Any) -> str:
    """``LabelSelectorAsSelector(sel).String()``: requirements sorted by key."""
    if not isinstance(selector, dict):
        return ""
    requirements: list[tuple[str, str]] = []
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, dict):
        requirements += [(str(k), f"{k}={v}") for k, v in match_labels.items()]
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            continue
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        rendered = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                    "Exists": key, "DoesNotExist": f"!{key}"}.get(str(op), "")
        requirements.append((key, rendered))
    return ",".join(r for _, r in sorted(requirements, key=lambda kv: kv[0]))


def _format_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: like the selector string, but ``<none>`` when empty."""
    return _selector_string(selector) or "<none>"


def _containers(template_spec: Any) -> tuple[str, str]:
    containers = [c for c in _list(template_spec, "containers") if isinstance(c, dict)]
    return (",".join(_str(c, "name") for c in containers), ",".join(_str(c, "image") for c in containers))


def _container_names(*path: str) -> Callable[[Obj], str]:
    return lambda obj: _containers(_get(obj, *path))[0]


def _container_images(*path: str) -> Callable[[Obj], str]:
    return lambda obj: _containers(_get(obj, *path))[1]


def _has_condition(obj: Obj, condition_type: str) -> bool:
    for condition in _list(obj, "status", "conditions"):
        if _str(condition, "type") == condition_type:
            return _str(condition, "status") == "True"
    return False


def _bool_ptr(value: Any) -> str:
    """``printBoolPtr``."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def _load_balancer(status: Any) -> str:
    ingress = _list(status, "loadBalancer", "ingress")
    found = {_str(i, "ip") or _str(i, "hostname") for i in ingress}
    found.discard("")
    return ",".join(sorted(found))


_ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                 ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: Any) -> str:
    present = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _ACCESS_MODES if mode in present)


# --- column construction --------------------------------------------------------------------------


@functools.cache
def _doc(definition: str, prop: str) -> str:
    """An upstream field description, as the printers use ``SwaggerDoc()`` for column descriptions."""
    node = load_definitions().get(definition, {}).get("properties", {}).get(prop, {})
    return node.get("description", "") if isinstance(node, dict) else ""


def _col(name: str, type_: str, cell: Callable[[Obj], Any], description: str = "", *, priority: int = 0,
         format_: str = "") -> Column:
    return Column(name=name, type=type_, cell=cell, description=description, format=format_,
                  priority=priority)


def _name_col() -> Column:
    return _col("Name", "string", lambda o: _str(o, "metadata", "name"), _doc(_META, "name"),
                format_="name")


def _age_col() -> Column:
    return _col("Age", "string", _age_cell, _doc(_META, "creationTimestamp"))


def default_columns() -> tuple[Column, ...]:
    """Name and Age, for kinds without columns of their own."""
    return (_name_col(), _age_col())


def created_at_columns() -> tuple[Column, ...]:
    """``rest.DefaultTableConvertor``: what upstream serves for kinds without a printer."""
    return (_name_col(), _col("Created At", "date", _created_at, _doc(_META, "creationTimestamp")))


def _template_cols(*spec_path: str, selector: Callable[[Obj], str] | None = None,
                   selector_doc: str = "") -> list[Column]:
    cols = [
        _col("Containers", "string", _container_names(*spec_path), "Names of each container in the template.",
             priority=1),
        _col("Images", "string", _container_images(*spec_path),
             "Images referenced by each container in the template.", priority=1),
    ]
    if selector is not None:
        cols.append(_col("Selector", "string", selector, selector_doc, priority=1))
    return cols


# --- core/v1 --------------------------------------------------------------------------------------


def _namespace() -> list[Column]:
    return [_name_col(), _col("Status", "string", lambda o: _str(o, "status", "phase"),
                              "The status of the namespace"), _age_col()]


def _configmap() -> list[Column]:
    def data(o: Obj) -> int:
        return len(_dict(o, "data")) + len(_dict(o, "binaryData"))

    return [_name_col(), _col("Data", "string", data, _doc("io.k8s.api.core.v1.ConfigMap", "data")),
            _age_col()]


def _secret() -> list[Column]:
    doc = "io.k8s.api.core.v1.Secret"
    return [_name_col(), _col("Type", "string", lambda o: _str(o, "type"), _doc(doc, "type")),
            _col("Data", "string", lambda o: len(_dict(o, "data")), _doc(doc, "data")), _age_col()]


def _service_external_ip(o: Obj) -> str:
    svc_type = _str(o, "spec", "type")
    external = [ip for ip in _list(o, "spec", "externalIPs") if isinstance(ip, str)]
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if svc_type == "LoadBalancer":
        lb = _load_balancer(_get(o, "status"))
        if external:
            return ",".join((lb.split(",") if lb else []) + external)
        return lb or "<pending>"
    if svc_type == "ExternalName":
        return _str(o, "spec", "externalName")
    return "<unknown>"


def _service_ports(o: Obj) -> str:
    pieces = []
    for port in _list(o, "spec", "ports"):
        number, protocol, node_port = _int(port, "port"), _str(port, "protocol"), _int(port, "nodePort")
        pieces.append(f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}")
    return ",".join(pieces) or "<none>"


def _service() -> list[Column]:
    doc = "io.k8s.api.core.v1.ServiceSpec"

    def cluster_ip(o: Obj) -> str:
        ips = _list(o, "spec", "clusterIPs")
        return ips[0] if ips and isinstance(ips[0], str) else "<none>"

    return [
        _name_col(),
        _col("Type", "string", lambda o: _str(o, "spec", "type"), _doc(doc, "type")),
        _col("Cluster-IP", "string", cluster_ip, _doc(doc, "clusterIP")),
        _col("External-IP", "string", _service_external_ip, _doc(doc, "externalIPs")),
        _col("Port(s)", "string", _service_ports, _doc(doc, "ports")),
        _age_col(),
        _col("Selector", "string", lambda o: _format_labels(_get(o, "spec", "selector")),
             _doc(doc, "selector"), priority=1),
    ]


def _event_first_seen(o: Obj) -> str:
    if _str(o, "firstTimestamp"):
        return _since(o, "firstTimestamp")
    return _since(o, "eventTime")


def _event_last_seen(o: Obj) -> str:
    if isinstance(_get(o, "series"), dict):
        return _since(o, "series", "lastObservedTime")
    if _str(o, "lastTimestamp"):
        return _since(o, "lastTimestamp")
    return _event_first_seen(o)


def _event_count(o: Obj) -> int:
    if isinstance(_get(o, "series"), dict):
        return _int(o, "series", "count")
    # Singleton events of the events.k8s.io API carry no count.
    return _int(o, "count") or 1


def _event_object(o: Obj) -> str:
    kind, name = _str(o, "involvedObject", "kind").lower(), _str(o, "involvedObject", "name")
    return f"{kind}/{name}" if name else kind


def _event_source(o: Obj) -> str:
    component = _str(o, "source", "component") or _str(o, "reportingComponent")
    instance = _str(o, "source", "host") or _str(o, "reportingInstance")
    return f"{component}, {instance}" if instance else component


def _event() -> list[Column]:
    doc = "io.k8s.api.core.v1.Event"
    return [
        _col("Last Seen", "string", _event_last_seen, _doc(doc, "lastTimestamp")),
        _col("Type", "string", lambda o: _str(o, "type"), _doc(doc, "type")),
        _col("Reason", "string", lambda o: _str(o, "reason"), _doc(doc, "reason")),
        _col("Object", "string", _event_object, _doc(doc, "involvedObject")),
        _col("Subobject", "string", lambda o: _str(o, "involvedObject", "fieldPath"),
             _doc("io.k8s.api.core.v1.ObjectReference", "fieldPath"), priority=1),
        _col("Source", "string", _event_source, _doc(doc, "source"), priority=1),
        _col("Message", "string", lambda o: _str(o, "message").strip(), _doc(doc, "message")),
        _col("First Seen", "string", _event_first_seen, _doc(doc, "firstTimestamp"), priority=1),
        _col("Count", "string", _event_count, _doc(doc, "count"), priority=1),
        _col("Name", "string", lambda o: _str(o, "metadata", "name"), _doc(_META, "name"), priority=1,
             format_="name"),
    ]


def _resource_quota() -> list[Column]:
    def split(o: Obj) -> tuple[str, str]:
        hard, used = _dict(o, "status", "hard"), _dict(o, "status", "used")
        requests, limits = [], []
        for resource in sorted(hard):
            target = limits if resource.split(".")[0] == "limits" and "." in resource else requests
            target.append(f"{resource}: {used.get(resource, '0')}/{hard[resource]}")
        return ", ".join(requests), ", ".join(limits)

    return [
        _name_col(),
        _col("Request", "string", lambda o: split(o)[0],
             "Request represents a minimum amount of cpu/memory that a container may consume."),
        _col("Limit", "string", lambda o: split(o)[1],
             "Limits control the maximum amount of cpu/memory that a container may use independent of "
             "contention on the node."),
        _age_col(),
    ]


def _pvc() -> list[Column]:
    status_doc = "io.k8s.api.core.v1.PersistentVolumeClaimStatus"
    spec_doc = "io.k8s.api.core.v1.PersistentVolumeClaimSpec"

    def phase(o: Obj) -> str:
        return "Terminating" if _str(o, "metadata", "deletionTimestamp") else _str(o, "status", "phase")

    def bound(o: Obj) -> bool:
        return bool(_str(o, "spec", "volumeName"))

    def storage_class(o: Obj) -> str:
        # The beta annotation predates spec.storageClassName and still wins, as in upstream's helper.
        annotation = _get(o, "metadata", "annotations", "volume.beta.kubernetes.io/storage-class")
        return annotation if isinstance(annotation, str) else _str(o, "spec", "storageClassName")

    return [
        _name_col(),
        _col("Status", "string", phase, _doc(status_doc, "phase")),
        _col("Volume", "string", lambda o: _str(o, "spec", "volumeName"), _doc(spec_doc, "volumeName")),
        _col("Capacity", "string", lambda o: _str(o, "status", "capacity", "storage") if bound(o) else "",
             _doc(status_doc, "capacity")),
        _col("Access Modes", "string",
             lambda o: _access_modes(_get(o, "status", "accessModes")) if bound(o) else "",
             _doc(status_doc, "accessModes")),
        _col("StorageClass", "string", storage_class, "StorageClass of the pvc"),
        _col("VolumeAttributesClass", "string",
             lambda o: _str(o, "spec", "volumeAttributesClassName") or "<unset>",
             "VolumeAttributesClass of the pvc"),
        _age_col(),
        _col("VolumeMode", "string", lambda o: _str(o, "spec", "volumeMode") or "<unset>",
             _doc(spec_doc, "volumeMode"), priority=1),
    ]


# --- apps/v1 --------------------------------------------------------------------------------------


def _ready_of_desired(o: Obj) -> str:
    return f"{_int(o, 'status', 'readyReplicas')}/{_int(o, 'spec', 'replicas')}"


def _deployment() -> list[Column]:
    doc = "io.k8s.api.apps.v1.DeploymentStatus"
    return [
        _name_col(),
        _col("Ready", "string", _ready_of_desired, "Number of the pod with ready state"),
        _col("Up-to-date", "string", lambda o: _int(o, "status", "updatedReplicas"),
             _doc(doc, "updatedReplicas")),
        _col("Available", "string", lambda o: _int(o, "status", "availableReplicas"),
             _doc(doc, "availableReplicas")),
        _age_col(),
        *_template_cols("spec", "template", "spec",
                        selector=lambda o: _selector_string(_get(o, "spec", "selector")),
                        selector_doc=_doc("io.k8s.api.apps.v1.DeploymentSpec", "selector")),
    ]


def _replicaset() -> list[Column]:
    status_doc = "io.k8s.api.apps.v1.ReplicaSetStatus"
    return [
        _name_col(),
        _col("Desired", "integer", lambda o: _int(o, "spec", "replicas"),
             _doc("io.k8s.api.apps.v1.ReplicaSetSpec", "replicas")),
        _col("Current", "integer", lambda o: _int(o, "status", "replicas"), _doc(status_doc, "replicas")),
        _col("Ready", "integer", lambda o: _int(o, "status", "readyReplicas"),
             _doc(status_doc, "readyReplicas")),
        _age_col(),
        *_template_cols("spec", "template", "spec",
                        selector=lambda o: _format_selector(_get(o, "spec", "selector")),
                        selector_doc=_doc("io.k8s.api.apps.v1.ReplicaSetSpec", "selector")),
    ]


def _statefulset() -> list[Column]:
    return [
        _name_col(),
        _col("Ready", "string", _ready_of_desired, "Number of the pod with ready state"),
        _age_col(),
        *_template_cols("spec", "template", "spec"),
    ]


def _daemonset() -> list[Column]:
    doc = "io.k8s.api.apps.v1.DaemonSetStatus"

    def status_int(field: str) -> Callable[[Obj], int]:
        return lambda o: _int(o, "status", field)

    return [
        _name_col(),
        _col("Desired", "integer", status_int("desiredNumberScheduled"), _doc(doc, "desiredNumberScheduled")),
        _col("Current", "integer", status_int("currentNumberScheduled"), _doc(doc, "currentNumberScheduled")),
        _col("Ready", "integer", status_int("numberReady"), _doc(doc, "numberReady")),
        _col("Up-to-date", "integer", status_int("updatedNumberScheduled"),
             _doc(doc, "updatedNumberScheduled")),
        _col("Available", "integer", status_int("numberAvailable"), _doc(doc, "numberAvailable")),
        _col("Node Selector", "string",
             lambda o: _format_labels(_get(o, "spec", "template", "spec", "nodeSelector")),
             _doc("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
        _age_col(),
        *_template_cols("spec", "template", "spec",
                        selector=lambda o: _format_selector(_get(o, "spec", "selector")),
                        selector_doc=_doc("io.k8s.api.apps.v1.DaemonSetSpec", "selector")),
    ]


# --- batch/v1 -------------------------------------------------------------------------------------


def _job_status(o: Obj) -> str:
    if _has_condition(o, "Complete"):
        return "Complete"
    if _has_condition(o, "Failed"):
        return "Failed"
    if _str(o, "metadata", "deletionTimestamp"):
        return "Terminating"
    for condition, shown in (("Suspended", "Suspended"), ("FailureTarget", "FailureTarget"),
                             ("SuccessCriteriaMet", "SuccessCriteriaMet")):
        if _has_condition(o, condition):
            return shown
    return "Running"


def _job_completions(o: Obj) -> str:
    succeeded = _int(o, "status", "succeeded")
    completions = _get(o, "spec", "completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        return f"{succeeded}/{completions}"
    parallelism = _int(o, "spec", "parallelism")
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(o: Obj) -> str:
    start = _parse_time(_str(o, "status", "startTime"))
    if start is None:
        return ""
    end = _parse_time(_str(o, "status", "completionTime")) or datetime.now(UTC)
    return human_duration((end - start).total_seconds())


def _job() -> list[Column]:
    return [
        _name_col(),
        _col("Status", "string", _job_status, "Status of the job."),
        _col("Completions", "string", _job_completions, _doc("io.k8s.api.batch.v1.JobStatus", "succeeded")),
        _col("Duration", "string", _job_duration, "Time required to complete the job."),
        _age_col(),
        *_template_cols("spec", "template", "spec",
                        selector=lambda o: _format_selector(_get(o, "spec", "selector")),
                        selector_doc=_doc("io.k8s.api.batch.v1.JobSpec", "selector")),
    ]


def _cronjob() -> list[Column]:
    spec_doc, status_doc = "io.k8s.api.batch.v1.CronJobSpec", "io.k8s.api.batch.v1.CronJobStatus"

    def last_schedule(o: Obj) -> str:
        return _since(o, "status", "lastScheduleTime") if _str(o, "status", "lastScheduleTime") else "<none>"

    return [
        _name_col(),
        _col("Schedule", "string", lambda o: _str(o, "spec", "schedule"), _doc(spec_doc, "schedule")),
        _col("Timezone", "string", lambda o: _str(o, "spec", "timeZone") or "<none>",
             _doc(spec_doc, "timeZone")),
        _col("Suspend", "boolean", lambda o: _bool_ptr(_get(o, "spec", "suspend")),
             _doc(spec_doc, "suspend")),
        _col("Active", "integer", lambda o: len(_list(o, "status", "active")), _doc(status_doc, "active")),
        _col("Last Schedule", "string", last_schedule, _doc(status_doc, "lastScheduleTime")),
        _age_col(),
        *_template_cols("spec", "jobTemplate", "spec", "template", "spec",
                        selector=lambda o: _format_selector(
                            _get(o, "spec", "jobTemplate", "spec", "selector")),
                        selector_doc=_doc("io.k8s.api.batch.v1.JobSpec", "selector")),
    ]


# --- networking, policy, autoscaling --------------------------------------------------------------


def _ingress_hosts(o: Obj) -> str:
    """``formatHosts``: the first three hosts; the count of the rest is of rules, as upstream counts."""
    rules = _list(o, "spec", "rules")
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
            break
        if _str(rule, "host"):
            hosts.append(_str(rule, "host"))
    if not hosts:
        return "*"
    return ",".join(hosts) + (f" + {len(rules) - 3} more..." if more else "")


def _ingress() -> list[Column]:
    return [
        _name_col(),
        _col("Class", "string", lambda o: _str(o, "spec", "ingressClassName") or "<none>",
             "The name of the IngressClass resource that should be used for additional configuration"),
        _col("Hosts", "string", _ingress_hosts,
             "Hosts that incoming requests are matched against before the ingress rule"),
        _col("Address", "string", lambda o: _load_balancer(_get(o, "status")),
             "Address is a list containing ingress points for the load-balancer"),
        _col("Ports", "string", lambda o: "80, 443" if _list(o, "spec", "tls") else "80",
             "Ports of TLS configurations that open"),
        _age_col(),
    ]


def _network_policy() -> list[Column]:
    return [_name_col(),
            _col("Pod-Selector", "string", lambda o: _format_selector(_get(o, "spec", "podSelector")),
                 _doc("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector")),
            _age_col()]


def _pdb() -> list[Column]:
    def bound(field: str) -> Callable[[Obj], str]:
        return lambda o: _intstr(_get(o, "spec", field)) or "N/A"

    return [
        _name_col(),
        _col("Min Available", "string", bound("minAvailable"),
             "The minimum number of pods that must be available."),
        _col("Max Unavailable", "string", bound("maxUnavailable"),
             "The maximum number of pods that may be unavailable."),
        _col("Allowed Disruptions", "integer", lambda o: _int(o, "status", "disruptionsAllowed"),
             "Calculated number of pods that may be disrupted at this time."),
        _age_col(),
    ]


def _metric_target(spec: Any, status: Any, source: str, with_name: bool) -> str:
    target = _dict(spec, source, "target")
    current = _dict(status, source, "current") if isinstance(_get(status, source), dict) else None
    prefix = f"{_str(spec, source, 'name')}: " if with_name else ""
    if "averageValue" in target:
        shown = _intstr(current.get("averageValue")) if current and "averageValue" in current else "<unknown>"
        suffix = "" if with_name or source == "pods" else " (avg)"
        return f"{prefix}{shown}/{_intstr(target['averageValue'])}{suffix}"
    if with_name:
        utilization = current.get("averageUtilization") if current else None
        shown = f"{utilization}%" if isinstance(utilization, int) else "<unknown>"
        wanted = target.get("averageUtilization")
        return f"{prefix}{shown}/{wanted}%" if isinstance(wanted, int) else f"{prefix}{shown}/<auto>"
    shown = _intstr(current.get("value")) if current and "value" in current else "<unknown>"
    return f"{shown}/{_intstr(target.get('value'))}"


def _hpa_targets(o: Obj) -> str:
    specs, statuses = _list(o, "spec", "metrics"), _list(o, "status", "currentMetrics")
    if not specs:
        return "<none>"
    sources = {"External": ("external", False), "Pods": ("pods", False), "Object": ("object", False),
               "Resource": ("resource", True), "ContainerResource": ("containerResource", True)}
    rendered = []
    for i, spec in enumerate(specs):
        status = statuses[i] if i < len(statuses) else None
        known = sources.get(_str(spec, "type"))
        rendered.append(_metric_target(spec, status, *known) if known else "<unknown type>")
    if len(rendered) > 2:
        return ", ".join(rendered[:2]) + f" + {len(rendered) - 2} more..."
    return ", ".join(rendered)


def _hpa() -> list[Column]:
    spec_doc = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"

    def reference(o: Obj) -> str:
        return f"{_str(o, 'spec', 'scaleTargetRef', 'kind')}/{_str(o, 'spec', 'scaleTargetRef', 'name')}"

    def min_pods(o: Obj) -> str:
        value = _get(o, "spec", "minReplicas")
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else "<unset>"

    return [
        _name_col(),
        _col("Reference", "string", reference, _doc(spec_doc, "scaleTargetRef")),
        _col("Targets", "string", _hpa_targets, _doc(spec_doc, "metrics")),
        _col("MinPods", "string", min_pods, _doc(spec_doc, "minReplicas")),
        _col("MaxPods", "string", lambda o: _int(o, "spec", "maxReplicas"), _doc(spec_doc, "maxReplicas")),
        _col("Replicas", "string", lambda o: _int(o, "status", "currentReplicas"),
             _doc("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas")),
        _age_col(),
    ]


# --- rbac, storage, scheduling --------------------------------------------------------------------


def _subjects(o: Obj, kind: str) -> str:
    names = []
    for subject in _list(o, "subjects"):
        if _str(subject, "kind") != kind:
            continue
        name = _str(subject, "name")
        names.append(f"{_str(subject, 'namespace')}/{name}" if kind == "ServiceAccount" else name)
    return ", ".join(names)


def _binding(kind: str) -> list[Column]:
    scope = kind[0].lower() + kind[1:]  # "roleBinding", as upstream words the descriptions
    return [
        _name_col(),
        _col("Role", "string", lambda o: f"{_str(o, 'roleRef', 'kind')}/{_str(o, 'roleRef', 'name')}",
             _doc(f"io.k8s.api.rbac.v1.{kind}", "roleRef")),
        _age_col(),
        _col("Users", "string", lambda o: _subjects(o, "User"), f"Users in the {scope}", priority=1),
        _col("Groups", "string", lambda o: _subjects(o, "Group"), f"Groups in the {scope}", priority=1),
        _col("ServiceAccounts", "string", lambda o: _subjects(o, "ServiceAccount"),
             f"ServiceAccounts in the {scope}", priority=1),
    ]


_DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                              "storageclass.beta.kubernetes.io/is-default-class")


def _storage_class() -> list[Column]:
    doc = "io.k8s.api.storage.v1.StorageClass"

    def name(o: Obj) -> str:
        annotations = _dict(o, "metadata", "annotations")
        is_default = any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS)
        return _str(o, "metadata", "name") + (" (default)" if is_default else "")

    return [
        _col("Name", "string", name, _doc(_META, "name"), format_="name"),
        _col("Provisioner", "string", lambda o: _str(o, "provisioner"), _doc(doc, "provisioner")),
        _col("ReclaimPolicy", "string", lambda o: _str(o, "reclaimPolicy") or "Delete",
             _doc(doc, "reclaimPolicy")),
        _col("VolumeBindingMode", "string", lambda o: _str(o, "volumeBindingMode") or "Immediate",
             _doc(doc, "volumeBindingMode")),
        _col("AllowVolumeExpansion", "string", lambda o: _get(o, "allowVolumeExpansion") is True,
             _doc(doc, "allowVolumeExpansion")),
        _age_col(),
    ]


def _priority_class() -> list[Column]:
    doc = "io.k8s.api.scheduling.v1.PriorityClass"
    return [
        _name_col(),
        _col("Value", "integer", lambda o: _int(o, "value"), _doc(doc, "value")),
        _col("Global-Default", "boolean", lambda o: _get(o, "globalDefault") is True,
             _doc(doc, "globalDefault")),
        _age_col(),
        _col("PreemptionPolicy", "string", lambda o: _str(o, "preemptionPolicy"),
             _doc(doc, "preemptionPolicy")),
    ]


def _space() -> list[Column]:
    return [
        _name_col(),
        _col("Phase", "string", lambda o: _str(o, "status", "phase"), "The lifecycle phase of the space."),
        _col("URL", "string", lambda o: _str(o, "status", "url"),
             "The URL at which the space serves its Kubernetes API.", priority=1),
        _age_col(),
    ]


def _admission_policy() -> list[Column]:
    def param_kind(obj: Obj) -> str:
        kind = _dict(obj, "spec", "paramKind")
        return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if kind else "<unset>"

    return [_name_col(),
            Column("Validations", "integer", lambda o: len(_list(o, "spec", "validations")),
                   "Validations is the number of CEL validations of the policy."),
            Column("ParamKind", "string", param_kind, "ParamKind specifies the kind of resources used to "
                   "parameterize this policy"),
            _age_col()]


def _admission_binding() -> list[Column]:
    def param_ref(obj: Obj) -> str:
        ref = _dict(obj, "spec", "paramRef")
        if not ref:
            return "<unset>"
        return "/".join(p for p in (ref.get("namespace"), ref.get("name") or "*[selector]") if p)

    return [_name_col(),
            Column("PolicyName", "string", lambda o: _get(o, "spec", "policyName") or "",
                   "Policy is the name of the policy this binding refers to."),
            Column("ParamRef", "string", param_ref, "ParamRef is the parameter of the policy."),
            _age_col()]


_BUILDERS: dict[tuple[str, str], Callable[[], Iterable[Column]]] = {
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): _admission_policy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): _admission_binding,
    ("", "Namespace"): _namespace,
    ("", "ConfigMap"): _configmap,
    ("", "Secret"): _secret,
    ("", "ServiceAccount"): default_columns,
    ("", "Service"): _service,
    ("", "Event"): _event,
    ("", "LimitRange"): created_at_columns,
    ("", "ResourceQuota"): _resource_quota,
    ("", "PersistentVolumeClaim"): _pvc,
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replicaset,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
    ("networking.k8s.io", "Ingress"): _ingress,
    ("networking.k8s.io", "NetworkPolicy"): _network_policy,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("autoscaling", "HorizontalPodAutoscaler"): _hpa,
    ("rbac.authorization.k8s.io", "Role"): created_at_columns,
    ("rbac.authorization.k8s.io", "ClusterRole"): created_at_columns,
    ("rbac.authorization.k8s.io", "RoleBinding"): lambda: _binding("RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): lambda: _binding("ClusterRoleBinding"),
    ("storage.k8s.io", "StorageClass"): _storage_class,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): created_at_columns,
    ("spacehub.io", "Space"): _space,
}


def columns_for(group: str, kind: str) -> tuple[Column, ...]:
    """The columns of ``group``/``kind`` in kubectl's order; Name and Age for kinds without their own."""
    builder = _BUILDERS.get((group, kind))
    return tuple(builder()) if builder else default_columns()
