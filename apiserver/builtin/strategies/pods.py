"""Pod specs and templates as workloads embed them: upstream's pod defaults, ``ValidatePodSpec``'s rules
that matter for templates, and the selector/template pairing every controller-managed workload shares.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import (
    duplicate,
    invalid,
    is_dns1123_label,
    is_env_var_name,
    is_valid_port_name,
    is_valid_port_num,
    not_found,
    not_supported,
    required,
    validate_annotations,
    validate_labels,
)
from apimachinery.nested import dicts, get
from apiserver.builtin.strategies.labelselectors import selector_is_empty, selector_matches, validate_label_selector
from apiserver.builtin.strategies.objectfields import PORT_PROTOCOLS, Obj, child, nonnegative, set_default
from apiserver.builtin.strategies.quantities import validate_resources

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
        set_default(probe, key, value)
    if isinstance(probe.get("httpGet"), dict):
        set_default(probe["httpGet"], "path", "/")
        set_default(probe["httpGet"], "scheme", "HTTP")


def _default_container(container: Obj) -> None:
    set_default(container, "imagePullPolicy", _image_pull_policy(container.get("image")))
    set_default(container, "terminationMessagePath", "/dev/termination-log")
    set_default(container, "terminationMessagePolicy", "File")
    # ResourceRequirements is a struct, so Go always serialises it: clients see "resources: {}".
    set_default(container, "resources", {})
    for port in dicts(container.get("ports")):
        set_default(port, "protocol", "TCP")
    for env in dicts(container.get("env")):
        field_ref = get(env, "valueFrom", "fieldRef")
        if isinstance(field_ref, dict):
            set_default(field_ref, "apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(probe))


def _default_volume(volume: Obj) -> None:
    sources = set(volume) - {"name"}
    if not sources:
        volume["emptyDir"] = {}
    for source in ("configMap", "secret", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            set_default(volume[source], "defaultMode", _DEFAULT_MODE)


def default_pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and the container, volume and probe defaults below it."""
    set_default(spec, "dnsPolicy", "ClusterFirst")
    set_default(spec, "restartPolicy", "Always")
    set_default(spec, "terminationGracePeriodSeconds", 30)
    set_default(spec, "securityContext", {})
    set_default(spec, "schedulerName", "default-scheduler")
    for key in ("initContainers", "containers"):
        for container in dicts(spec.get(key)):
            _default_container(container)
    for volume in dicts(spec.get("volumes")):
        _default_volume(volume)


def default_pod_template(template: Any) -> None:
    if isinstance(template, dict):
        default_pod_spec(child(template, "spec"))


_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
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
    for j, port in enumerate(dicts(c.get("ports"))):
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
        if port.get("protocol") not in PORT_PROTOCOLS:
            causes.append(not_supported(f"{pat}.protocol", port.get("protocol"), PORT_PROTOCOLS))
    for j, env in enumerate(dicts(c.get("env"))):
        name = env.get("name")
        if not name:
            causes.append(required(f"{at}.env[{j}].name"))
        else:
            causes += [invalid(f"{at}.env[{j}].name", name, m) for m in is_env_var_name(str(name))]
    for j, mount in enumerate(dicts(c.get("volumeMounts"))):
        name = mount.get("name")
        if not name:
            causes.append(required(f"{at}.volumeMounts[{j}].name"))
        elif str(name) not in volumes:
            causes.append(not_found(f"{at}.volumeMounts[{j}].name", name))
        if not mount.get("mountPath"):
            causes.append(required(f"{at}.volumeMounts[{j}].mountPath"))
    causes += validate_resources(c.get("resources"), f"{at}.resources")
    return causes


def validate_pod_spec(spec: Any, path: str) -> list[Cause]:
    """``ValidatePodSpec``'s rules that matter for workload templates; ``path`` ends in ``.spec``."""
    if not isinstance(spec, dict):
        return [required(path)]
    causes: list[Cause] = []
    volumes: set[str] = set()
    for i, volume in enumerate(dicts(spec.get("volumes"))):
        name = volume.get("name")
        if not name:
            causes.append(required(f"{path}.volumes[{i}].name"))
            continue
        causes += [invalid(f"{path}.volumes[{i}].name", name, m) for m in is_dns1123_label(str(name))]
        if str(name) in volumes:
            causes.append(duplicate(f"{path}.volumes[{i}].name", name))
        volumes.add(str(name))

    containers = dicts(spec.get("containers"))
    if not containers:
        causes.append(required(f"{path}.containers"))
    names: set[str] = set()
    port_names: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, container in enumerate(dicts(spec.get(key))):
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
    causes += nonnegative(spec, f"{path}.terminationGracePeriodSeconds", "terminationGracePeriodSeconds")
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
    policy = get(template, "spec", "restartPolicy")
    if policy in _RESTART_POLICIES and policy not in restart_policies:
        causes.append(not_supported(f"{path}.spec.restartPolicy", policy, restart_policies))
    return causes


def validate_selector_and_template(spec: Obj, empty_selector: str | None,
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
        if empty_selector and selector_is_empty(selector):
            causes.append(invalid("spec.selector", selector, empty_selector))
    template = spec.get("template")
    labels = get(template, "metadata", "labels")
    if not selector_is_empty(selector) and not selector_matches(selector, labels):
        causes.append(invalid("spec.template.metadata.labels", labels or {},
                              "`selector` does not match template `labels`"))
    causes += validate_pod_template(template, "spec.template", restart_policies)
    return causes
