"""StatefulSets: pods ``<name>-<ordinal>`` with stable identities, ordered or parallel, and rolling updates.

Pods carry ``controller-revision-hash: <name>-<hash of the template>``,
``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index``, hostname and subdomain.
``OrderedReady`` creates one ordinal at a time once every lower one is Ready and removes surplus
pods from the highest ordinal down; ``Parallel`` does both at once. Finished pods are replaced. A
``RollingUpdate`` replaces pods of an older revision from the highest ordinal down to ``partition``,
one at a time, while every pod is Ready; ``OnDelete`` leaves that to the user. Status reports
``replicas``, ``readyReplicas``, ``availableReplicas``, ``currentReplicas``, ``updatedReplicas``,
``currentRevision``/``updateRevision`` (equal once a rollout is complete, which ``kubectl rollout status``
waits for) and ``observedGeneration``. Volume claim templates are not turned into claims.
"""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.store import Key
from sim.controllers.base import BURST, Context, Controller
from sim.controllers.cache import PODS, STATEFULSETS
from sim.controllers.util import (
    REVISION_HASH,
    Obj,
    as_int,
    available_in,
    deleting,
    generation,
    get,
    labels,
    meta,
    omit_zero,
    ordinal_of,
    pod_active,
    pod_ready,
    template_hash,
)

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


class StatefulSetController(Controller):
    watches = (STATEFULSETS, PODS)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "statefulsets")

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if key.resource == STATEFULSETS:
            if new is not None:
                self.add(key)
            return
        self.enqueue_owner(key, new or old or {}, "StatefulSet", STATEFULSETS)

    def _pods(self, sts: Obj) -> dict[int, tuple[Key, Obj]]:
        name = str(meta(sts).get("name"))
        out: dict[int, tuple[Key, Obj]] = {}
        for key, pod in self.cache.owned(sts, PODS):
            ordinal = ordinal_of(key.name, name)
            if ordinal is not None:
                out[ordinal] = (key, pod)
        return out

    async def handle(self, key: Any) -> bool:
        sts = self.cache.get(key)
        if sts is None or deleting(sts):
            return False
        spec = sts.get("spec") or {}
        name = key.name
        revision = f"{name}-{template_hash(spec.get('template'))}"
        parallel = spec.get("podManagementPolicy") == "Parallel"
        start = as_int(get(spec, "ordinals", "start"))
        wanted = range(start, start + as_int(spec.get("replicas"), 1))
        pods = self._pods(sts)
        finished = [k for k, p in pods.values() if not pod_active(p) and not deleting(p)]
        condemned = sorted((o for o in pods if o not in wanted), reverse=True)
        changed = bool(finished or condemned)
        await self.delete_all(finished)
        if condemned:
            if parallel:
                await self.delete_all(pods[o][0] for o in condemned)
            else:
                for ordinal in condemned:
                    await self.delete(pods[ordinal][0])
        pods = self._pods(sts)
        missing = []
        for ordinal in wanted:
            if ordinal in pods:
                if not parallel and not pod_ready(pods[ordinal][1]):
                    break
                continue
            missing.append(ordinal)
            if not parallel:
                break
        if missing and self.namespace_active(key.space, key.namespace):
            changed = True
            await asyncio.gather(*(self._create(key, sts, revision, o) for o in missing[:BURST]))
        if not changed and get(spec, "updateStrategy", "type") != "OnDelete":
            await self._roll(pods, wanted, revision, as_int(get(spec, "updateStrategy", "rollingUpdate", "partition")))
        sts = self.cache.get(key) or sts
        status, recheck = self._status(sts, revision)
        await self.write_status(key, sts, status)
        if recheck is not None:
            self.add_after(key, recheck)
        return False

    async def _create(self, key: Key, sts: Obj, revision: str, ordinal: int) -> None:
        spec = sts.get("spec") or {}
        pod_name = f"{key.name}-{ordinal}"
        patch: Obj = {"hostname": pod_name}
        if spec.get("serviceName"):
            patch["subdomain"] = spec["serviceName"]
        await self.create_pod(key.space, sts, spec.get("template"), name=pod_name, spec_patch=patch,
                              labels={REVISION_HASH: revision, POD_NAME_LABEL: pod_name, POD_INDEX_LABEL: str(ordinal)})

    async def _roll(self, pods: dict[int, tuple[Key, Obj]], wanted: range, revision: str, partition: int) -> None:
        """Replace the highest outdated pod once every wanted pod exists and is Ready."""
        if any(o not in pods or not pod_ready(pods[o][1]) for o in wanted):
            return
        for ordinal in sorted(wanted, reverse=True):
            if ordinal < partition:
                break
            pod_key, pod = pods[ordinal]
            if labels(pod).get(REVISION_HASH) != revision:
                await self.delete(pod_key)
                return

    def _status(self, sts: Obj, revision: str) -> tuple[Obj, float | None]:
        pods = [p for _, p in self._pods(sts).values() if pod_active(p)]
        waits = [w for w in (available_in(p, as_int(get(sts, "spec", "minReadySeconds"))) for p in pods)
                 if w is not None]
        ready = len(waits)
        available = sum(1 for w in waits if w == 0)
        current_revision = get(sts, "status", "currentRevision") or revision
        updated = sum(1 for p in pods if labels(p).get(REVISION_HASH) == revision)
        current = sum(1 for p in pods if labels(p).get(REVISION_HASH) == current_revision)
        if updated == len(pods) and ready == len(pods):
            current_revision, current = revision, updated
        status = {"observedGeneration": generation(sts), "replicas": len(pods), "readyReplicas": ready,
                  "currentReplicas": current, "updatedReplicas": updated, "currentRevision": current_revision,
                  "updateRevision": revision, "collisionCount": as_int(get(sts, "status", "collisionCount")),
                  "availableReplicas": available}
        pending = [w for w in waits if w > 0]
        return omit_zero(status, "readyReplicas", "currentReplicas", "updatedReplicas"), min(pending, default=None)
