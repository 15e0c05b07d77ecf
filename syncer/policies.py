"""How the syncer treats one placed object, as annotations on the object in its space say.

- ``edge.kubestellar.io/downsync-overwrite: "false"`` — create-only: created when the cluster lacks it,
  never updated or corrected afterwards (the cluster's users own it from then on); re-created if deleted.
- ``spacehub.io/removal-policy: orphan`` — when the object is no longer desired, the syncer leaves it in
  the cluster and removes only its marks, so nothing deletes it later and nothing takes it for spacehub's.
- ``spacehub.io/adopt: "true"`` — an object the cluster already has without the syncer's marks is taken
  over (marked and applied). Without it, such an object is left alone and the apply fails with reason
  ``NotAdopted``, which the hub reports: a placement never silently overwrites what somebody else made.

Pure: reads an object's annotations, knows nothing about the cluster or the hub.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OVERWRITE_ANNOTATION = "edge.kubestellar.io/downsync-overwrite"
REMOVAL_ANNOTATION = "spacehub.io/removal-policy"
ADOPT_ANNOTATION = "spacehub.io/adopt"
NOT_ADOPTED = "NotAdopted"  # the reason of an apply refused because the cluster's object is not ours


@dataclass(frozen=True)
class Policy:
    create_only: bool = False
    orphan: bool = False
    adopt: bool = False


def policy_of(obj: Mapping[str, Any]) -> Policy:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return Policy(create_only=str(annotations.get(OVERWRITE_ANNOTATION, "")).lower() == "false",
                  orphan=str(annotations.get(REMOVAL_ANNOTATION, "")).lower() == "orphan",
                  adopt=str(annotations.get(ADOPT_ANNOTATION, "")).lower() == "true")


def not_adopted_message(kind: str, namespace: str, name: str) -> str:
    where = f"{namespace}/{name}" if namespace else name
    return (f"{kind} {where} already exists in the cluster and was not made by spacehub; it is left as it is "
            f"(annotate the object in its space {ADOPT_ANNOTATION}=true to take it over)")
