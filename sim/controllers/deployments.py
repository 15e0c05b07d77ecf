"""Deployments: ReplicaSets per pod template, rolling updates and recreates, and status.

Follows kube's deployment controller: the ReplicaSet of the current template is
``<deployment>-<pod-template-hash>`` (FNV hash of the template, upstream's encoding), labelled with
``pod-template-hash``, owned by the Deployment and annotated with its revision (also written to the
Deployment, so ``kubectl rollout history|undo`` work). ``RollingUpdate`` scales the new ReplicaSet up
within ``maxSurge`` and old ones down within ``maxUnavailable`` (unhealthy replicas first, then oldest
ReplicaSets first); ``Recreate`` scales old ReplicaSets to zero, waits for their pods to go, then
scales the new one up. A paused Deployment only has its status kept current. Status counts, the
``Available`` and ``Progressing`` conditions and their reasons and messages are upstream's; old
ReplicaSets beyond ``revisionHistoryLimit`` are deleted once a rollout is complete.
"""

from __future__ import annotations

import copy
from typing import Any

from apiserver.store import Key
from sim.controllers.base import Context, Controller
from sim.controllers.cache import DEPLOYMENTS, PODS, REPLICASETS
from sim.controllers.util import (
    POD_TEMPLATE_HASH,
    Obj,
    as_int,
    condition,
    deleting,
    fenceposts,
    generation,
    get,
    labels,
    meta,
    new_condition,
    omit_zero,
    owner_ref,
    pod_active,
    set_condition,
    template_hash,
)

REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"


def _replicas(rs: Obj) -> int:
    return as_int(get(rs, "spec", "replicas"))


def _status_count(rs: Obj, field: str) -> int:
    return as_int(get(rs, "status", field))


def _revision(rs: Obj) -> int:
    value = get(rs, "metadata", "annotations", REVISION)
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def _created(rs: Obj) -> str:
    return str(get(rs, "metadata", "creationTimestamp") or "")


class DeploymentController(Controller):
    watches = (DEPLOYMENTS, REPLICASETS)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "deployments")

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if key.resource == DEPLOYMENTS:
            if new is not None:
                self.add(key)
            return
        self.enqueue_owner(key, new or old or {}, "Deployment", DEPLOYMENTS)

    def _replica_sets(self, d: Obj, pod_hash: str) -> tuple[Obj | None, list[Obj]]:
        owned = [rs for _, rs in self.cache.owned(d, REPLICASETS)]
        new_rs = next((rs for rs in owned if labels(rs).get(POD_TEMPLATE_HASH) == pod_hash and not deleting(rs)),
                      None)
        olds = sorted((rs for rs in owned if rs is not new_rs), key=_created)
        return new_rs, olds

    async def handle(self, key: Any) -> bool:
        d = self.cache.get(key)
        if d is None or deleting(d):
            return False
        spec = d.get("spec") or {}
        desired = as_int(spec.get("replicas"), 1)
        rolling = get(spec, "strategy", "type") != "Recreate"
        surge, unavailable = fenceposts(get(spec, "strategy", "rollingUpdate"), desired) if rolling else (0, 0)
        pod_hash = template_hash(spec.get("template"))
        new_rs, olds = self._replica_sets(d, pod_hash)
        conditions = list(get(d, "status", "conditions") or [])
        paused = spec.get("paused") is True
        if new_rs is None and not paused:
            if not self.namespace_active(key.space, key.namespace):
                return False
            new_rs, created = await self._create_replica_set(key, d, pod_hash, olds, desired, surge)
            if new_rs is None:
                return True
            if created and isinstance(spec.get("progressDeadlineSeconds"), int):
                conditions = set_condition(conditions, new_condition(
                    "Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{meta(new_rs)["name"]}"',
                    update_time=True))
        if new_rs is not None:
            new_rs = await self._sync_revision(key, d, new_rs, olds)
        if new_rs is not None and not paused:
            if rolling:
                await self._roll(key.space, new_rs, olds, desired, surge, unavailable)
            else:
                await self._recreate(key.space, new_rs, olds, desired)
            new_rs, olds = self._replica_sets(d, pod_hash)
            if new_rs is not None and not any(_replicas(rs) or _status_count(rs, "replicas") for rs in olds):
                await self._clean_history(key.space, olds, spec.get("revisionHistoryLimit"))
        d = self.cache.get(key) or d
        new_rs, olds = self._replica_sets(d, pod_hash)
        await self.write_status(key, d, self._status(d, new_rs, olds, conditions, desired,
                                                     min(unavailable, desired) if rolling and desired else 0))
        return False

    # --- replica sets -------------------------------------------------------------------------------

    async def _create_replica_set(self, key: Key, d: Obj, pod_hash: str, olds: list[Obj], desired: int,
                                  surge: int) -> tuple[Obj | None, bool]:
        spec = d.get("spec") or {}
        name = f"{meta(d)['name']}-{pod_hash}"
        template = copy.deepcopy(spec.get("template")) if isinstance(spec.get("template"), dict) else {}
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), POD_TEMPLATE_HASH: pod_hash}
        selector = copy.deepcopy(spec.get("selector")) if isinstance(spec.get("selector"), dict) else {}
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH: pod_hash}
        if get(spec, "strategy", "type") == "Recreate":
            replicas = 0 if any(_replicas(rs) for rs in olds) else desired
        else:
            replicas = max(0, min(desired, desired + surge - sum(_replicas(rs) for rs in olds)))
        revision = max((_revision(rs) for rs in olds), default=0) + 1
        rs = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": key.namespace, "labels": dict(template_meta["labels"]),
                         "annotations": {REVISION: str(revision), DESIRED_REPLICAS: str(desired),
                                         MAX_REPLICAS: str(desired + surge)},
                         "ownerReferences": [owner_ref(d)]},
            "spec": {"replicas": replicas, "minReadySeconds": as_int(spec.get("minReadySeconds")),
                     "selector": selector, "template": template},
        }
        created = await self.create(key.space, REPLICASETS, key.namespace, rs)
        if created is not None:
            return self.cache.get(Key(key.space, REPLICASETS, key.namespace, name)) or created, True
        existing = self.cache.get(Key(key.space, REPLICASETS, key.namespace, name))
        ref = (get(existing, "metadata", "ownerReferences") or [{}])[0] if existing else {}
        if existing is not None and ref.get("uid") == meta(d).get("uid"):
            return existing, False
        return None, False

    async def _sync_revision(self, key: Key, d: Obj, new_rs: Obj, olds: list[Obj]) -> Obj:
        """A ReplicaSet that becomes current again (a rollback) takes the next revision, as upstream; the
        Deployment carries the revision of its current ReplicaSet."""
        newest = max((_revision(rs) for rs in olds), default=0)
        if _revision(new_rs) <= newest:
            bumped = str(newest + 1)

            def bump(obj: Obj) -> Obj:
                obj.setdefault("metadata", {}).setdefault("annotations", {})[REVISION] = bumped
                return obj

            new_rs = await self.update(self._key(key.space, new_rs), bump) or new_rs
        revision = get(new_rs, "metadata", "annotations", REVISION)
        if revision and get(d, "metadata", "annotations", REVISION) != revision:
            def annotate(obj: Obj) -> Obj:
                obj.setdefault("metadata", {}).setdefault("annotations", {})[REVISION] = revision
                return obj

            await self.update(key, annotate)
        return new_rs

    def _key(self, space: str, rs: Obj) -> Key:
        return Key(space, REPLICASETS, str(meta(rs).get("namespace", "")), str(meta(rs).get("name", "")))

    async def _scale(self, space: str, rs: Obj, replicas: int, desired: int, surge: int) -> None:
        def scale(obj: Obj) -> Obj:
            obj.setdefault("spec", {})["replicas"] = replicas
            annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
            annotations[DESIRED_REPLICAS] = str(desired)
            annotations[MAX_REPLICAS] = str(desired + surge)
            return obj

        await self.update(self._key(space, rs), scale)

    async def _roll(self, space: str, new_rs: Obj, olds: list[Obj], desired: int, surge: int,
                    unavailable: int) -> None:
        """One step of ``rolloutRolling``: scale the new ReplicaSet up, or old ones down."""
        current_new = _replicas(new_rs)
        if current_new > desired:
            await self._scale(space, new_rs, desired, desired, surge)
            return
        if current_new < desired:
            room = desired + surge - (current_new + sum(_replicas(rs) for rs in olds))
            if room > 0:
                await self._scale(space, new_rs, current_new + min(room, desired - current_new), desired, surge)
                return
        if not any(_replicas(rs) for rs in olds):
            return
        min_available = desired - unavailable
        all_pods = _replicas(new_rs) + sum(_replicas(rs) for rs in olds)
        new_unavailable = _replicas(new_rs) - _status_count(new_rs, "availableReplicas")
        max_down = all_pods - min_available - new_unavailable
        if max_down <= 0:
            return
        remaining = {id(rs): _replicas(rs) for rs in olds}
        for rs in olds:  # unhealthy replicas first: they would otherwise block the rollout
            if max_down <= 0:
                break
            unhealthy = remaining[id(rs)] - _status_count(rs, "availableReplicas")
            if unhealthy <= 0:
                continue
            down = min(max_down, unhealthy)
            remaining[id(rs)] -= down
            max_down -= down
        available = _status_count(new_rs, "availableReplicas") + sum(
            min(_status_count(rs, "availableReplicas"), remaining[id(rs)]) for rs in olds)
        budget = available - min_available
        for rs in olds:  # then by availability, oldest first
            if budget <= 0:
                break
            down = min(remaining[id(rs)], budget)
            remaining[id(rs)] -= down
            budget -= down
        for rs in olds:
            if remaining[id(rs)] != _replicas(rs):
                await self._scale(space, rs, remaining[id(rs)], desired, surge)

    async def _recreate(self, space: str, new_rs: Obj, olds: list[Obj], desired: int) -> None:
        active_olds = [rs for rs in olds if _replicas(rs)]
        for rs in active_olds:
            await self._scale(space, rs, 0, desired, 0)
        if active_olds or any(pod_active(p) for rs in olds for _, p in self.cache.owned(rs, PODS)):
            return
        if _replicas(new_rs) != desired:
            await self._scale(space, new_rs, desired, desired, 0)

    async def _clean_history(self, space: str, olds: list[Obj], limit: Any) -> None:
        keep = as_int(limit, 10)
        idle = sorted((rs for rs in olds if not _replicas(rs) and not _status_count(rs, "replicas")), key=_revision)
        for rs in idle[:max(0, len(idle) - keep)]:
            await self.delete(self._key(space, rs))

    # --- status ---------------------------------------------------------------------------------------

    def _status(self, d: Obj, new_rs: Obj | None, olds: list[Obj], conditions: list[Obj], desired: int,
                max_unavailable: int) -> Obj:
        every = ([new_rs] if new_rs is not None else []) + olds
        available = sum(_status_count(rs, "availableReplicas") for rs in every)
        status: Obj = {
            "observedGeneration": generation(d),
            "replicas": sum(_status_count(rs, "replicas") for rs in every),
            "updatedReplicas": _status_count(new_rs, "replicas") if new_rs is not None else 0,
            "readyReplicas": sum(_status_count(rs, "readyReplicas") for rs in every),
            "availableReplicas": available,
            "unavailableReplicas": max(0, sum(_replicas(rs) for rs in every) - available),
        }
        if available >= desired - max_unavailable:
            conditions = set_condition(conditions, new_condition(
                "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.",
                update_time=True))
        else:
            conditions = set_condition(conditions, new_condition(
                "Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.",
                update_time=True))
        if isinstance(get(d, "spec", "progressDeadlineSeconds"), int):
            conditions = self._progressing(d, new_rs, status, conditions, desired)
        else:
            conditions = [c for c in conditions if c.get("type") != "Progressing"]
        omit_zero(status, "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
        if get(d, "status", "collisionCount") is not None:
            status["collisionCount"] = get(d, "status", "collisionCount")
        status["conditions"] = conditions
        return status

    @staticmethod
    def _progressing(d: Obj, new_rs: Obj | None, status: Obj, conditions: list[Obj], desired: int) -> list[Obj]:
        """``syncRolloutStatus``'s Progressing condition (without a deadline: nothing times out here)."""
        current = condition(d, "Progressing")
        if status["replicas"] == status["updatedReplicas"] and current is not None and \
                current.get("reason") == "NewReplicaSetAvailable":
            return conditions
        what = f'ReplicaSet "{meta(new_rs)["name"]}"' if new_rs is not None else f'Deployment "{meta(d)["name"]}"'
        old = d.get("status") if isinstance(d.get("status"), dict) else {}
        complete = (status["updatedReplicas"] == desired and status["replicas"] == desired
                    and status["availableReplicas"] == desired and status["observedGeneration"] >= generation(d))
        if complete:
            return set_condition(conditions, new_condition("Progressing", "True", "NewReplicaSetAvailable",
                                                           f"{what} has successfully progressed.", update_time=True))
        old_old = as_int(old.get("replicas")) - as_int(old.get("updatedReplicas"))
        new_old = status["replicas"] - status["updatedReplicas"]
        progressing = (status["updatedReplicas"] > as_int(old.get("updatedReplicas")) or new_old < old_old
                       or status["readyReplicas"] > as_int(old.get("readyReplicas"))
                       or status["availableReplicas"] > as_int(old.get("availableReplicas")))
        if not progressing:
            return conditions
        cond = new_condition("Progressing", "True", "ReplicaSetUpdated", f"{what} is progressing.", update_time=True)
        previous = next((c for c in conditions if c.get("type") == "Progressing"), None)
        if previous is not None and previous.get("status") == "True" and previous.get("lastTransitionTime"):
            cond["lastTransitionTime"] = previous["lastTransitionTime"]
        return [c for c in conditions if c.get("type") != "Progressing"] + [cond]
