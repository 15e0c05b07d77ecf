"""What a workload object references in its own namespace: the objects ``dependencies: Follow`` sends with it.

Owns the reading of one object's content: the pod template of the kinds that have one (where it sits in
each), the ConfigMaps, Secrets, PersistentVolumeClaims and ServiceAccount a pod spec names, the Secrets a
ServiceAccount names, the labels a pod template gives its pods and the selector of a Service. Pure: never
keeps state and never does I/O; the reference graph (:mod:`placement.dependencies`) links what these name.

A ServiceAccount left unnamed is the namespace's ``default`` one, which every cluster creates itself, so only
a named one is a reference. A reference marked ``optional`` still counts: when the object exists it is sent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

CONFIGMAPS, SECRETS, CLAIMS, SERVICE_ACCOUNTS = "configmaps", "secrets", "persistentvolumeclaims", "serviceaccounts"
SERVICES = "services"

# Where each kind keeps its pod template (by resource, so a kind of the same name in another group is not read).
POD_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "deployments.apps": ("spec", "template"),
    "replicasets.apps": ("spec", "template"),
    "statefulsets.apps": ("spec", "template"),
    "daemonsets.apps": ("spec", "template"),
    "jobs.batch": ("spec", "template"),
    "cronjobs.batch": ("spec", "jobTemplate", "spec", "template"),
    "replicationcontrollers": ("spec", "template"),
    "podtemplates": ("template",),
    "pods": (),  # a Pod is its own template
}

# How a referrer uses what it references (the explain view says "… mounts it").
MOUNTS, ENV, PULLS, RUNS_AS, CLAIMS_IT = "mounts", "takes environment from", "pulls images with", "runs as", "claims"


@dataclass(frozen=True, order=True)
class Reference:
    """One object of the referrer's namespace that it uses, and how."""

    resource: str
    name: str
    how: str


Labels = tuple[tuple[str, str], ...]


def pod_template(resource: str, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod template of a kind that has one (``metadata`` and ``spec``), else None."""
    path = POD_TEMPLATE_PATHS.get(resource)
    if path is None:
        return None
    node: Any = obj
    for step in path:
        node = node.get(step) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def pod_labels(resource: str, obj: Mapping[str, Any]) -> Labels | None:
    """The labels the object's pods get (what a Service selecting them matches), None without a pod template."""
    template = pod_template(resource, obj)
    if template is None:
        return None
    return tuple(sorted((str(k), str(v)) for k, v in _map(_map(template.get("metadata")).get("labels")).items()))


def service_selector(resource: str, obj: Mapping[str, Any]) -> Labels | None:
    """A Service's ``spec.selector`` (None for other objects, and for a Service without one: it selects no pod)."""
    if resource != SERVICES:
        return None
    selector = _map(_map(obj.get("spec")).get("selector"))
    return tuple(sorted((str(k), str(v)) for k, v in selector.items())) or None


def references(resource: str, obj: Mapping[str, Any]) -> tuple[Reference, ...]:
    """The objects of its namespace that ``obj`` (of ``resource``) references, sorted and without repeats."""
    if resource == SERVICE_ACCOUNTS:
        found = set(_named(obj.get("imagePullSecrets"), SECRETS, PULLS))
        found.update(_named(obj.get("secrets"), SECRETS, MOUNTS))
        return tuple(sorted(found))
    template = pod_template(resource, obj)
    if template is None:
        return ()
    return tuple(sorted(set(_pod_spec_references(_map(template.get("spec"))))))


def _pod_spec_references(spec: Mapping[str, Any]) -> Iterator[Reference]:
    for volume in _maps(spec.get("volumes")):
        yield from _named([volume.get("configMap")], CONFIGMAPS, MOUNTS)
        secret = _map(volume.get("secret"))
        if secret.get("secretName"):
            yield Reference(SECRETS, str(secret["secretName"]), MOUNTS)
        claim = _map(volume.get("persistentVolumeClaim"))
        if claim.get("claimName"):
            yield Reference(CLAIMS, str(claim["claimName"]), CLAIMS_IT)
        for source in _maps(_map(volume.get("projected")).get("sources")):
            yield from _named([source.get("configMap")], CONFIGMAPS, MOUNTS)
            yield from _named([source.get("secret")], SECRETS, MOUNTS)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in _maps(spec.get(key)):
            for env in _maps(container.get("env")):
                value_from = _map(env.get("valueFrom"))
                yield from _named([value_from.get("configMapKeyRef")], CONFIGMAPS, ENV)
                yield from _named([value_from.get("secretKeyRef")], SECRETS, ENV)
            for env_from in _maps(container.get("envFrom")):
                yield from _named([env_from.get("configMapRef")], CONFIGMAPS, ENV)
                yield from _named([env_from.get("secretRef")], SECRETS, ENV)
    yield from _named(spec.get("imagePullSecrets"), SECRETS, PULLS)
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")  # the latter: its deprecated alias
    if isinstance(account, str) and account:
        yield Reference(SERVICE_ACCOUNTS, account, RUNS_AS)


def _named(items: Any, resource: str, how: str) -> Iterator[Reference]:
    """A Reference for each ``{name: …}`` of a list (a LocalObjectReference and its kin)."""
    for item in _maps(items):
        name = item.get("name")
        if isinstance(name, str) and name:
            yield Reference(resource, name, how)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _maps(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []
