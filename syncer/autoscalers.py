"""Which objects a HorizontalPodAutoscaler in the cluster scales: their ``spec.replicas`` is the autoscaler's.

One watch of every HorizontalPodAutoscaler in the cluster, opened once the syncer holds an object that sets
``spec.replicas`` (those the syncer placed are HPAs in the cluster too, so a placed HPA counts as soon as it
is applied). The rule (README "Field ownership"): an object an HPA
targets (``spec.scaleTargetRef``: group of its apiVersion, kind, name, in the HPA's namespace) has
``spec.replicas`` retained, as if named in ``spacehub.io/retain-fields``, unless the object opts out with
``spacehub.io/hpa-owns-replicas: "false"``. The syncer hears of each target gained or lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from kubeclient.client import GVR, KubeClient
from kubeclient.reflector import Reflector, Reflectors

HPAS = GVR("autoscaling", "v2", "horizontalpodautoscalers")
Target = tuple[str, str, str, str]  # namespace, group, kind, name


def target_of(hpa: dict[str, Any]) -> Target | None:
    meta = hpa.get("metadata") or {}
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
        return None
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    return str(meta.get("namespace") or ""), group, str(ref["kind"]), str(ref["name"])


class Autoscalers:
    def __init__(self, client: KubeClient, owner: str, changed: Callable[[Target], None]) -> None:
        self.client = client
        self.owner = owner
        self.changed = changed  # told of each target that gained its first HPA or lost its last
        self.by_hpa: dict[tuple[str, str], Target] = {}  # (namespace, HPA name) -> what it scales
        self.counts: Counter[Target] = Counter()
        self.watches = Reflectors()

    def start(self) -> None:
        self.watches.ensure(HPAS, lambda: Reflector(self.client, HPAS, owner=self.owner, on_list=self._listed,
                                                    on_event=self._event))

    async def stop(self) -> None:
        await self.watches.stop()

    def scaled(self, namespace: str, group: str, kind: str, name: str) -> bool:
        return self.counts[(namespace, group, kind, name)] > 0

    def _listed(self, items: list[dict[str, Any]]) -> None:
        listed = {}
        for hpa in items:
            meta = hpa.get("metadata") or {}
            listed[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = target_of(hpa)
        for key in set(self.by_hpa) - set(listed):
            self._set(key, None)
        for key, target in listed.items():
            self._set(key, target)

    def _event(self, kind: str, hpa: dict[str, Any]) -> None:
        meta = hpa.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self._set(key, None if kind == "DELETED" else target_of(hpa))

    def _set(self, key: tuple[str, str], target: Target | None) -> None:
        before = self.by_hpa.get(key)
        if before == target:
            return
        if before is not None:
            self.counts[before] -= 1
            if self.counts[before] <= 0:
                del self.counts[before]
                self.changed(before)
        if target is None:
            self.by_hpa.pop(key, None)
            return
        self.by_hpa[key] = target
        self.counts[target] += 1
        if self.counts[target] == 1:
            self.changed(target)
