"""What a command run in a simulated container sees: its environment and a few files.

The environment is what kubelet and a typical image give a process: ``PATH``, ``HOSTNAME`` (the pod's
hostname), the container's ``envFrom`` and ``env`` (literal values, ``fieldRef``, ``configMapKeyRef``,
``secretKeyRef``), the ``KUBERNETES_SERVICE_*`` variables and ``HOME``. The files are ``/etc/hostname``,
``/etc/hosts``, ``/etc/resolv.conf``, ``/etc/spacehub-cluster`` (the cluster's name), the service account's
``namespace``, and the keys of the ConfigMap and Secret volumes the container mounts.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sim.streams.targets import Obj, container_spec, pod_name

Lookup = Callable[[str, str, str], Awaitable[Obj | None]]  # (resource "configmaps"|"secrets", namespace, name)
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_LABEL_REF = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


@dataclass
class ContainerView:
    cluster: str
    pod: Obj
    container: str
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def hostname(self) -> str:
        return str((self.pod.get("spec") or {}).get("hostname") or pod_name(self.pod))


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _dicts(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _field(pod: Obj, path: str) -> str:
    match = _LABEL_REF.match(path)
    if match:
        return str(_get(pod, "metadata", match.group(1), match.group(2)) or "")
    value = _get(pod, *path.split("."))
    return "" if value is None or isinstance(value, dict | list) else str(value)


def _data(obj: Obj | None, secret: bool) -> dict[str, bytes]:
    """A ConfigMap's data and binaryData, or a Secret's data, as bytes."""
    out: dict[str, bytes] = {}
    if obj is None:
        return out
    for key, value in (obj.get("data") or {}).items():
        if not isinstance(value, str):
            continue
        if secret:
            try:
                out[key] = base64.b64decode(value)
            except (binascii.Error, ValueError):
                continue
        else:
            out[key] = value.encode()
    if not secret:
        for key, value in (obj.get("binaryData") or {}).items():
            try:
                out[key] = base64.b64decode(value)
            except (binascii.Error, ValueError, TypeError):
                continue
    return out


async def _source(lookup: Lookup, namespace: str, ref: Any, secret: bool) -> dict[str, bytes]:
    name = _get(ref, "name")
    if not isinstance(name, str) or not name:
        return {}
    return _data(await lookup("secrets" if secret else "configmaps", namespace, name), secret)


async def _environment(pod: Obj, spec: Obj, namespace: str, hostname: str, lookup: Lookup) -> dict[str, str]:
    env = {"PATH": PATH, "HOSTNAME": hostname}
    for source in _dicts(spec.get("envFrom")):
        prefix = str(source.get("prefix") or "")
        for ref_key, secret in (("configMapRef", False), ("secretRef", True)):
            if ref_key in source:
                for key, value in (await _source(lookup, namespace, source[ref_key], secret)).items():
                    env[prefix + key] = value.decode(errors="replace")
    for var in _dicts(spec.get("env")):
        name = var.get("name")
        if not isinstance(name, str) or not name:
            continue
        value_from = var.get("valueFrom")
        if not isinstance(value_from, dict):
            env[name] = str(var.get("value") or "")
        elif "fieldRef" in value_from:
            env[name] = _field(pod, str(_get(value_from, "fieldRef", "fieldPath") or ""))
        else:
            for ref_key, secret in (("configMapKeyRef", False), ("secretKeyRef", True)):
                ref = value_from.get(ref_key)
                if isinstance(ref, dict):
                    found = (await _source(lookup, namespace, ref, secret)).get(str(ref.get("key")))
                    if found is not None:
                        env[name] = found.decode(errors="replace")
    env.update(KUBERNETES_SERVICE_HOST="10.96.0.1", KUBERNETES_SERVICE_PORT="443",
               KUBERNETES_SERVICE_PORT_HTTPS="443", KUBERNETES_PORT="tcp://10.96.0.1:443", HOME="/root")
    return env


async def _volume_files(pod: Obj, spec: Obj, namespace: str, lookup: Lookup) -> dict[str, bytes]:
    volumes = {v.get("name"): v for v in _dicts(_get(pod, "spec", "volumes"))}
    files: dict[str, bytes] = {}
    for mount in _dicts(spec.get("volumeMounts")):
        volume = volumes.get(mount.get("name")) or {}
        path = str(mount.get("mountPath") or "").rstrip("/")
        for kind, secret in (("configMap", False), ("secret", True)):
            source = volume.get(kind)
            if not isinstance(source, dict) or not path:
                continue
            ref = {"name": source.get("secretName")} if secret else source
            data = await _source(lookup, namespace, ref, secret)
            items = {i.get("key"): i.get("path") for i in _dicts(source.get("items"))}
            keys = {key: items[key] for key in data if key in items} if items else {key: key for key in data}
            sub = str(mount.get("subPath") or "")
            for key, rel in keys.items():
                if sub:
                    if rel == sub:
                        files[path] = data[key]
                else:
                    files[f"{path}/{rel}"] = data[key]
    return files


async def container_view(cluster: str, pod: Obj, container: str, lookup: Lookup) -> ContainerView:
    spec = container_spec(pod, container)
    namespace = str(_get(pod, "metadata", "namespace") or "default")
    view = ContainerView(cluster, pod, container)
    hostname = view.hostname
    view.env = await _environment(pod, spec, namespace, hostname, lookup)
    ip = str(_get(pod, "status", "podIP") or "")
    view.files = {
        "/etc/hostname": f"{hostname}\n".encode(),
        "/etc/hosts": (f"# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost "
                       f"ip6-loopback\n{ip}\t{hostname}\n").encode(),
        "/etc/resolv.conf": (f"search {namespace}.svc.cluster.local svc.cluster.local cluster.local\n"
                             "nameserver 10.96.0.10\noptions ndots:5\n").encode(),
        "/etc/spacehub-cluster": f"{cluster}\n".encode(),
        f"{SERVICE_ACCOUNT_DIR}/namespace": namespace.encode(),
        **await _volume_files(pod, spec, namespace, lookup),
    }
    return view
