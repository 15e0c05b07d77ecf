"""Defaults and validation of the built-in kinds: the per-kind half of kube-apiserver's registry strategies.

Each :class:`~spaces.registry.Strategy` here applies what a real server applies to a write of its kind,
so that ``kubectl apply`` round-trips (the defaults it sees on read-back are upstream's) and obviously
invalid input is refused with upstream's field paths and messages:

* defaulting, which upstream runs on every decode (``pkg/apis/*/v1/defaults.go``), runs on every create
  and update here;
* ``status`` is server-owned: a create starts from the kind's initial status and an update keeps the
  stored one (the status subresource handler writes it instead);
* validation follows ``pkg/apis/*/validation`` for the rules a user can plausibly trip over. Object-meta
  rules (names, labels, annotations of ``metadata``) belong to the generic handlers, see
  :mod:`spaces.builtin.names`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import ipaddress
import re
import zoneinfo
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from spaces.builtin.names import (
    duplicate,
    forbidden,
    invalid,
    is_config_map_key,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_env_var_name,
    is_label_value,
    is_path_segment_name,
    is_qualified_name,
    is_valid_percent,
    is_valid_port_name,
    is_valid_port_num,
    not_found,
    not_supported,
    regex_error,
    required,
    too_long,
    validate_annotations,
    validate_labels,
)
from spaces.errors import Cause
from spaces.registry import Strategy

Obj = dict[str, Any]

IMMUTABLE = "field is immutable"
NEGATIVE = "must be greater than or equal to 0"

# --- small dict helpers ---------------------------------------------------------------------------


def _child(obj: Obj, key: str) -> Obj:
    """``obj[key]`` as a dict, created (or replaced, if not a dict) on demand."""
    value = obj.get(key)
    if not isinstance(value, dict):
        value = {}
        obj[key] = value
    return value


def _get(obj: Any, *path: str | int) -> Any:
    node = obj
    for key in path:
        if isinstance(key, int):
            node = node[key] if isinstance(node, list) and -len(node) <= key < len(node) else None
        else:
            node = node.get(key) if isinstance(node, dict) else None
    return node


def _dicts(value: Any) -> list[Obj]:
    """The dict items of a list, so loops over user input never trip on junk entries."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _spec(obj: Obj) -> Obj:
    """``obj["spec"]`` for reading: an empty dict when it is absent or not a mapping."""
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _meta(obj: Obj) -> Obj:
    return _child(obj, "metadata")


def _name(obj: Obj) -> str:
    name = _get(obj, "metadata", "name")
    return name if isinstance(name, str) else ""


def _seed(obj: Obj) -> str:
    """A stable per-object seed for allocations: the uid, which is set before prepare_for_create."""
    uid = _get(obj, "metadata", "uid")
    if isinstance(uid, str) and uid:
        return uid
    return f"{_get(obj, 'metadata', 'namespace')}/{_name(obj)}"


def _default(obj: Obj, key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


def _nonnegative(obj: Any, path: str, *keys: str) -> list[Cause]:
    value = _get(obj, *keys)
    return [invalid(path, value, NEGATIVE)] if _is_int(value) and value < 0 else []


def _immutable(new: Any, old: Any, path: str) -> list[Cause]:
    return [] if _normalised(new) == _normalised(old) else [invalid(path, new, IMMUTABLE)]


def _normalised(value: Any) -> Any:
    """Semantic equality as apiequality sees it: empty maps and lists equal absent ones."""
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


# --- quantities -----------------------------------------------------------------------------------

_QUANTITY_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                          r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_QUANTITY_ERROR = ("quantities must match the regular expression "
                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: Any) -> Decimal | None:
    """A ``resource.Quantity`` as a number, or None when it is not one."""
    if _is_int(value) or isinstance(value, float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY_RE.match(value.strip())
    if not match:
        return None
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:
        return None
    suffix = match.group(2) or ""
    if suffix in _BINARY:
        return number * (2 ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    return number.scaleb(int(suffix[1:]))


def _validate_quantities(values: Any, path: str) -> list[Cause]:
    causes = []
    for resource, quantity in (values or {}).items() if isinstance(values, dict) else ():
        parsed = parse_quantity(quantity)
        if parsed is None:
            causes.append(invalid(f"{path}[{resource}]", quantity, _QUANTITY_ERROR))
        elif parsed < 0:
            causes.append(invalid(f"{path}[{resource}]", quantity, NEGATIVE))
    return causes


def _overcommit_allowed(resource: str) -> bool:
    """Native resources (cpu, memory …) may request less than their limit; extended ones and hugepages not."""
    native = "/" not in resource or "kubernetes.io/" in resource
    return native and not resource.startswith("hugepages-")


def _validate_resources(resources: Any, path: str) -> list[Cause]:
    if not isinstance(resources, dict):
        return []
    causes = _validate_quantities(resources.get("limits"), f"{path}.limits")
    causes += _validate_quantities(resources.get("requests"), f"{path}.requests")
    limits, requests = resources.get("limits"), resources.get("requests")
    if not isinstance(limits, dict) or not isinstance(requests, dict):
        return causes
    for resource, request in requests.items():
        if resource not in limits:
            continue
        req, lim = parse_quantity(request), parse_quantity(limits[resource])
        if req is None or lim is None:
            continue
        if req != lim and not _overcommit_allowed(str(resource)):
            causes.append(invalid(f"{path}.requests", request,
                                  f"must be equal to {resource} limit of {limits[resource]}"))
        elif req > lim:
            causes.append(invalid(f"{path}.requests", request,
                                  f"must be less than or equal to {resource} limit of {limits[resource]}"))
    return causes


# --- label selectors ------------------------------------------------------------------------------


def validate_label_selector(selector: Any, path: str) -> list[Cause]:
    if not isinstance(selector, dict):
        return []
    causes = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(_dicts(selector.get("matchExpressions"))):
        at = f"{path}.matchExpressions[{i}]"
        operator, values = expr.get("operator"), expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(required(f"{at}.values",
                                       "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(forbidden(f"{at}.values",
                                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            causes.append(invalid(f"{at}.operator", operator, "not a valid selector operator"))
        key = expr.get("key")
        key_errors = is_qualified_name(key if isinstance(key, str) else "")
        causes.extend(invalid(f"{at}.key", key, m) for m in key_errors)
        for j, value in enumerate(values if isinstance(values, list) else []):
            causes.extend(invalid(f"{at}.values[{j}]", value, m) for m in is_label_value(str(value)))
    return causes


def selector_matches(selector: Any, labels: Any) -> bool:
    """Whether a ``metav1.LabelSelector`` selects ``labels``; an empty selector selects everything."""
    if not isinstance(selector, dict):
        return False
    labels = labels if isinstance(labels, dict) else {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in _dicts(selector.get("matchExpressions")):
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values")
        if not isinstance(key, str):
            return False
        values = values if isinstance(values, list) else []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _selector_is_empty(selector: Any) -> bool:
    if not isinstance(selector, dict):
        return True
    return not (selector.get("matchLabels") or selector.get("matchExpressions"))


# --- intstr ---------------------------------------------------------------------------------------


def _validate_int_or_percent(value: Any, path: str, *, at_most_100: bool = True) -> list[Cause]:
    """A non-negative count or percentage; ``at_most_100`` for shares of a whole (not surges)."""
    if isinstance(value, str):
        causes = [invalid(path, value, m) for m in is_valid_percent(value)]
        if at_most_100 and not causes and int(value[:-1]) > 100:
            causes.append(invalid(path, value, "must not be greater than 100%"))
        return causes
    if _is_int(value):
        return [invalid(path, value, NEGATIVE)] if value < 0 else []
    if value is None:
        return []
    return [invalid(path, value, "must be an integer or percentage (e.g '5%')")]


def _int_or_percent_is_zero(value: Any) -> bool:
    if isinstance(value, str) and value.endswith("%"):
        return value[:-1].isdigit() and int(value[:-1]) == 0
    return value == 0 or value is None


# --- pod templates --------------------------------------------------------------------------------

_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
_DEFAULT_MODE = 0o644  # configMap, secret, downwardAPI and projected volumes


def _image_pull_policy(image: Any) -> str:
    # ":latest", or no tag and no digest, names an image that moves, so kubelet must always pull it.
    if not isinstance(image, str) or not image:
        return "IfNotPresent"
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in _PROBE_DEFAULTS.items():
        _default(probe, key, value)
    if isinstance(probe.get("httpGet"), dict):
        _default(probe["httpGet"], "path", "/")
        _default(probe["httpGet"], "scheme", "HTTP")


def _default_container(container: Obj) -> None:
    _default(container, "imagePullPolicy", _image_pull_policy(container.get("image")))
    _default(container, "terminationMessagePath", "/dev/termination-log")
    _default(container, "terminationMessagePolicy", "File")
    # ResourceRequirements is a struct, so Go always serialises it: clients see "resources: {}".
    _default(container, "resources", {})
    for port in _dicts(container.get("ports")):
        _default(port, "protocol", "TCP")
    for env in _dicts(container.get("env")):
        field_ref = _get(env, "valueFrom", "fieldRef")
        if isinstance(field_ref, dict):
            _default(field_ref, "apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(probe))


def _default_volume(volume: Obj) -> None:
    sources = set(volume) - {"name"}
    if not sources:
        volume["emptyDir"] = {}
    for source in ("configMap", "secret", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            _default(volume[source], "defaultMode", _DEFAULT_MODE)


def default_pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and the container, volume and probe defaults below it."""
    _default(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "restartPolicy", "Always")
    _default(spec, "terminationGracePeriodSeconds", 30)
    _default(spec, "securityContext", {})
    _default(spec, "schedulerName", "default-scheduler")
    for key in ("initContainers", "containers"):
        for container in _dicts(spec.get(key)):
            _default_container(container)
    for volume in _dicts(spec.get("volumes")):
        _default_volume(volume)


def default_pod_template(template: Any) -> None:
    if isinstance(template, dict):
        default_pod_spec(_child(template, "spec"))


_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_MESSAGE_POLICIES = ("FallbackToLogsOnError", "File")


def _validate_container(c: Obj, at: str, volumes: set[str], port_names: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    image = c.get("image")
    if not isinstance(image, str) or not image:
        causes.append(required(f"{at}.image"))
    elif image.strip() != image:
        causes.append(invalid(f"{at}.image", image, "must not have leading or trailing whitespace"))
    if c.get("imagePullPolicy") not in _PULL_POLICIES:
        causes.append(not_supported(f"{at}.imagePullPolicy", c.get("imagePullPolicy"), _PULL_POLICIES))
    if c.get("terminationMessagePolicy") not in _MESSAGE_POLICIES:
        causes.append(not_supported(f"{at}.terminationMessagePolicy", c.get("terminationMessagePolicy"),
                                    _MESSAGE_POLICIES))
    for j, port in enumerate(_dicts(c.get("ports"))):
        pat = f"{at}.ports[{j}]"
        name = port.get("name")
        if name:
            causes += [invalid(f"{pat}.name", name, m) for m in is_valid_port_name(str(name))]
            if str(name) in port_names:
                causes.append(duplicate(f"{pat}.name", name))
            port_names.add(str(name))
        container_port = port.get("containerPort")
        if container_port in (None, 0):
            causes.append(required(f"{pat}.containerPort"))
        else:
            causes += [invalid(f"{pat}.containerPort", container_port, m)
                       for m in is_valid_port_num(container_port)]
        host_port = port.get("hostPort")
        if host_port not in (None, 0):
            causes += [invalid(f"{pat}.hostPort", host_port, m) for m in is_valid_port_num(host_port)]
        if port.get("protocol") not in _PROTOCOLS:
            causes.append(not_supported(f"{pat}.protocol", port.get("protocol"), _PROTOCOLS))
    for j, env in enumerate(_dicts(c.get("env"))):
        name = env.get("name")
        if not name:
            causes.append(required(f"{at}.env[{j}].name"))
        else:
            causes += [invalid(f"{at}.env[{j}].name", name, m) for m in is_env_var_name(str(name))]
    for j, mount in enumerate(_dicts(c.get("volumeMounts"))):
        name = mount.get("name")
        if not name:
            causes.append(required(f"{at}.volumeMounts[{j}].name"))
        elif str(name) not in volumes:
            causes.append(not_found(f"{at}.volumeMounts[{j}].name", name))
        if not mount.get("mountPath"):
            causes.append(required(f"{at}.volumeMounts[{j}].mountPath"))
    causes += _validate_resources(c.get("resources"), f"{at}.resources")
    return causes


def validate_pod_spec(spec: Any, path: str) -> list[Cause]:
    """``ValidatePodSpec``'s rules that matter for workload templates; ``path`` ends in ``.spec``."""
    if not isinstance(spec, dict):
        return [required(path)]
    causes: list[Cause] = []
    volumes: set[str] = set()
    for i, volume in enumerate(_dicts(spec.get("volumes"))):
        name = volume.get("name")
        if not name:
            causes.append(required(f"{path}.volumes[{i}].name"))
            continue
        causes += [invalid(f"{path}.volumes[{i}].name", name, m) for m in is_dns1123_label(str(name))]
        if str(name) in volumes:
            causes.append(duplicate(f"{path}.volumes[{i}].name", name))
        volumes.add(str(name))

    containers = _dicts(spec.get("containers"))
    if not containers:
        causes.append(required(f"{path}.containers"))
    names: set[str] = set()
    port_names: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, container in enumerate(_dicts(spec.get(key))):
            at = f"{path}.{key}[{i}]"
            name = container.get("name")
            if not name:
                causes.append(required(f"{at}.name"))
            else:
                causes += [invalid(f"{at}.name", name, m) for m in is_dns1123_label(str(name))]
                if str(name) in names:
                    causes.append(duplicate(f"{at}.name", name))
                names.add(str(name))
            causes += _validate_container(container, at, volumes, port_names)

    if spec.get("restartPolicy") not in _RESTART_POLICIES:
        causes.append(not_supported(f"{path}.restartPolicy", spec.get("restartPolicy"), _RESTART_POLICIES))
    if spec.get("dnsPolicy") not in _DNS_POLICIES:
        causes.append(not_supported(f"{path}.dnsPolicy", spec.get("dnsPolicy"), _DNS_POLICIES))
    causes += _nonnegative(spec, f"{path}.terminationGracePeriodSeconds", "terminationGracePeriodSeconds")
    causes += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    return causes


def validate_pod_template(template: Any, path: str, restart_policies: tuple[str, ...]) -> list[Cause]:
    """A workload's pod template; ``restart_policies`` are the ones the workload kind accepts."""
    if not isinstance(template, dict):
        return [required(path)]
    meta = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    causes = validate_labels(meta.get("labels"), f"{path}.metadata.labels")
    causes += validate_annotations(meta.get("annotations"), f"{path}.metadata.annotations")
    causes += validate_pod_spec(template.get("spec"), f"{path}.spec")
    policy = _get(template, "spec", "restartPolicy")
    if policy in _RESTART_POLICIES and policy not in restart_policies:
        causes.append(not_supported(f"{path}.spec.restartPolicy", policy, restart_policies))
    return causes


def _validate_selector_and_template(spec: Obj, empty_selector: str | None,
                                    restart_policies: tuple[str, ...] = ("Always",)) -> list[Cause]:
    """The selector/template pairing every controller-managed workload shares.

    ``empty_selector`` is the kind's message for a selector that selects everything (None: allowed).
    """
    causes: list[Cause] = []
    selector = spec.get("selector")
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        causes += validate_label_selector(selector, "spec.selector")
        if empty_selector and _selector_is_empty(selector):
            causes.append(invalid("spec.selector", selector, empty_selector))
    template = spec.get("template")
    labels = _get(template, "metadata", "labels")
    if not _selector_is_empty(selector) and not selector_matches(selector, labels):
        causes.append(invalid("spec.template.metadata.labels", labels or {},
                              "`selector` does not match template `labels`"))
    causes += validate_pod_template(template, "spec.template", restart_policies)
    return causes


# --- the base strategy ----------------------------------------------------------------------------


class BuiltinStrategy(Strategy):
    """Status handling shared by the built-in kinds, and defaulting on every write.

    ``has_status`` kinds own a server-side ``status``: creates start from :meth:`initial_status`,
    updates keep the stored status. Kinds without one leave the field alone for the schema to judge.
    """

    has_status = False

    def initial_status(self, obj: Obj) -> Obj:
        return {}

    def default(self, obj: Obj) -> None:
        """Upstream's defaulting, which it applies to every object it decodes."""

    def prepare_for_create(self, obj: Obj) -> None:
        self.default(obj)
        if self.has_status:
            obj["status"] = self.initial_status(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        if self.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)


# --- core/v1 --------------------------------------------------------------------------------------

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")


class NamespaceStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Active"}

    def default(self, obj: Obj) -> None:
        # Every namespace carries its own name as a label, so selectors can pick namespaces by name.
        name = _name(obj)
        if name:
            labels = _child(_meta(obj), "labels")
            labels[NAMESPACE_NAME_LABEL] = name

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        # The "kubernetes" finalizer makes deletion wait for the namespace's content to be purged.
        spec = _child(obj, "spec")
        finalizers = spec.get("finalizers") if isinstance(spec.get("finalizers"), list) else []
        if "kubernetes" not in finalizers:
            spec["finalizers"] = [*finalizers, "kubernetes"]

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # spec.finalizers only changes through the finalize subresource.
        old_spec = _spec(old)
        if "finalizers" in old_spec:
            _child(new, "spec")["finalizers"] = copy.deepcopy(old_spec["finalizers"])
        elif isinstance(new.get("spec"), dict):
            new["spec"].pop("finalizers", None)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = []
        finalizers = _get(obj, "spec", "finalizers")
        for finalizer in finalizers if isinstance(finalizers, list) else []:
            name = str(finalizer)
            causes += [invalid("spec.finalizers", finalizer, m) for m in is_qualified_name(name)]
            if "/" not in name and name not in _STANDARD_FINALIZERS:
                causes.append(invalid("spec.finalizers", finalizer,
                                      "name is neither a standard finalizer name nor is it fully qualified"))
        return causes


# Objects are kept in etcd whole, and mounted whole into pods: data is capped at 1 MiB.
MAX_DATA_SIZE = 1024 * 1024


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
        if _normalised(new.get(field)) != _normalised(old.get(field)):
            causes.append(forbidden(field, "field is immutable when `immutable` is set"))
    return causes


class ConfigMapStrategy(BuiltinStrategy):
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
    def default(self, obj: Obj) -> None:
        _default(obj, "type", "Opaque")
        # stringData is a write-only convenience: it lands in data, encoded, and is never stored.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            data = _child(obj, "data")
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
            annotations = _get(obj, "metadata", "annotations") or {}
            if not annotations.get("kubernetes.io/service-account.name"):
                causes.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
        if secret_type == "kubernetes.io/basic-auth" and not ({"username", "password"} & set(data)):
            causes.append(required("data[username]", "either username or password must be specified"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new) + _immutable(new.get("type"), old.get("type"), "type")
        return causes + _validate_immutable_data(new, old, ("data",))


class ServiceAccountStrategy(BuiltinStrategy):
    def validate(self, obj: Obj) -> list[Cause]:
        causes = []
        for field in ("secrets", "imagePullSecrets"):
            for i, ref in enumerate(_dicts(obj.get(field))):
                if not ref.get("name"):
                    causes.append(required(f"{field}[{i}].name"))
        return causes


class EventStrategy(BuiltinStrategy):
    """core/v1 Events, old style (no eventTime) as kubectl and older clients write them, or new style."""

    def validate(self, obj: Obj) -> list[Cause]:
        event_ns = _get(obj, "metadata", "namespace") or ""
        involved_ns = _get(obj, "involvedObject", "namespace") or ""
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
        for i, limit in enumerate(_dicts(_get(obj, "spec", "limits"))):
            at = f"spec.limits[{i}]"
            limit_type = limit.get("type")
            if not limit_type:
                causes.append(required(f"{at}.type"))
            elif str(limit_type) in seen:
                causes.append(duplicate(f"{at}.type", limit_type))
            seen.add(str(limit_type))
            for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                causes += _validate_quantities(limit.get(key), f"{at}.{key}")
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
        return _validate_quantities(_get(obj, "spec", "hard"), "spec.hard")


_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


class PersistentVolumeClaimStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Pending"}

    def default(self, obj: Obj) -> None:
        _default(_child(obj, "spec"), "volumeMode", "Filesystem")

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
        causes = []
        modes = spec.get("accessModes")
        if not modes:
            causes.append(required("spec.accessModes", "at least 1 access mode is required"))
        for mode in modes if isinstance(modes, list) else []:
            if mode not in _ACCESS_MODES:
                causes.append(not_supported("spec.accessModes", mode, _ACCESS_MODES))
        if not spec.get("dataSourceRef") and not spec.get("dataSource"):
            storage = _get(spec, "resources", "requests", "storage")
            if storage is None:
                causes.append(required("spec.resources[storage]"))
            elif (parsed := parse_quantity(storage)) is None or parsed <= 0:
                causes.append(invalid("spec.resources[storage]", storage, "must be greater than zero"))
        if spec.get("volumeMode") not in ("Block", "Filesystem"):
            causes.append(not_supported("spec.volumeMode", spec.get("volumeMode"), ("Block", "Filesystem")))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        new_spec, old_spec = copy.deepcopy(_spec(new)), copy.deepcopy(_spec(old))
        # The binder may set volumeName once; bound claims may grow; the attributes class may move.
        if not old_spec.get("volumeName"):
            old_spec["volumeName"] = new_spec.get("volumeName")
        for spec in (new_spec, old_spec):
            spec.pop("volumeAttributesClassName", None)
            requests = _get(spec, "resources", "requests")
            if _get(old, "status", "phase") == "Bound" and isinstance(requests, dict):
                requests.pop("storage", None)
        if _normalised(new_spec) != _normalised(old_spec):
            causes.append(forbidden("spec", "spec is immutable after creation except resources.requests and "
                                            "volumeAttributesClassName for bound claims"))
        return causes


# Service addressing: the cluster's service CIDR and node-port range, as a default kubeadm cluster has.
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
NODE_PORT_RANGE = range(30000, 32768)
# Upstream hands out dynamic addresses above a low band kept for static ones (10.96.0.1, 10.96.0.10 …).
_STATIC_BAND = 256
_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _hash(seed: str) -> int:
    return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")


def allocate_cluster_ip(seed: str) -> str:
    """A stable address in the service CIDR for ``seed`` (the service's uid)."""
    span = SERVICE_CIDR.num_addresses - _STATIC_BAND - 1  # the broadcast address is never used
    return str(SERVICE_CIDR.network_address + _STATIC_BAND + _hash(seed) % span)


def _allocate_node_port(seed: str, taken: set[int]) -> int:
    start = _hash(seed) % len(NODE_PORT_RANGE)
    for step in range(len(NODE_PORT_RANGE)):
        port = NODE_PORT_RANGE[(start + step) % len(NODE_PORT_RANGE)]
        if port not in taken:
            return port
    raise RuntimeError("node port range exhausted")


def _needs_cluster_ip(spec: Obj) -> bool:
    return spec.get("type") != "ExternalName"


def _needs_node_ports(spec: Obj) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _is_headless(spec: Obj) -> bool:
    return spec.get("clusterIP") == "None"


def _takes_any_family(spec: Obj) -> bool:
    """Headless services without a selector get their endpoints from elsewhere, of either IP family."""
    return _is_headless(spec) and not spec.get("selector")


_IP_FIELDS = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy")


def _port_key(port: Obj, *fields: str) -> tuple[str, ...]:
    """A hashable identity of a service port (user input may hold any JSON in these fields)."""
    return tuple(str(port.get(f)) for f in fields or ("port", "protocol", "nodePort"))


class ServiceStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"loadBalancer": {}}

    def default(self, obj: Obj) -> None:
        spec = _child(obj, "spec")
        _default(spec, "type", "ClusterIP")
        _default(spec, "sessionAffinity", "None")
        if spec.get("sessionAffinity") == "ClientIP":
            config = _child(spec, "sessionAffinityConfig")
            _default(_child(config, "clientIP"), "timeoutSeconds", 10800)
        for port in _dicts(spec.get("ports")):
            _default(port, "protocol", "TCP")
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
        if _needs_node_ports(spec):
            _default(spec, "externalTrafficPolicy", "Cluster")
        if spec.get("type") == "LoadBalancer":
            _default(spec, "allocateLoadBalancerNodePorts", True)
        if _needs_cluster_ip(spec):
            _default(spec, "internalTrafficPolicy", "Cluster")

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        self._allocate(obj, None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        spec, old_spec = _child(new, "spec"), _spec(old)
        if _needs_cluster_ip(spec) and _needs_cluster_ip(old_spec):
            # clusterIP is immutable; an update that omits it (kubectl replace, a fresh manifest) keeps it.
            for key in _IP_FIELDS:
                if not spec.get(key) and old_spec.get(key):
                    spec[key] = copy.deepcopy(old_spec[key])
        self._drop_type_dependent_fields(spec, old_spec)
        self._allocate(new, old_spec)

    @staticmethod
    def _drop_type_dependent_fields(spec: Obj, old_spec: Obj) -> None:
        """On a type change, forget what the old type allocated, unless the user changed it on purpose."""
        unchanged_ips = all(_normalised(spec.get(k)) == _normalised(old_spec.get(k))
                            for k in ("clusterIP", "clusterIPs"))
        if _needs_cluster_ip(old_spec) and not _needs_cluster_ip(spec):
            for key in _IP_FIELDS if unchanged_ips else ():
                spec.pop(key, None)
            if spec.get("internalTrafficPolicy") == old_spec.get("internalTrafficPolicy"):
                spec.pop("internalTrafficPolicy", None)
        if _needs_node_ports(old_spec) and not _needs_node_ports(spec):
            old_ports = {_port_key(p) for p in _dicts(old_spec.get("ports"))}
            for port in _dicts(spec.get("ports")):
                if _port_key(port) in old_ports:
                    port.pop("nodePort", None)
            if spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
                spec.pop("externalTrafficPolicy", None)
        if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
            for key in ("allocateLoadBalancerNodePorts", "healthCheckNodePort"):
                if spec.get(key) == old_spec.get(key):
                    spec.pop(key, None)

    def _allocate(self, obj: Obj, old_spec: Obj | None) -> None:
        spec = _child(obj, "spec")
        seed = _seed(obj)
        if _needs_cluster_ip(spec):
            self._allocate_ips(spec, seed)
        if _needs_node_ports(spec):
            self._allocate_node_ports(spec, seed, old_spec)

    @staticmethod
    def _allocate_ips(spec: Obj, seed: str) -> None:
        if not spec.get("clusterIP"):
            ips = spec.get("clusterIPs")
            spec["clusterIP"] = ips[0] if isinstance(ips, list) and ips else allocate_cluster_ip(seed)
        if not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        if _takes_any_family(spec):
            _default(spec, "ipFamilyPolicy", "RequireDualStack")
            dual = spec["ipFamilyPolicy"] != "SingleStack"
            _default(spec, "ipFamilies", ["IPv4", "IPv6"] if dual else ["IPv4"])
        else:
            _default(spec, "ipFamilyPolicy", "SingleStack")
            _default(spec, "ipFamilies", ["IPv4"])

    @staticmethod
    def _allocate_node_ports(spec: Obj, seed: str, old_spec: Obj | None) -> None:
        ports = _dicts(spec.get("ports"))
        old_ports = {_port_key(p, "port", "protocol"): p.get("nodePort")
                     for p in _dicts((old_spec or {}).get("ports")) if _is_int(p.get("nodePort"))}
        taken = {p["nodePort"] for p in ports if _is_int(p.get("nodePort"))}
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                continue
            kept = old_ports.get(_port_key(port, "port", "protocol"))
            if not kept or kept in taken:
                kept = _allocate_node_port(f"{seed}:{i}", taken)
            port["nodePort"] = kept
            taken.add(port["nodePort"])
        local = spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
        if local and not spec.get("healthCheckNodePort"):
            kept = (old_spec or {}).get("healthCheckNodePort")
            spec["healthCheckNodePort"] = kept or _allocate_node_port(f"{seed}:health", taken)

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
        causes: list[Cause] = []
        svc_type = spec.get("type")
        if svc_type not in _SERVICE_TYPES:
            causes.append(not_supported("spec.type", svc_type, _SERVICE_TYPES))
        if spec.get("sessionAffinity") not in ("ClientIP", "None"):
            causes.append(not_supported("spec.sessionAffinity", spec.get("sessionAffinity"),
                                        ("ClientIP", "None")))
        if svc_type == "ExternalName":
            external = spec.get("externalName")
            if not external:
                causes.append(required("spec.externalName"))
            else:
                causes += [invalid("spec.externalName", external, m)
                           for m in is_dns1123_subdomain(str(external).removesuffix("."))]
        elif not _dicts(spec.get("ports")) and not _is_headless(spec):
            causes.append(required("spec.ports"))
        causes += self._validate_ports(spec)
        causes += self._validate_ips(spec)
        causes += validate_labels(spec.get("selector"), "spec.selector")
        return causes

    @staticmethod
    def _validate_ports(spec: Obj) -> list[Cause]:
        causes: list[Cause] = []
        ports = _dicts(spec.get("ports"))
        names: set[str] = set()
        pairs: set[tuple[Any, Any]] = set()
        for i, port in enumerate(ports):
            at = f"spec.ports[{i}]"
            name = port.get("name")
            if len(ports) > 1 and not name:
                causes.append(required(f"{at}.name"))
            elif name:
                causes += [invalid(f"{at}.name", name, m) for m in is_dns1123_label(str(name))]
                if str(name) in names:
                    causes.append(duplicate(f"{at}.name", name))
                names.add(str(name))
            causes += [invalid(f"{at}.port", port.get("port"), m)
                       for m in is_valid_port_num(port.get("port"))]
            if port.get("protocol") not in _PROTOCOLS:
                causes.append(not_supported(f"{at}.protocol", port.get("protocol"), _PROTOCOLS))
            target = port.get("targetPort")
            if isinstance(target, str):
                causes += [invalid(f"{at}.targetPort", target, m) for m in is_valid_port_name(target)]
            else:
                causes += [invalid(f"{at}.targetPort", target, m) for m in is_valid_port_num(target)]
            node_port = port.get("nodePort")
            if node_port not in (None, 0):
                if not _needs_node_ports(spec):
                    causes.append(forbidden(f"{at}.nodePort",
                                            f"may not be used when `type` is '{spec.get('type')}'"))
                elif node_port not in NODE_PORT_RANGE:
                    causes.append(invalid(f"{at}.nodePort", node_port,
                                          "provided port is not in the valid range. The range of valid ports "
                                          f"is {NODE_PORT_RANGE.start}-{NODE_PORT_RANGE.stop - 1}"))
            pair = (str(port.get("port")), str(port.get("protocol")))
            if pair in pairs:
                causes.append(duplicate(at, {"port": port.get("port"), "protocol": port.get("protocol")}))
            pairs.add(pair)
        return causes

    @staticmethod
    def _validate_ips(spec: Obj) -> list[Cause]:
        causes: list[Cause] = []
        if not _needs_cluster_ip(spec):
            if spec.get("clusterIP") and spec.get("clusterIP") != "None":
                causes.append(forbidden("spec.clusterIP", "may not be set for ExternalName services"))
            return causes
        ips = spec.get("clusterIPs") if isinstance(spec.get("clusterIPs"), list) else []
        if ips and spec.get("clusterIP") != ips[0]:
            causes.append(invalid("spec.clusterIPs", ips, "first value must match `clusterIP`"))
        for i, ip in enumerate(ips):
            if ip == "None":
                continue
            try:
                address = ipaddress.ip_address(str(ip))
            except ValueError:
                causes.append(invalid(f"spec.clusterIPs[{i}]", ip,
                                      "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
                continue
            if address not in SERVICE_CIDR:
                causes.append(invalid("spec.clusterIPs", ips,
                                      f"failed to allocate IP {ip}: provided IP ({ip}) is not in the valid "
                                      f"range. The range of valid IPs is {SERVICE_CIDR}"))
        policy = spec.get("ipFamilyPolicy")
        if policy not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
            causes.append(not_supported("spec.ipFamilyPolicy", policy,
                                        ("PreferDualStack", "RequireDualStack", "SingleStack")))
        elif policy == "RequireDualStack" and not _takes_any_family(spec):
            causes.append(invalid("spec.ipFamilyPolicy", policy,
                                  "this cluster is not configured for dual-stack services"))
        families = spec.get("ipFamilies") if isinstance(spec.get("ipFamilies"), list) else []
        for i, family in enumerate(families):
            if family not in ("IPv4", "IPv6"):
                causes.append(not_supported(f"spec.ipFamilies[{i}]", family, ("IPv4", "IPv6")))
            elif family == "IPv6" and not _takes_any_family(spec):
                causes.append(invalid(f"spec.ipFamilies[{i}]", family, "not configured on this cluster"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        spec, old_spec = _spec(new), _spec(old)
        if _needs_cluster_ip(spec) and _needs_cluster_ip(old_spec):
            new_ips, old_ips = spec.get("clusterIPs") or [], old_spec.get("clusterIPs") or []
            if new_ips and old_ips and new_ips[0] != old_ips[0]:
                causes.append(invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))
        return causes


# --- apps/v1 --------------------------------------------------------------------------------------


class _WorkloadStrategy(BuiltinStrategy):
    """What Deployments, ReplicaSets, StatefulSets and DaemonSets share."""

    has_status = True
    # Upstream's wording, which differs per kind (ReplicaSets reuse the Deployment message).
    empty_selector = "empty selector is invalid for deployment"
    deadline_owner = "ReplicaSet"

    def default(self, obj: Obj) -> None:
        spec = _child(obj, "spec")
        default_pod_template(spec.get("template"))

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
        causes = _nonnegative(spec, "spec.replicas", "replicas")
        causes += _nonnegative(spec, "spec.minReadySeconds", "minReadySeconds")
        causes += _nonnegative(spec, "spec.revisionHistoryLimit", "revisionHistoryLimit")
        causes += _validate_selector_and_template(spec, self.empty_selector)
        deadline = _get(spec, "template", "spec", "activeDeadlineSeconds")
        if deadline is not None:
            causes.append(self._deadline_cause(deadline))
        return causes

    def _deadline_cause(self, value: Any) -> Cause:
        # Controllers replace pods forever; a pod deadline would make them fail on schedule.
        return forbidden("spec.template.spec.activeDeadlineSeconds",
                         f"activeDeadlineSeconds in {self.deadline_owner} is not Supported")

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        # apps/v1 never lets a controller's selector move: it would orphan the pods it owns.
        return self.validate(new) + _immutable(_get(new, "spec", "selector"), _get(old, "spec", "selector"),
                                               "spec.selector")


class DeploymentStrategy(_WorkloadStrategy):
    """Rolling updates of ReplicaSets."""

    def default(self, obj: Obj) -> None:
        super().default(obj)
        spec = _child(obj, "spec")
        _default(spec, "replicas", 1)
        strategy = _child(spec, "strategy")
        _default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _child(strategy, "rollingUpdate")
            _default(rolling, "maxUnavailable", "25%")
            _default(rolling, "maxSurge", "25%")
        _default(spec, "revisionHistoryLimit", 10)
        _default(spec, "progressDeadlineSeconds", 600)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = super().validate(obj)
        spec = _spec(obj)
        strategy = spec.get("strategy") if isinstance(spec.get("strategy"), dict) else {}
        strategy_type = strategy.get("type")
        if strategy_type not in ("Recreate", "RollingUpdate"):
            causes.append(not_supported("spec.strategy.type", strategy_type, ("Recreate", "RollingUpdate")))
        elif strategy_type == "Recreate" and strategy.get("rollingUpdate") is not None:
            causes.append(forbidden("spec.strategy.rollingUpdate",
                                    "may not be specified when strategy `type` is 'Recreate'"))
        rolling = strategy.get("rollingUpdate")
        if strategy_type == "RollingUpdate" and isinstance(rolling, dict):
            causes += _validate_rolling_update(rolling, "spec.strategy.rollingUpdate")
        deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
        if _is_int(deadline):
            causes += _nonnegative(spec, "spec.progressDeadlineSeconds", "progressDeadlineSeconds")
            if _is_int(min_ready) and deadline <= min_ready:
                causes.append(invalid("spec.progressDeadlineSeconds", deadline,
                                      "must be greater than minReadySeconds"))
        return causes


def _validate_rolling_update(rolling: Obj, path: str) -> list[Cause]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    causes = _validate_int_or_percent(unavailable, f"{path}.maxUnavailable")
    causes += _validate_int_or_percent(surge, f"{path}.maxSurge", at_most_100=False)
    if _int_or_percent_is_zero(unavailable) and _int_or_percent_is_zero(surge):
        causes.append(invalid(f"{path}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"))
    return causes


class ReplicaSetStrategy(_WorkloadStrategy):
    """A fixed number of identical pods."""

    def default(self, obj: Obj) -> None:
        super().default(obj)
        _default(_child(obj, "spec"), "replicas", 1)

    def initial_status(self, obj: Obj) -> Obj:
        return {"replicas": 0}


_STATEFULSET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                        "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


class StatefulSetStrategy(_WorkloadStrategy):
    empty_selector = "empty selector is not valid for statefulset."

    def _deadline_cause(self, value: Any) -> Cause:
        return invalid("spec.template.spec.activeDeadlineSeconds", value, "must not be specified")

    def initial_status(self, obj: Obj) -> Obj:
        return {"replicas": 0, "availableReplicas": 0}

    def default(self, obj: Obj) -> None:
        super().default(obj)
        spec = _child(obj, "spec")
        _default(spec, "podManagementPolicy", "OrderedReady")
        update = _child(spec, "updateStrategy")
        if not update.get("type"):
            update["type"] = "RollingUpdate"
            _child(update, "rollingUpdate")
        if update["type"] == "RollingUpdate" and isinstance(update.get("rollingUpdate"), dict):
            _default(update["rollingUpdate"], "partition", 0)
        retention = _child(spec, "persistentVolumeClaimRetentionPolicy")
        _default(retention, "whenDeleted", "Retain")
        _default(retention, "whenScaled", "Retain")
        _default(spec, "replicas", 1)
        _default(spec, "revisionHistoryLimit", 10)
        for claim in _dicts(spec.get("volumeClaimTemplates")):
            _default(_child(claim, "spec"), "volumeMode", "Filesystem")

    def validate(self, obj: Obj) -> list[Cause]:
        causes = super().validate(obj)
        spec = _spec(obj)
        policy = spec.get("podManagementPolicy")
        if policy not in ("OrderedReady", "Parallel"):
            causes.append(invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
        update = spec.get("updateStrategy") if isinstance(spec.get("updateStrategy"), dict) else {}
        if update.get("type") == "OnDelete" and update.get("rollingUpdate") is not None:
            causes.append(invalid("spec.updateStrategy.rollingUpdate", update["rollingUpdate"],
                                  "only allowed for updateStrategy 'RollingUpdate'"))
        elif update.get("type") == "RollingUpdate":
            causes += _nonnegative(update, "spec.updateStrategy.rollingUpdate.partition", "rollingUpdate",
                                   "partition")
        else:
            causes.append(invalid("spec.updateStrategy", update, "must be 'RollingUpdate' or 'OnDelete'"))
        for i, claim in enumerate(_dicts(spec.get("volumeClaimTemplates"))):
            name = _get(claim, "metadata", "name")
            causes += [invalid(f"spec.volumeClaimTemplates[{i}].metadata.name", name, m)
                       for m in is_dns1123_subdomain(str(name or ""))]
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        frozen_new = {k: v for k, v in _spec(new).items() if k not in _STATEFULSET_MUTABLE}
        frozen_old = {k: v for k, v in _spec(old).items() if k not in _STATEFULSET_MUTABLE}
        if _normalised(frozen_new) != _normalised(frozen_old):
            causes.append(forbidden("spec", "updates to statefulset spec for fields other than 'replicas', "
                                    "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
                                    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                                    "forbidden"))
        return causes


class DaemonSetStrategy(_WorkloadStrategy):
    empty_selector = "empty selector is invalid for daemonset"
    deadline_owner = "DaemonSet"

    def initial_status(self, obj: Obj) -> Obj:
        return {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0,
                "numberReady": 0}

    def default(self, obj: Obj) -> None:
        super().default(obj)
        spec = _child(obj, "spec")
        update = _child(spec, "updateStrategy")
        _default(update, "type", "RollingUpdate")
        if update["type"] == "RollingUpdate":
            rolling = _child(update, "rollingUpdate")
            _default(rolling, "maxUnavailable", 1)
            _default(rolling, "maxSurge", 0)
        _default(spec, "revisionHistoryLimit", 10)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = super().validate(obj)
        update = _get(obj, "spec", "updateStrategy") or {}
        if update.get("type") not in ("OnDelete", "RollingUpdate"):
            causes.append(not_supported("spec.updateStrategy.type", update.get("type"),
                                        ("OnDelete", "RollingUpdate")))
        elif update.get("type") == "RollingUpdate" and isinstance(update.get("rollingUpdate"), dict):
            causes += _validate_rolling_update(update["rollingUpdate"], "spec.updateStrategy.rollingUpdate")
        return causes


# --- batch/v1 -------------------------------------------------------------------------------------

JOB_RESTART_POLICIES = ("OnFailure", "Never")
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
_INT32_MAX = 2**31 - 1


class JobStrategy(BuiltinStrategy):
    has_status = True

    def default(self, obj: Obj) -> None:
        spec = _child(obj, "spec")
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        _default(spec, "parallelism", 1)
        _default(spec, "backoffLimit", _INT32_MAX if spec.get("backoffLimitPerIndex") is not None else 6)
        _default(spec, "completionMode", "NonIndexed")
        _default(spec, "suspend", False)
        # With a pod failure policy, a replacement must wait until the old pod has fully failed.
        _default(spec, "podReplacementPolicy",
                 "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
        for rule in _dicts(_get(spec, "podFailurePolicy", "rules")):
            for pattern in _dicts(rule.get("onPodConditions")):
                _default(pattern, "status", "True")
        default_pod_template(spec.get("template"))
        self._label_from_template(obj)

    @staticmethod
    def _label_from_template(obj: Obj) -> None:
        """A Job without labels of its own takes its pod template's."""
        template_labels = _get(obj, "spec", "template", "metadata", "labels")
        if isinstance(template_labels, dict) and template_labels and not _get(obj, "metadata", "labels"):
            _meta(obj)["labels"] = dict(template_labels)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        spec = _child(obj, "spec")
        if spec.get("manualSelector") is not True:
            self._generate_selector(obj, spec)
        # Upstream defaults again when it reads the stored Job back, so a Job that had no labels
        # (because its template had none) answers with the generated ones.
        self._label_from_template(obj)

    @staticmethod
    def _generate_selector(obj: Obj, spec: Obj) -> None:
        uid, name = str(_get(obj, "metadata", "uid") or ""), _name(obj)
        labels = _child(_child(_child(spec, "template"), "metadata"), "labels")
        # Labels the user set are kept; if they conflict with the generated selector, validation says so.
        for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
            labels.setdefault(key, name)
        for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
            labels.setdefault(key, uid)
        match_labels = _child(_child(spec, "selector"), "matchLabels")
        match_labels.setdefault(CONTROLLER_UID_LABEL, uid)

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
        causes: list[Cause] = []
        for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                    "ttlSecondsAfterFinished"):
            causes += _nonnegative(spec, f"spec.{key}", key)
        if spec.get("completionMode") not in ("Indexed", "NonIndexed"):
            causes.append(not_supported("spec.completionMode", spec.get("completionMode"),
                                        ("NonIndexed", "Indexed")))
        elif spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
            causes.append(required("spec.completions", "when completion mode is Indexed"))
        causes += _validate_selector_and_template(spec, None, JOB_RESTART_POLICIES)
        if spec.get("manualSelector") is not True:
            causes += self._validate_generated_selector(obj, spec)
        return causes

    @staticmethod
    def _validate_generated_selector(obj: Obj, spec: Obj) -> list[Cause]:
        labels = _get(spec, "template", "metadata", "labels")
        if not isinstance(labels, dict):
            return []
        uid, name = str(_get(obj, "metadata", "uid") or ""), _name(obj)
        causes = []
        for key, expected in ((LEGACY_CONTROLLER_UID_LABEL, uid), (LEGACY_JOB_NAME_LABEL, name),
                              (CONTROLLER_UID_LABEL, uid), (JOB_NAME_LABEL, name)):
            path = f"spec.template.metadata.labels[{key}]"
            if key not in labels:
                causes.append(required(path, f"must be '{expected}'"))
            elif labels[key] != expected:
                causes.append(invalid(path, labels, f"must be '{expected}'"))
        selector = spec.get("selector")
        if selector is not None and not selector_matches(selector, {CONTROLLER_UID_LABEL: uid}):
            causes.append(invalid("spec.selector", selector, "`selector` not auto-generated"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        spec, old_spec = _spec(new), _spec(old)
        causes += _immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector")
        causes += _immutable(spec.get("completionMode"), old_spec.get("completionMode"),
                             "spec.completionMode")
        if spec.get("completionMode") != "Indexed":
            causes += _immutable(spec.get("completions"), old_spec.get("completions"), "spec.completions")
        # A suspended Job has not started pods, so its template may still be adjusted.
        if old_spec.get("suspend") is not True:
            causes += _immutable(spec.get("template"), old_spec.get("template"), "spec.template")
        return causes


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (low, high, names) of minute, hour, day of month, month and day of week, as robfig/cron bounds them.
_CRON_FIELDS: tuple[tuple[int, int, Mapping[str, int]], ...] = (
    (0, 59, {}), (0, 23, {}), (1, 31, {}),
    (1, 12, {m: i + 1 for i, m in enumerate(_MONTHS)}),
    (0, 6, {d: i for i, d in enumerate(_WEEKDAYS)}),
)
_CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


def _cron_value(text: str, names: Mapping[str, int]) -> int | str:
    if text.lower() in names:
        return names[text.lower()]
    if text.isdigit():
        return int(text)
    return f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'


def _cron_field_error(expr: str, low: int, high: int, names: Mapping[str, int]) -> str | None:
    """robfig/cron's error for one comma-separated part of a field, as upstream surfaces it."""
    for part in expr.split(","):
        range_part, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) <= 0):
            return f"step of range should be a positive number: {part}"
        if range_part in ("*", "?"):
            continue
        bounds = range_part.split("-")
        if len(bounds) > 2:
            return f"too many hyphens: {part}"
        values = [_cron_value(b, names) for b in bounds]
        for value in values:
            if isinstance(value, str):
                return value
        start, end = values[0], values[-1]
        assert isinstance(start, int) and isinstance(end, int)
        if start < low:
            return f"beginning of range ({start}) below minimum ({low}): {part}"
        if end > high:
            return f"end of range ({end}) above maximum ({high}): {part}"
        if start > end:
            return f"beginning of range ({start}) beyond end of range ({end}): {part}"
    return None


def cron_schedule_error(schedule: str) -> str | None:
    """Why ``cron.ParseStandard`` rejects ``schedule``, or None when it parses."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        _, _, text = text.partition(" ")
        text = text.strip()
    if text.startswith("@"):
        if text in _CRON_DESCRIPTORS:
            return None
        if text.startswith("@every "):
            duration = text.removeprefix("@every ").strip()
            if _GO_DURATION.match(duration):
                return None
            return f'failed to parse duration {text}: time: invalid duration "{duration}"'
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    for expr, (low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        error = _cron_field_error(expr, low, high, names)
        if error:
            return error
    return None


def _zone_error(zone: Any) -> str | None:
    if not isinstance(zone, str) or not zone:
        return "timeZone must be nil or non-empty string"
    if zone.lower() == "local":
        return "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    if not re.match(r"^[A-Za-z.\-_0-9+]{1,14}(/[A-Za-z.\-_0-9+]{1,14})*$", zone):
        return f"unknown time zone {zone}"
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        # Without a tz database on this machine every zone would look unknown; judge syntax only then.
        return f"unknown time zone {zone}" if zoneinfo.available_timezones() else None
    return None


class CronJobStrategy(BuiltinStrategy):
    has_status = True

    def default(self, obj: Obj) -> None:
        spec = _child(obj, "spec")
        _default(spec, "concurrencyPolicy", "Allow")
        _default(spec, "suspend", False)
        _default(spec, "successfulJobsHistoryLimit", 3)
        _default(spec, "failedJobsHistoryLimit", 1)
        job_spec = _get(spec, "jobTemplate", "spec")
        if isinstance(job_spec, dict):
            default_pod_template(job_spec.get("template"))

    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        name = _name(obj)
        # Jobs are named <cronjob>-<11-char timestamp suffix> and must stay DNS-1035 labels.
        if len(name) > 52:
            causes.append(invalid("metadata.name", name, "must be no more than 52 characters"))
        spec = _spec(obj)
        schedule = spec.get("schedule")
        if not schedule:
            causes.append(required("spec.schedule"))
        else:
            error = cron_schedule_error(str(schedule))
            if error:
                causes.append(invalid("spec.schedule", schedule, error))
            if "TZ" in str(schedule):
                causes.append(invalid("spec.schedule", schedule,
                                      "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
        if spec.get("timeZone") is not None and (error := _zone_error(spec.get("timeZone"))):
            causes.append(invalid("spec.timeZone", spec.get("timeZone"), error))
        policy = spec.get("concurrencyPolicy")
        if policy not in ("Allow", "Forbid", "Replace"):
            causes.append(not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
        for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
            causes += _nonnegative(spec, f"spec.{key}", key)
        job = spec.get("jobTemplate")
        if not isinstance(job, dict):
            return [*causes, required("spec.jobTemplate")]
        meta = job.get("metadata") if isinstance(job.get("metadata"), dict) else {}
        causes += validate_labels(meta.get("labels"), "spec.jobTemplate.metadata.labels")
        causes += validate_annotations(meta.get("annotations"), "spec.jobTemplate.metadata.annotations")
        job_spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
        for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"):
            causes += _nonnegative(job_spec, f"spec.jobTemplate.spec.{key}", key)
        causes += validate_pod_template(job_spec.get("template"), "spec.jobTemplate.spec.template",
                                        JOB_RESTART_POLICIES)
        return causes


# --- networking.k8s.io/v1 -------------------------------------------------------------------------

_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")


def _validate_backend(backend: Any, path: str) -> list[Cause]:
    if not isinstance(backend, dict):
        return [required(path)]
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [invalid(path, backend, "cannot set both service and resource backends")]
    if service is None and resource is None:
        return [invalid(path, backend, "one backend (service or resource) must be specified")]
    if resource is not None:
        causes = []
        for key in ("kind", "name"):
            if not _get(resource, key):
                causes.append(required(f"{path}.resource.{key}"))
        return causes
    causes = []
    name = _get(service, "name")
    if not name:
        causes.append(required(f"{path}.service.name"))
    else:
        causes += [invalid(f"{path}.service.name", name, m) for m in is_dns1035_label(str(name))]
    port = _get(service, "port") or {}
    has_name, has_number = bool(port.get("name")), port.get("number") not in (None, 0)
    if has_name and has_number:
        causes.append(invalid(f"{path}.service.port", port, "cannot set both port name & port number"))
    elif has_name:
        causes += [invalid(f"{path}.service.port.name", port["name"], m)
                   for m in is_valid_port_name(str(port["name"]))]
    elif has_number:
        causes += [invalid(f"{path}.service.port.number", port["number"], m)
                   for m in is_valid_port_num(port["number"])]
    else:
        causes.append(required(f"{path}.service.port", "port name or number is required"))
    return causes


_WILDCARD_HOST_ERROR = regex_error(
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
    "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
    "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", "*.example.com")


def _validate_host(host: str, path: str) -> list[Cause]:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [invalid(path, host, "must be a DNS name, not an IP address")]
    if host.startswith("*."):
        if is_dns1123_subdomain(host[2:]):
            return [invalid(path, host, _WILDCARD_HOST_ERROR)]
        return []
    return [invalid(path, host, m) for m in is_dns1123_subdomain(host)]


class IngressStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"loadBalancer": {}}

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
        causes: list[Cause] = []
        rules = _dicts(spec.get("rules"))
        if spec.get("defaultBackend") is None and not rules:
            causes.append(invalid("spec", spec.get("rules"),
                                  "either `defaultBackend` or `rules` must be specified"))
        if spec.get("defaultBackend") is not None:
            causes += _validate_backend(spec["defaultBackend"], "spec.defaultBackend")
        class_name = spec.get("ingressClassName")
        if class_name is not None:
            causes += [invalid("spec.ingressClassName", class_name, m)
                       for m in is_dns1123_subdomain(str(class_name))]
        for i, rule in enumerate(rules):
            at = f"spec.rules[{i}]"
            if rule.get("host"):
                causes += _validate_host(str(rule["host"]), f"{at}.host")
            http = rule.get("http")
            if http is None:
                continue
            paths = _dicts(_get(http, "paths"))
            if not paths:
                causes.append(required(f"{at}.http.paths"))
            for j, item in enumerate(paths):
                pat = f"{at}.http.paths[{j}]"
                path_type, value = item.get("pathType"), item.get("path")
                if path_type is None:
                    causes.append(required(f"{pat}.pathType", "pathType must be specified"))
                elif path_type not in _PATH_TYPES:
                    causes.append(not_supported(f"{pat}.pathType", path_type, _PATH_TYPES))
                elif path_type in ("Exact", "Prefix") and not str(value or "").startswith("/"):
                    causes.append(invalid(f"{pat}.path", value or "", "must be an absolute path"))
                causes += _validate_backend(item.get("backend"), f"{pat}.backend")
        for i, tls in enumerate(_dicts(spec.get("tls"))):
            for j, host in enumerate(tls.get("hosts") or []):
                causes += _validate_host(str(host), f"spec.tls[{i}].hosts[{j}]")
        return causes


def _validate_peer(peer: Obj, path: str) -> list[Cause]:
    selectors = [k for k in ("podSelector", "namespaceSelector") if peer.get(k) is not None]
    block = peer.get("ipBlock")
    if not selectors and block is None:
        return [required(path, "must specify a peer")]
    if selectors and block is not None:
        return [forbidden(path, "may not specify more than 1 peer type")]
    causes: list[Cause] = []
    for key in selectors:
        causes += validate_label_selector(peer[key], f"{path}.{key}")
    if isinstance(block, dict):
        cidr = block.get("cidr")
        if not cidr:
            causes.append(required(f"{path}.ipBlock.cidr"))
            return causes
        try:
            network = ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            causes.append(invalid(f"{path}.ipBlock.cidr", cidr,
                                  "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
            return causes
        for k, excepted in enumerate(block.get("except") or []):
            try:
                inner = ipaddress.ip_network(str(excepted), strict=False)
            except ValueError:
                causes.append(invalid(f"{path}.ipBlock.except[{k}]", excepted,
                                      "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
                continue
            if inner.version != network.version or inner == network or not inner.subnet_of(network):
                causes.append(invalid(f"{path}.ipBlock.except[{k}]", excepted,
                                      "must be a strict subset of `cidr`"))
    return causes


def _validate_policy_ports(ports: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, port in enumerate(_dicts(ports)):
        at = f"{path}[{i}]"
        if port.get("protocol") not in _PROTOCOLS:
            causes.append(not_supported(f"{at}.protocol", port.get("protocol"), _PROTOCOLS))
        value = port.get("port")
        if isinstance(value, str):
            causes += [invalid(f"{at}.port", value, m) for m in is_valid_port_name(value)]
        elif value is not None:
            causes += [invalid(f"{at}.port", value, m) for m in is_valid_port_num(value)]
        end = port.get("endPort")
        if end is not None:
            if not _is_int(value):
                causes.append(required(f"{at}.port", "must be specified when endPort is specified"))
            elif not _is_int(end) or end < value:
                causes.append(invalid(f"{at}.endPort", end, "must be greater than or equal to `port`"))
    return causes


class NetworkPolicyStrategy(BuiltinStrategy):
    def default(self, obj: Obj) -> None:
        spec = _child(obj, "spec")
        if not spec.get("policyTypes"):
            # A policy that names no types is at least an ingress policy, and an egress one if it has rules.
            spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
        for direction in ("ingress", "egress"):
            for rule in _dicts(spec.get(direction)):
                for port in _dicts(rule.get("ports")):
                    _default(port, "protocol", "TCP")

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
        causes = validate_label_selector(spec.get("podSelector"), "spec.podSelector")
        for direction, peers_key in (("ingress", "from"), ("egress", "to")):
            for i, rule in enumerate(_dicts(spec.get(direction))):
                at = f"spec.{direction}[{i}]"
                causes += _validate_policy_ports(rule.get("ports"), f"{at}.ports")
                for j, peer in enumerate(_dicts(rule.get(peers_key))):
                    causes += _validate_peer(peer, f"{at}.{peers_key}[{j}]")
        types = spec.get("policyTypes") if isinstance(spec.get("policyTypes"), list) else []
        for i, policy_type in enumerate(types):
            if policy_type not in ("Egress", "Ingress"):
                causes.append(not_supported(f"spec.policyTypes[{i}]", policy_type, ("Egress", "Ingress")))
        if len(types) > 2:
            causes.append(invalid("spec.policyTypes", types, "may not specify more than two policyTypes"))
        return causes


# --- policy/v1, autoscaling/v2 --------------------------------------------------------------------

_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


class PodDisruptionBudgetStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
        causes: list[Cause] = []
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            causes.append(invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
        for key in ("minAvailable", "maxUnavailable"):
            causes += _validate_int_or_percent(spec.get(key), f"spec.{key}")
        causes += validate_label_selector(spec.get("selector"), "spec.selector")
        policy = spec.get("unhealthyPodEvictionPolicy")
        if policy is not None and policy not in _EVICTION_POLICIES:
            causes.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, _EVICTION_POLICIES))
        return causes


_METRIC_SOURCES = {"ContainerResource": "containerResource", "External": "external", "Object": "object",
                   "Pods": "pods", "Resource": "resource"}
_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
             "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                          {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN = {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
               "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


class HorizontalPodAutoscalerStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"desiredReplicas": 0}

    def default(self, obj: Obj) -> None:
        spec = _child(obj, "spec")
        _default(spec, "minReplicas", 1)
        if not spec.get("metrics"):
            spec["metrics"] = [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
        behavior = spec.get("behavior")
        if isinstance(behavior, dict):
            # Only a behaviour the user asked for is completed; none at all means controller defaults.
            for key, defaults in (("scaleUp", _SCALE_UP), ("scaleDown", _SCALE_DOWN)):
                rules = _child(behavior, key)
                for field, value in defaults.items():
                    _default(rules, field, copy.deepcopy(value))

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
        causes: list[Cause] = []
        minimum, maximum = spec.get("minReplicas"), spec.get("maxReplicas")
        if _is_int(minimum) and minimum < 1:
            causes.append(invalid("spec.minReplicas", minimum, "must be greater than or equal to 1"))
        if not _is_int(maximum) or maximum < 1:
            causes.append(invalid("spec.maxReplicas", maximum if maximum is not None else 0,
                                  "must be greater than 0"))
        elif _is_int(minimum) and maximum < minimum:
            causes.append(invalid("spec.maxReplicas", maximum,
                                  "must be greater than or equal to `minReplicas`"))
        ref = spec.get("scaleTargetRef") if isinstance(spec.get("scaleTargetRef"), dict) else {}
        for key in ("kind", "name"):
            value = ref.get(key)
            if not value:
                causes.append(required(f"spec.scaleTargetRef.{key}"))
            else:
                causes += [invalid(f"spec.scaleTargetRef.{key}", value, m)
                           for m in is_path_segment_name(str(value))]
        for i, metric in enumerate(_dicts(spec.get("metrics"))):
            metric_type = metric.get("type")
            source = _METRIC_SOURCES.get(str(metric_type))
            if source is None:
                causes.append(not_supported(f"spec.metrics[{i}].type", metric_type, sorted(_METRIC_SOURCES)))
            elif not isinstance(metric.get(source), dict):
                causes.append(required(f"spec.metrics[{i}].{source}",
                                       "must populate information for the given metric source"))
            else:
                causes += self._validate_target(metric[source], f"spec.metrics[{i}].{source}")
        return causes

    @staticmethod
    def _validate_target(source: Obj, path: str) -> list[Cause]:
        target = source.get("target")
        if not isinstance(target, dict):
            return [required(f"{path}.target")]
        target_type = target.get("type")
        if target_type not in ("AverageValue", "Utilization", "Value"):
            return [not_supported(f"{path}.target.type", target_type,
                                  ("AverageValue", "Utilization", "Value"))]
        utilization = target.get("averageUtilization")
        if _is_int(utilization) and utilization <= 0:
            return [invalid(f"{path}.target.averageUtilization", utilization, "must be greater than 0")]
        return []


# --- rbac.authorization.k8s.io/v1 -----------------------------------------------------------------

RBAC_GROUP = "rbac.authorization.k8s.io"


def _validate_rules(rules: Any, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(_dicts(rules)):
        at = f"rules[{i}]"
        if not rule.get("verbs"):
            causes.append(required(f"{at}.verbs", "verbs must contain at least one value"))
        urls = rule.get("nonResourceURLs")
        if urls:
            if namespaced:
                causes.append(invalid(f"{at}.nonResourceURLs", urls,
                                      "namespaced rules cannot apply to non-resource URLs"))
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                causes.append(invalid(f"{at}.nonResourceURLs", urls,
                                      "rules cannot apply to both regular resources and non-resource URLs"))
            continue
        if not rule.get("apiGroups"):
            causes.append(required(f"{at}.apiGroups", "resource rules must supply at least one api group"))
        if not rule.get("resources"):
            causes.append(required(f"{at}.resources", "resource rules must supply at least one resource"))
    return causes


class RoleStrategy(BuiltinStrategy):
    namespaced = True

    def validate(self, obj: Obj) -> list[Cause]:
        causes = _validate_rules(obj.get("rules"), self.namespaced)
        aggregation = obj.get("aggregationRule")
        if isinstance(aggregation, dict):
            for i, selector in enumerate(_dicts(aggregation.get("clusterRoleSelectors"))):
                causes += validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]")
        return causes


class ClusterRoleStrategy(RoleStrategy):
    namespaced = False


class RoleBindingStrategy(BuiltinStrategy):
    namespaced = True
    role_kinds: tuple[str, ...] = ("Role", "ClusterRole")

    def default(self, obj: Obj) -> None:
        _default(_child(obj, "roleRef"), "apiGroup", RBAC_GROUP)
        for subject in _dicts(obj.get("subjects")):
            # ServiceAccounts are in the core group, which is the empty (and so omitted) apiGroup.
            if not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = RBAC_GROUP

    def validate(self, obj: Obj) -> list[Cause]:
        ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
        causes: list[Cause] = []
        if ref.get("apiGroup") != RBAC_GROUP:
            causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup"), (RBAC_GROUP,)))
        if ref.get("kind") not in self.role_kinds:
            causes.append(not_supported("roleRef.kind", ref.get("kind"), self.role_kinds))
        name = ref.get("name")
        if not name:
            causes.append(required("roleRef.name"))
        else:
            causes += [invalid("roleRef.name", name, m) for m in is_path_segment_name(str(name))]
        for i, subject in enumerate(_dicts(obj.get("subjects"))):
            causes += self._validate_subject(subject, f"subjects[{i}]")
        return causes

    def _validate_subject(self, subject: Obj, path: str) -> list[Cause]:
        causes: list[Cause] = []
        name, kind, group = subject.get("name"), subject.get("kind"), subject.get("apiGroup") or ""
        if not name:
            causes.append(required(f"{path}.name"))
        if kind == "ServiceAccount":
            if name:
                causes += [invalid(f"{path}.name", name, m) for m in is_dns1123_subdomain(str(name))]
            if group:
                causes.append(not_supported(f"{path}.apiGroup", group, ("",)))
            if not self.namespaced and not subject.get("namespace"):
                causes.append(required(f"{path}.namespace"))
        elif kind in ("User", "Group"):
            if group != RBAC_GROUP:
                causes.append(not_supported(f"{path}.apiGroup", group, (RBAC_GROUP,)))
        else:
            causes.append(not_supported(f"{path}.kind", kind, ("ServiceAccount", "User", "Group")))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        # A binding is a grant of one role: pointing it elsewhere would silently change who can do what.
        if _normalised(new.get("roleRef")) != _normalised(old.get("roleRef")):
            causes.append(invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
        return causes


class ClusterRoleBindingStrategy(RoleBindingStrategy):
    namespaced = False
    role_kinds = ("ClusterRole",)


# --- storage.k8s.io/v1, scheduling.k8s.io/v1 ------------------------------------------------------


class StorageClassStrategy(BuiltinStrategy):
    def default(self, obj: Obj) -> None:
        _default(obj, "reclaimPolicy", "Delete")
        _default(obj, "volumeBindingMode", "Immediate")

    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        provisioner = obj.get("provisioner")
        if not provisioner:
            causes.append(required("provisioner"))
        else:
            causes += [invalid("provisioner", provisioner, m)
                       for m in is_qualified_name(str(provisioner).lower())]
        if obj.get("reclaimPolicy") not in ("Delete", "Retain"):
            causes.append(not_supported("reclaimPolicy", obj.get("reclaimPolicy"), ("Delete", "Retain")))
        if obj.get("volumeBindingMode") not in ("Immediate", "WaitForFirstConsumer"):
            causes.append(not_supported("volumeBindingMode", obj.get("volumeBindingMode"),
                                        ("Immediate", "WaitForFirstConsumer")))
        parameters = obj.get("parameters")
        if isinstance(parameters, dict) and len(parameters) > 512:
            causes.append(invalid("parameters", "<omitted>", "must have at most 512 parameters"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        if _normalised(new.get("parameters")) != _normalised(old.get("parameters")):
            causes.append(forbidden("parameters", "updates to parameters are forbidden."))
        if new.get("provisioner") != old.get("provisioner"):
            causes.append(forbidden("provisioner", "updates to provisioner are forbidden."))
        if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
            causes.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
        return causes + _immutable(new.get("volumeBindingMode"), old.get("volumeBindingMode"),
                                   "volumeBindingMode")


HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


class PriorityClassStrategy(BuiltinStrategy):
    def default(self, obj: Obj) -> None:
        _default(obj, "preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        value, name = obj.get("value"), _name(obj)
        if value is None:
            causes.append(required("value"))
        elif not _is_int(value):
            causes.append(invalid("value", value, "must be an integer"))
        if name.startswith("system-"):
            reserved = "priority class names with 'system-' prefix are reserved for system use only. error: "
            if name not in SYSTEM_PRIORITY_CLASSES:
                causes.append(forbidden("metadata.name",
                                        f"{reserved}{name} is not a known system priority class"))
            elif value != SYSTEM_PRIORITY_CLASSES[name]:
                causes.append(forbidden("metadata.name", f"{reserved}value of {name} PriorityClass must be "
                                                         f"{SYSTEM_PRIORITY_CLASSES[name]}"))
        elif _is_int(value) and value > HIGHEST_USER_PRIORITY:
            causes.append(forbidden("value", f"maximum allowed value of a user defined priority is "
                                             f"{HIGHEST_USER_PRIORITY}"))
        policy = obj.get("preemptionPolicy")
        if policy not in ("Never", "PreemptLowerPriority"):
            causes.append(not_supported("preemptionPolicy", policy, ("Never", "PreemptLowerPriority")))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        if new.get("value") != old.get("value"):
            causes.append(forbidden("value", "may not be changed in an update."))
        return causes + _immutable(new.get("preemptionPolicy"), old.get("preemptionPolicy"),
                                   "preemptionPolicy")


# --- apiextensions.k8s.io/v1 ----------------------------------------------------------------------


def _storage_version(obj: Obj) -> str | None:
    for version in _dicts(_get(obj, "spec", "versions")):
        if version.get("storage") is True and isinstance(version.get("name"), str):
            return version["name"]
    return None


class CustomResourceDefinitionStrategy(BuiltinStrategy):
    """Stored and validated for names and scope only; serving the defined resources is elsewhere."""

    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        storage = _storage_version(obj)
        return {"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": [storage] if storage else []}

    def default(self, obj: Obj) -> None:
        spec = _child(obj, "spec")
        names = _child(spec, "names")
        kind = names.get("kind")
        if isinstance(kind, str) and kind:
            _default(names, "singular", kind.lower())
            _default(names, "listKind", f"{kind}List")
        _default(_child(spec, "conversion"), "strategy", "None")

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # Every version ever used for storage stays listed until a migration removes it.
        storage = _storage_version(new)
        status = _child(new, "status")
        stored = status.get("storedVersions") if isinstance(status.get("storedVersions"), list) else []
        if storage and storage not in stored:
            status["storedVersions"] = [*stored, storage]

    def validate(self, obj: Obj) -> list[Cause]:
        spec = _spec(obj)
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
        if names.get("plural") and group and _name(obj) != f"{names['plural']}.{group}":
            causes.append(invalid("metadata.name", _name(obj), 'must be spec.names.plural+"."+spec.group'))
        versions = _dicts(spec.get("versions"))
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
        causes += _immutable(_get(new, "spec", "group"), _get(old, "spec", "group"), "spec.group")
        causes += _immutable(_get(new, "spec", "names", "plural"), _get(old, "spec", "names", "plural"),
                             "spec.names.plural")
        return causes


# --- spacehub.io/v1alpha1 -------------------------------------------------------------------------

ROOT_SPACE = "root"


class SpaceStrategy(BuiltinStrategy):
    """Spaces are made and removed by users, except ``root``, which the hub itself owns."""

    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Pending"}

    def validate(self, obj: Obj) -> list[Cause]:
        if _name(obj) == ROOT_SPACE:
            return [forbidden("metadata.name", "the root space is created by the hub and cannot be created")]
        return []

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        # Updating root (labels, annotations) is fine; only its creation and deletion are reserved.
        return []

    def validate_delete(self, obj: Obj) -> list[Cause]:
        """Causes that forbid deleting ``obj``; the handlers call it before a delete of a Space."""
        if _name(obj) == ROOT_SPACE:
            return [forbidden("metadata.name", "the root space cannot be deleted")]
        return []
