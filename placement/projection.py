"""How a workload object must look in a cluster: what the space's server filled in is taken out.

The hub stores each object once; every destination gets this projection of it (computed once per
object revision and shared), so memory grows with objects, not objects times clusters.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import orjson

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_SERVER_METADATA = ("uid", "resourceVersion", "managedFields", "ownerReferences", "generation", "finalizers",
                    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                    "generateName")
_JOB_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name")


def project(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a syncer applies it: server-populated fields stripped (never mutates ``obj``)."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.setdefault("metadata", {})
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        annotations.pop("kubestellar.io/executing-count", None)
        if not annotations:
            meta.pop("annotations")
    kind = out.get("kind")
    spec = out.get("spec") if isinstance(out.get("spec"), dict) else None
    if kind == "Service" and spec is not None:
        # Each cluster allocates its own addresses and ports.
        for key in ("clusterIP", "clusterIPs", "healthCheckNodePort"):
            spec.pop(key, None)
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.pop("nodePort", None)
    elif kind == "Job" and spec is not None:
        # The selector and its labels are generated per cluster from the Job's uid there.
        spec.pop("selector", None)
        spec.pop("manualSelector", None)
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            for key in _JOB_LABELS:
                labels.pop(key, None)
    elif kind == "Namespace":
        out.pop("spec", None)  # spec.finalizers belong to the cluster
    return out


def content_digest(obj: dict[str, Any]) -> bytes:
    """A digest of what clusters get of ``obj``: equal for revisions that differ only in status or in what
    the server fills in (the hub writing reported status back makes such revisions)."""
    return hashlib.blake2b(orjson.dumps(project(obj), option=orjson.OPT_SORT_KEYS), digest_size=16).digest()
