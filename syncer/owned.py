"""What placed workloads own in the cluster — ReplicaSets and pods — and the Warning Events about them.

For each namespace that holds a placed Deployment, StatefulSet, DaemonSet, ReplicaSet or Job, one watch
each of pods, ReplicaSets and Warning Events (``kubeclient.reflector``); the watches stop when the namespace
holds none any more. Pods and ReplicaSets are indexed by owner uid, so a workload's summary (the
``associated`` of a status report: ReplicaSets and pods by state, restarts, the newest waiting or
terminated container state among pods that are not ready) is computed from memory, and a change to
something owned tells the syncer to report its workload again. A Warning Event about a workload or
something it owns goes to the syncer's event forwarder with the workload's ident. Where the cluster does not
watch pods (a 405), or is a child hub's space (which shows its clusters' pods, owned by ReplicaSets it does not
hold: README "Hubs of hubs"), what its workloads own is unknown and they have no summary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubeclient.client import GVR
from kubeclient.reflector import Reflector, Reflectors
from syncer.cluster import Cluster

WORKLOADS = frozenset({("apps", "deployments"), ("apps", "statefulsets"), ("apps", "daemonsets"),
                       ("apps", "replicasets"), ("batch", "jobs")})
log = logging.getLogger(__name__)
HUB_CHECK_SECONDS = 10.0  # how long the syncer's start waits to learn whether its cluster is a hub's space
PODS = GVR("", "v1", "pods")
REPLICASETS = GVR("apps", "v1", "replicasets")
EVENTS = GVR("", "v1", "events")
OWNER_DEPTH = 3  # Pod -> ReplicaSet -> Deployment, with room for one more level


@dataclass
class _Owned:
    kind: str  # Pod or ReplicaSet
    namespace: str
    name: str
    owners: tuple[str, ...]
    created: str
    ready: bool
    phase: str = ""
    restarts: int = 0
    waiting: dict[str, str] | None = None
    terminated: dict[str, Any] | None = None


@dataclass
class _Namespace:
    workloads: set[str] = field(default_factory=set)  # idents of the placed workloads in it


def _pod(obj: dict[str, Any]) -> _Owned:
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    waiting = terminated = None
    for container in statuses:
        state, last = container.get("state") or {}, container.get("lastState") or {}
        if waiting is None and (state.get("waiting") or {}).get("reason"):
            waiting = {"pod": meta.get("name", ""), "container": container.get("name", ""),
                       "reason": state["waiting"]["reason"], "message": state["waiting"].get("message", "")}
        gone = state.get("terminated") or last.get("terminated") or {}
        if terminated is None and gone.get("reason") and gone.get("reason") != "Completed":
            terminated = {"pod": meta.get("name", ""), "container": container.get("name", ""),
                          "reason": gone["reason"], "exitCode": gone.get("exitCode", 0),
                          "message": gone.get("message", "")}
    return _Owned("Pod", meta.get("namespace", ""), meta.get("name", ""), _owners(meta),
                  str(meta.get("creationTimestamp") or ""), ready, str(status.get("phase") or "Unknown"),
                  sum(int(c.get("restartCount") or 0) for c in statuses), waiting, terminated)


def _replicaset(obj: dict[str, Any]) -> _Owned:
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    wanted = int((obj.get("spec") or {}).get("replicas", 1) or 0)
    return _Owned("ReplicaSet", meta.get("namespace", ""), meta.get("name", ""), _owners(meta),
                  str(meta.get("creationTimestamp") or ""), int(status.get("readyReplicas") or 0) >= wanted)


def _owners(meta: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(o.get("uid")) for o in meta.get("ownerReferences") or [] if o.get("uid"))


class OwnedIndex:
    def __init__(self, cluster: Cluster, target: str, changed: Callable[[str], None],
                 warning: Callable[[str, dict[str, Any]], None]) -> None:
        self.cluster = cluster
        self.target = target
        self.changed = changed  # a workload's summary may have changed: its ident
        self.warning = warning  # a Warning Event about a workload or what it owns: (ident, event)
        self.watches = Reflectors()
        self._namespaces: dict[str, _Namespace] = {}
        self._owned: dict[str, _Owned] = {}  # uid -> pod or ReplicaSet
        self._children: dict[str, set[str]] = {}  # owner uid -> uids it owns
        self._ident_of: dict[str, str] = {}  # workload uid -> held ident
        self._uid_of: dict[str, str] = {}  # held ident -> workload uid
        self._where: dict[str, str] = {}  # held ident -> namespace
        self._unwatched: set[str] = set()  # namespaces whose pods the cluster does not watch
        self._hub_space = False  # a child hub's space (see detect_hub_space): its pods are not followed

    @staticmethod
    def is_workload(group: str, resource: str) -> bool:
        return (group, resource) in WORKLOADS

    async def detect_hub_space(self) -> None:
        """Whether the cluster is a child hub's space (its placement API answers), asked once before anything
        is tracked; a cluster that cannot say is taken for a cluster (its pods followed)."""
        try:
            async with asyncio.timeout(HUB_CHECK_SECONDS):
                self._hub_space = await self.cluster.hub_clusters() is not None
        except Exception as exc:  # whatever failed (network, a 5xx), the syncer runs on
            log.info("syncer %s: could not tell whether the cluster is a hub's space: %r", self.target, exc)

    def track(self, ident: str, namespace: str, uid: str) -> None:
        """A placed workload exists in the cluster with ``uid``."""
        if not uid or self._uid_of.get(ident) == uid:
            return
        self.untrack(ident)
        self._uid_of[ident], self._ident_of[uid], self._where[ident] = uid, ident, namespace
        ns = self._namespaces.setdefault(namespace, _Namespace())
        ns.workloads.add(ident)
        if self._hub_space:
            self._unwatched.add(namespace)
        else:
            for gvr, build, kind in ((PODS, _pod, "Pod"), (REPLICASETS, _replicaset, "ReplicaSet")):
                self.watches.ensure((namespace, gvr.resource), self._loop(namespace, gvr, build, kind))
        self.watches.ensure((namespace, EVENTS.resource), lambda: Reflector(
            self.cluster, EVENTS, owner=f"syncer {self.target}", namespace=namespace, field_selector="type=Warning",
            on_list=lambda items: [self._event(e) for e in items], on_event=lambda _kind, e: self._event(e)))

    def untrack(self, ident: str) -> None:
        uid = self._uid_of.pop(ident, None)
        if uid is None:
            return
        self._ident_of.pop(uid, None)
        namespace = self._where.pop(ident, "")
        ns = self._namespaces.get(namespace)
        if ns is not None:
            ns.workloads.discard(ident)
            if not ns.workloads:
                del self._namespaces[namespace]
                self._unwatched.discard(namespace)
                for resource in (PODS.resource, REPLICASETS.resource, EVENTS.resource):
                    self.watches.drop((namespace, resource))
                for key in [u for u, o in self._owned.items() if o.namespace == namespace]:
                    self._remove(key)

    def _loop(self, namespace: str, gvr: GVR, build: Callable[[dict[str, Any]], _Owned],
              kind: str) -> Callable[[], Reflector]:
        def listed(items: list[dict[str, Any]]) -> None:
            present = set()
            for item in items:
                present.add(self._put(build(item), item))
            stale = [u for u, o in self._owned.items()
                     if o.namespace == namespace and o.kind == kind and u not in present]
            for uid in stale:
                self._touch(uid)
                self._remove(uid)

        def event(kind: str, obj: dict[str, Any]) -> None:
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            if kind == "DELETED":
                self._touch(uid)
                self._remove(uid)
            else:
                self._put(build(obj), obj)

        def unwatchable() -> None:
            if gvr == PODS:
                self._unwatched.add(namespace)
                for ident in self._namespaces.get(namespace, _Namespace()).workloads:
                    self.changed(ident)

        return lambda: Reflector(self.cluster, gvr, owner=f"syncer {self.target}", namespace=namespace, on_list=listed,
                                 on_event=event, on_unwatchable=unwatchable)

    def _put(self, owned: _Owned, obj: dict[str, Any]) -> str:
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        previous = self._owned.get(uid)
        if previous is not None:
            for owner in previous.owners:
                self._children.get(owner, set()).discard(uid)
        self._owned[uid] = owned
        for owner in owned.owners:
            self._children.setdefault(owner, set()).add(uid)
        if previous != owned:
            self._touch(uid)
        return uid

    def _remove(self, uid: str) -> None:
        owned = self._owned.pop(uid, None)
        if owned is not None:
            for owner in owned.owners:
                children = self._children.get(owner)
                if children is not None:
                    children.discard(uid)
                    if not children:
                        del self._children[owner]

    def _workload_of(self, uid: str) -> str | None:
        """The ident of the placed workload that owns ``uid`` (itself or up the owner chain)."""
        frontier = [uid]
        for _ in range(OWNER_DEPTH + 1):
            nxt = []
            for current in frontier:
                ident = self._ident_of.get(current)
                if ident is not None:
                    return ident
                owned = self._owned.get(current)
                if owned is not None:
                    nxt.extend(owned.owners)
            frontier = nxt
        return None

    def _touch(self, uid: str) -> None:
        ident = self._workload_of(uid)
        if ident is not None:
            self.changed(ident)

    def _event(self, event: dict[str, Any]) -> None:
        involved = event.get("involvedObject") or {}
        ident = self._workload_of(str(involved.get("uid") or ""))
        if ident is not None:
            self.warning(ident, event)

    def summary(self, ident: str) -> dict[str, Any] | None:
        """``associated`` for a placed workload (docs/sync-protocol.md), or None when it is not one (yet)."""
        uid = self._uid_of.get(ident)
        if uid is None or self._where.get(ident) in self._unwatched:
            return None
        replicasets = [self._owned[u] for u in self._children.get(uid, ()) if self._owned[u].kind == "ReplicaSet"]
        pod_ids = set(self._children.get(uid, ()))
        for rs_uid in [u for u in self._children.get(uid, ()) if self._owned[u].kind == "ReplicaSet"]:
            pod_ids |= self._children.get(rs_uid, set())
        pods = sorted((self._owned[u] for u in pod_ids if u in self._owned and self._owned[u].kind == "Pod"),
                      key=lambda p: p.created, reverse=True)
        phases: dict[str, int] = {}
        for pod in pods:
            phases[pod.phase] = phases.get(pod.phase, 0) + 1
        summary: dict[str, Any] = {"total": len(pods), "ready": sum(p.ready for p in pods), "phases": phases,
                                   "restarts": sum(p.restarts for p in pods)}
        unready = [p for p in pods if not p.ready]
        waiting = next((p.waiting for p in unready if p.waiting), None)
        terminated = next((p.terminated for p in unready if p.terminated), None)
        if waiting:
            summary["waiting"] = waiting
        if terminated:
            summary["terminated"] = terminated
        out: dict[str, Any] = {"pods": summary}
        if replicasets:
            out["replicaSets"] = {"total": len(replicasets), "ready": sum(r.ready for r in replicasets)}
        return out

    async def stop(self) -> None:
        await self.watches.stop()
