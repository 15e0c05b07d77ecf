"""How the syncer treats one placed object, as annotations on the object in its space say.

- ``edge.kubestellar.io/downsync-overwrite: "false"`` — create-only: created when the cluster lacks it,
  never updated or corrected afterwards (the cluster's users own it from then on); re-created if deleted.
- ``spacehub.io/removal-policy: orphan`` — when the object is no longer desired, the syncer leaves it in
  the cluster and removes only its marks, so nothing deletes it later and nothing takes it for spacehub's.
- ``spacehub.io/adopt: "true"`` — an object the cluster already has without the syncer's marks is taken
  over (marked and applied). Without it, such an object is left alone and the apply fails with reason
  ``NotAdopted``, which the hub reports: a placement never silently overwrites what somebody else made.
- ``spacehub.io/retain-fields: "spec.replicas,metadata.annotations.x"`` — fields the cluster owns: the first
  create sends the space's values, later applies send the cluster's own, and changes there are not drift.
- ``spacehub.io/hpa-owns-replicas: "false"`` — opts out of the rule that an object a HorizontalPodAutoscaler
  in the cluster targets has ``spec.replicas`` retained (syncer/autoscalers.py).
- ``spacehub.io/drift-mode: ReportOnly`` — a change made in the cluster is reported (paths and field manager)
  but never put back; ``Correct`` (the default) puts it back.

Pure: reads an object's annotations, knows nothing about the cluster or the hub.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.dottedpaths import Path, PathError, parse_paths, split_list
from apimachinery.fieldownership import (
    DRIFT_MODE_ANNOTATION,
    DRIFT_MODES,
    HPA_OWNS_REPLICAS_ANNOTATION,
    RETAIN_ANNOTATION,
)

OVERWRITE_ANNOTATION = "edge.kubestellar.io/downsync-overwrite"
REMOVAL_ANNOTATION = "spacehub.io/removal-policy"
ADOPT_ANNOTATION = "spacehub.io/adopt"
NOT_ADOPTED = "NotAdopted"  # the reason of an apply refused because the cluster's object is not ours
INVALID_POLICY = "InvalidPolicy"  # the reason of an apply refused because a policy annotation does not parse


@dataclass(frozen=True)
class Policy:
    create_only: bool = False
    orphan: bool = False
    adopt: bool = False
    retain: tuple[Path, ...] = ()
    report_only: bool = False
    hpa_owns_replicas: bool = True
    problem: str | None = None  # a policy annotation that does not parse: the object is not applied


def policy_of(obj: Mapping[str, Any]) -> Policy:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    retain: tuple[Path, ...] = ()
    problem = None
    try:
        retain = parse_paths(split_list(str(annotations.get(RETAIN_ANNOTATION, ""))))
    except PathError as exc:
        problem = f"metadata.annotations[{RETAIN_ANNOTATION}]: {exc}"
    mode = str(annotations.get(DRIFT_MODE_ANNOTATION, "Correct"))
    if mode not in DRIFT_MODES:
        problem = f'metadata.annotations[{DRIFT_MODE_ANNOTATION}]: "{mode}" is not one of {", ".join(DRIFT_MODES)}'
    return Policy(create_only=str(annotations.get(OVERWRITE_ANNOTATION, "")).lower() == "false",
                  orphan=str(annotations.get(REMOVAL_ANNOTATION, "")).lower() == "orphan",
                  adopt=str(annotations.get(ADOPT_ANNOTATION, "")).lower() == "true",
                  retain=retain, report_only=mode == "ReportOnly",
                  hpa_owns_replicas=str(annotations.get(HPA_OWNS_REPLICAS_ANNOTATION, "")).lower() != "false",
                  problem=problem)


def not_adopted_message(kind: str, namespace: str, name: str) -> str:
    where = f"{namespace}/{name}" if namespace else name
    return (f"{kind} {where} already exists in the cluster and was not made by spacehub; it is left as it is "
            f"(annotate the object in its space {ADOPT_ANNOTATION}=true to take it over)")
