"""Which pod and container a log, exec, attach or port-forward request reaches, with upstream's refusals.

The container is chosen as kube-apiserver chooses it (``LogLocation``/``streamLocation``): the one given,
which must be one of the pod's containers, init or ephemeral containers; else the only container. A
container's state decides what it can do, in the words of kubelet (``validateContainerLogStatus``, ``GetExec``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from apimachinery.errors import StatusError, bad_request, not_found

Obj = dict[str, Any]
DEFAULT_PORT = 80


def _dicts(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def pod_name(pod: Obj) -> str:
    return str(_get(pod, "metadata", "name") or "")


def pod_uid(pod: Obj) -> str:
    return str(_get(pod, "metadata", "uid") or "")


def containers(pod: Obj) -> list[Obj]:
    return _dicts(_get(pod, "spec", "containers"))


def _names(items: list[Obj]) -> str:
    return " ".join(str(c.get("name", "")) for c in items)


def require_pod(pod: Obj | None, name: str) -> Obj:
    if pod is None:
        raise not_found("pods", "", name)
    return pod


def choose_container(pod: Obj, wanted: str) -> str:
    """``wanted``, if the pod has it; with none wanted, the only container."""
    name = pod_name(pod)
    main = containers(pod)
    if not wanted:
        if len(main) == 1:
            return str(main[0].get("name", ""))
        if not main:
            raise bad_request(f"a container name must be specified for pod {name}")
        message = f"a container name must be specified for pod {name}, choose one of: [{_names(main)}]"
        init = _dicts(_get(pod, "spec", "initContainers"))
        if init:
            message += f" or one of the init containers: [{_names(init)}]"
        raise bad_request(message)
    every = main + _dicts(_get(pod, "spec", "initContainers")) + _dicts(_get(pod, "spec", "ephemeralContainers"))
    if not any(c.get("name") == wanted for c in every):
        raise bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def container_spec(pod: Obj, name: str) -> Obj:
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in _dicts(_get(pod, "spec", key)):
            if container.get("name") == name:
                return container
    return {}


def container_status(pod: Obj, name: str) -> Obj | None:
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for status in _dicts(_get(pod, "status", key)):
            if status.get("name") == name:
                return status
    return None


def running(pod: Obj, container: str) -> bool:
    return _get(container_status(pod, container), "state", "running") is not None and \
        not _get(pod, "metadata", "deletionTimestamp")


def _waiting(pod: Obj, container: str, status: Obj | None) -> StatusError:
    name = pod_name(pod)
    reason = str(_get(status, "state", "waiting", "reason") or "ContainerCreating")
    detail = {"ErrImagePull": "image can't be pulled",
              "ImagePullBackOff": "trying and failing to pull image"}.get(reason, reason)
    return bad_request(f'container "{container}" in pod "{name}" is waiting to start: {detail}')


def check_logs(pod: Obj, container: str, previous: bool) -> None:
    """Refuse a log request as kubelet does when there is no such log (yet)."""
    name = pod_name(pod)
    status = container_status(pod, container)
    if previous:
        if _get(status, "lastState", "terminated") is None:
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        return
    state = _get(status, "state") or {}
    if "running" in state or "terminated" in state or _get(status, "lastState", "terminated") is not None:
        return
    raise _waiting(pod, container, status)


def check_scheduled(pod: Obj) -> None:
    if not _get(pod, "spec", "nodeName"):
        raise bad_request(f"pod {pod_name(pod)} does not have a host assigned")


def check_running(pod: Obj, container: str) -> None:
    """exec and attach need a running container (kubelet's ``findContainer``)."""
    check_scheduled(pod)
    if not running(pod, container):
        raise StatusError(500, "InternalError", f'Internal error occurred: container not found ("{container}")')


def declared_ports(pod: Obj) -> set[int]:
    """The ports the pod's containers declare; a pod that declares none listens on 80."""
    ports = {p.get("containerPort") for c in containers(pod) for p in _dicts(c.get("ports"))}
    found = {p for p in ports if isinstance(p, int) and not isinstance(p, bool)}
    return found or {DEFAULT_PORT}


def sandbox_id(pod: Obj) -> str:
    """A stable pod sandbox id, as a container runtime would name the pod's network namespace."""
    return hashlib.sha256(f"sandbox/{pod_uid(pod)}".encode()).hexdigest()
