"""Which of a cluster's pods a space shows, and under which names.

A space shows the pods of the workloads it placed on that cluster: a pod's controller (its ownerReference
with ``controller: true``) is a ReplicaSet, StatefulSet, DaemonSet or Job the space placed there, or the
Deployment (CronJob) that made that ReplicaSet (Job), whose name is the owner's without its last
``-<suffix>``; a pod without a controller is shown if the space placed that very Pod.

Names: a pod keeps its name unless the space stores a Pod of that namespace and name (then every cluster's is
``<name>.<cluster>``: the stored one keeps the plain name), or pods of the same namespace and name are shown
from several clusters; then the one in the cluster first in name order keeps it and the others are
``<name>.<cluster>`` (still a DNS subdomain, so kubectl takes it as a name). Every rule here is pure: the
clusters and the store are asked elsewhere.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from placement.model import ObjectRef

CLUSTER_LABEL = "spacehub.io/cluster"
Obj = dict[str, Any]
IsDestination = Callable[[ObjectRef, str], bool]

# A controller's (group, kind) → the placed resource it is, and the resource of the object that names it.
_CONTROLLERS: dict[tuple[str, str], tuple[str, str]] = {
    ("apps", "ReplicaSet"): ("replicasets.apps", "deployments.apps"),
    ("apps", "StatefulSet"): ("statefulsets.apps", ""),
    ("apps", "DaemonSet"): ("daemonsets.apps", ""),
    ("batch", "Job"): ("jobs.batch", "cronjobs.batch"),
}


def _meta(pod: Any) -> Obj:
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    return meta if isinstance(meta, dict) else {}


def _controller(meta: Obj) -> Obj | None:
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def owned(space: str, cluster: str, pod: Any, is_destination: IsDestination) -> bool:
    """Whether ``space`` placed on ``cluster`` the workload that ``pod`` (of that cluster) belongs to."""
    meta = _meta(pod)
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    controller = _controller(meta)
    if controller is None:
        return bool(name) and is_destination(ObjectRef(space, "pods", namespace, name), cluster)
    api_version = str(controller.get("apiVersion") or "")
    group = api_version.partition("/")[0] if "/" in api_version else ""
    resources = _CONTROLLERS.get((group, str(controller.get("kind") or "")))
    owner = str(controller.get("name") or "")
    if resources is None or not owner:
        return False
    resource, maker = resources
    if is_destination(ObjectRef(space, resource, namespace, owner), cluster):
        return True
    made_by, dash, _suffix = owner.rpartition("-")
    return bool(maker and dash and made_by) and is_destination(ObjectRef(space, maker, namespace, made_by), cluster)


def present(found: Iterable[tuple[str, Obj]], stored: Collection[tuple[str, str]] = ()) -> list[Obj]:
    """The shown pods of (cluster, pod) pairs: copies labelled with their cluster and named by the rule above
    (``stored``: the (namespace, name) of the space's stored Pods), in kube's list order (namespace, then
    name)."""
    pairs = sorted(found, key=lambda pair: (str(_meta(pair[1]).get("namespace") or ""),
                                            str(_meta(pair[1]).get("name") or ""), pair[0]))
    first: dict[tuple[str, str], str] = {}
    shown: list[Obj] = []
    for cluster, pod in pairs:
        meta = _meta(pod)
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        keeper = "" if key in stored else first.setdefault(key, cluster)
        shown.append(labelled(cluster, pod, key[1] if keeper == cluster else f"{key[1]}.{cluster}"))
    shown.sort(key=lambda pod: (str(_meta(pod).get("namespace") or ""), str(_meta(pod).get("name") or "")))
    return shown


def labelled(cluster: str, pod: Obj, name: str) -> Obj:
    """``pod`` as a space shows it: named ``name``, with the label of its cluster."""
    out = dict(pod)
    meta = copy.copy(_meta(pod))
    labels = meta.get("labels")
    meta["labels"] = {**(labels if isinstance(labels, dict) else {}), CLUSTER_LABEL: cluster}
    meta["name"] = name
    out["metadata"] = meta
    return out


def real_names(shown: str, clusters: Sequence[str]) -> list[str]:
    """The names a shown name may stand for in the clusters: itself, and ``<name>`` for ``<name>.<cluster>``
    when that cluster is one of ``clusters``."""
    name, dot, cluster = shown.rpartition(".")
    return [shown, name] if dot and name and cluster in clusters else [shown]


def resolve(shown: str, holders: Mapping[str, Sequence[str]], stored: Collection[str] = ()) -> tuple[str, str] | None:
    """(cluster, real name) of the pod shown as ``shown``, given for each of its :func:`real_names` the
    clusters that have a shown pod of that name (in that namespace) and the names of the space's stored Pods
    there; None: no cluster's pod is shown so. A real name wins over a ``<name>.<cluster>`` that would spell
    the same."""
    clusters = sorted(holders.get(shown, ()))
    if clusters and shown not in stored:
        return clusters[0], shown
    name, dot, cluster = shown.rpartition(".")
    holding = sorted(holders.get(name, ()))
    if dot and cluster in (holding if name in stored else holding[1:]):
        return cluster, name
    return None
