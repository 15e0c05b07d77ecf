"""What every simulated controller shares: the context (object service, cache, scheduler, addresses,
settings) and a base class whose writes go through :class:`~apiserver.service.Objects` under the
managers upstream's components use, tolerating the races a controller must expect (the object is gone,
its namespace is terminating, someone else created it first).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.events import EventRecorder
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.spacepaths import ROOT
from apiserver.store import Key
from apiserver.writeoptions import DeleteOptions, WriteOptions
from kubeclient.workqueue import WorkQueue
from sim.controllers.cache import PODS, ClusterCache
from sim.controllers.scheduler import PodIPs, Scheduler
from sim.controllers.util import Obj, controller_ref, pod_from_template

log = logging.getLogger(__name__)

CONTROLLER_MANAGER = "kube-controller-manager"
# Upper bound of pods one reconcile creates or deletes (upstream uses slow-start batches of 500).
BURST = 500


@dataclass
class Context:
    objects: Objects
    catalog: Catalog
    cache: ClusterCache
    scheduler: Scheduler
    ips: PodIPs
    namespace_phase: Callable[[str, str], str | None]
    ready_delay: float
    kubelet_version: str
    events: EventRecorder  # what the simulated kubelets and controllers tell, as core/v1 Events
    pull_fails: Callable[[str, str], bool] = lambda _cluster, _image: False  # (cluster, image): a fault says so
    workers: int = 4

    def rtype(self, resource: str) -> ResourceType:
        """A built-in (or simulator) kind; they are the same in every space."""
        rtype = self.catalog.by_group_resource(ROOT, resource)
        assert rtype is not None, resource
        return rtype


def _tolerable(exc: StatusError) -> bool:
    """Races a controller expects: gone (404), exists/conflict (409), namespace terminating (403)."""
    return exc.code in (403, 404, 409)


class Controller(WorkQueue):
    """A work queue of object keys, fed by :meth:`observe` for the cached kinds it ``watches``."""

    watches: tuple[str, ...] = ()
    manager = CONTROLLER_MANAGER

    def __init__(self, ctx: Context, name: str) -> None:
        super().__init__(name, workers=ctx.workers)
        self.ctx = ctx
        self.cache = ctx.cache
        self.objects = ctx.objects

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        """A cached object of a watched kind changed (``new`` None: deleted)."""

    def enqueue_owner(self, key: Key, obj: Obj, kind: str, resource: str) -> None:
        """Queue the controller of ``obj`` if it is a ``kind``."""
        ref = controller_ref(obj)
        if ref is not None and ref.get("kind") == kind and ref.get("name"):
            self.add(Key(key.space, resource, key.namespace, ref["name"]))

    def opts(self, manager: str = "") -> WriteOptions:
        return WriteOptions(manager=manager or self.manager)

    def namespace_active(self, space: str, namespace: str) -> bool:
        return self.ctx.namespace_phase(space, namespace) == "Active"

    # --- writes ---------------------------------------------------------------------------------

    async def create(self, space: str, resource: str, namespace: str, obj: Obj) -> Obj | None:
        try:
            return await self.objects.create(space, self.ctx.rtype(resource), namespace, obj, self.opts())
        except StatusError as exc:
            if _tolerable(exc):
                return None
            raise

    async def update(self, key: Key, mutate: Callable[[Obj], Obj], *, manager: str = "",
                     subresource: str = "") -> Obj | None:
        """Read-modify-write of ``key`` (None if it is gone)."""
        try:
            return await self.objects.guaranteed_update(key.space, self.ctx.rtype(key.resource), key.namespace,
                                                        key.name, mutate, self.opts(manager), subresource=subresource)
        except StatusError as exc:
            if exc.code == 404:
                return None
            raise

    async def set_status(self, key: Key, build: Callable[[Obj], Obj]) -> None:
        """Write the status ``build`` makes of the current object."""
        def compute(obj: Obj) -> Obj:
            obj["status"] = build(obj)
            return obj

        await self.update(key, compute, subresource="status")

    async def write_status(self, key: Key, current: Obj, status: Obj) -> None:
        """Replace the status of ``key`` unless ``current`` (the cached object) already has it."""
        if current.get("status") != status:
            await self.set_status(key, lambda _obj: status)

    async def delete(self, key: Key) -> None:
        await self.objects.delete_if_present(key.space, self.ctx.rtype(key.resource), key.namespace, key.name,
                                             DeleteOptions(propagation="Background"))

    async def delete_all(self, keys: Iterable[Key]) -> None:
        await asyncio.gather(*(self.delete(k) for k in list(keys)[:BURST]))

    async def create_pod(self, space: str, owner: Obj, template: Any, *, name: str = "", generate_name: str = "",
                         labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
                         node: str = "", spec_patch: Obj | None = None) -> Obj | None:
        """A pod from ``template`` owned by ``owner``; placed by the scheduler unless ``node`` is given."""
        namespace = str(owner["metadata"].get("namespace", ""))
        if not self.namespace_active(space, namespace):
            return None
        pod = pod_from_template(template, namespace, owner, name=name, generate_name=generate_name,
                                extra_labels=labels, extra_annotations=annotations, node_name=node)
        pod["spec"].update(spec_patch or {})
        if node:
            return await self.create(space, PODS, namespace, pod)
        with self.ctx.scheduler.reserve(space, pod["spec"]) as (picked, _why):
            if picked is not None:
                pod["spec"]["nodeName"] = picked
            return await self.create(space, PODS, namespace, pod)
