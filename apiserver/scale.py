"""The ``scale`` subresource's view of an object (an autoscaling/v1 Scale), as the API serves it and autoscalers
read it."""

from __future__ import annotations

from typing import Any

from apimachinery import kubejsonpath
from apiserver.resourcetypes import ResourceType, ScalePaths


def scale_of(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale the ``scale`` subresource serves for ``obj``: its replicas and pod selector."""
    paths = rtype.scale or ScalePaths()
    meta = obj["metadata"]
    if paths.label_selector:
        selector = kubejsonpath.first(obj, paths.label_selector) or ""
    else:
        match = (obj.get("spec") or {}).get("selector") or {}
        if not paths.selector_is_label_map:
            match = match.get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(match.items()))
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": kubejsonpath.first(obj, paths.spec_replicas) or 0},
        "status": {"replicas": kubejsonpath.first(obj, paths.status_replicas) or 0, "selector": selector},
    }
