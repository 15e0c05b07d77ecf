"""Which fields of each object the syncer holds its cluster owns (README "Field ownership and drift").

The object's ``retainFields`` (its annotation, which the hub also sets from downsync tests) and, while a
HorizontalPodAutoscaler in the cluster scales it (``syncer/autoscalers.py``), ``spec.replicas`` unless the
object opts out. Such fields are sent as the cluster has them, left out of the drift check, and their
cluster values are reported. Knows nothing about the hub; reads the cluster only through the HPA index.
"""

from __future__ import annotations

from typing import Any

from apimachinery.dottedpaths import Path, format_path, value_at, with_values
from syncer.autoscalers import Autoscalers
from syncer.held import Held
from syncer.policies import policy_of

REPLICAS: Path = ("spec", "replicas")


class FieldOwners:
    def __init__(self, autoscalers: Autoscalers) -> None:
        self.autoscalers = autoscalers

    def retained(self, held: Held) -> tuple[Path, ...]:
        """The fields the cluster owns: the object's retainFields, and spec.replicas while an HPA scales it."""
        policy = policy_of(held.applied)
        kind = str(held.entry.get("kind") or "")
        if policy.hpa_owns_replicas and REPLICAS not in policy.retain \
                and self.autoscalers.scaled(held.namespace, held.gvr.group, kind, held.name):
            return (*policy.retain, REPLICAS)
        return policy.retain

    def note(self, held: Held, live: dict[str, Any]) -> None:
        """The cluster's values of the fields it owns, reported with the status (absent fields left out)."""
        values = {format_path(path): found[1] for path in self.retained(held)
                  if (found := value_at(live, path))[0]}
        held.retained = values or None

    def compared(self, held: Held) -> dict[str, Any]:
        """What drift is judged on: what the syncer applies without the fields the cluster owns."""
        retain = self.retained(held)
        held.judged_without = retain
        return with_values(held.applied, retain, {}) if retain else held.applied

    def basis_changed(self, held: Held) -> bool:
        """Whether an HPA came or went since drift was last judged (then the object is applied again, no drift)."""
        return held.judged_without is not None and held.judged_without != self.retained(held)
