"""The kwok-like simulator: controllers that make simulated clusters behave like real ones.

:class:`Simulator` owns the informer cache, the scheduler and pod addresses, and the controllers
(nodes, pod lifecycle, ReplicaSets, Deployments, StatefulSets, DaemonSets, Jobs, APIService
availability, status rules, HorizontalPodAutoscalers). One
watch-bus listener updates the cache and hands each change to the controllers watching its kind;
each controller is a work queue of object keys. Every write goes through the object service, so it
is validated, versioned and watchable like a client's. Namespaces (Active) and CRDs (Established)
are the hub's own controllers' work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from apiserver.catalog import Catalog
from apiserver.events import EventRecorder
from apiserver.service import Objects
from apiserver.watch import Entry
from sim.controllers.apiservices import APIServiceController
from sim.controllers.base import Context, Controller
from sim.controllers.cache import CACHED, ClusterCache
from sim.controllers.daemonsets import DaemonSetController
from sim.controllers.deployments import DeploymentController
from sim.controllers.hpa import HorizontalPodAutoscalerController
from sim.controllers.jobs import JobController
from sim.controllers.nodes import NodeController, NodeShape
from sim.controllers.pods import PodController
from sim.controllers.replicasets import ReplicaSetController
from sim.controllers.scheduler import PodIPs, Scheduler
from sim.controllers.statefulsets import StatefulSetController
from sim.controllers.statusrules import StatusRule, StatusRuleController

__all__ = ["NodeShape", "Simulator", "StatusRule"]


class Simulator:
    def __init__(self, objects: Objects, catalog: Catalog, namespace_phase: Callable[[str, str], str | None], *,
                 ready_delay: float, shapes: dict[str, NodeShape], default_shape: NodeShape, kubelet_version: str,
                 status_rules: tuple[StatusRule, ...] = (), workers: int = 4,
                 pull_fails: Callable[[str, str], bool] = lambda _cluster, _image: False,
                 cpu_load: Callable[[str], float | None] = lambda _cluster: None) -> None:
        self.cache = ClusterCache()
        self.ctx = Context(objects=objects, catalog=catalog, cache=self.cache, scheduler=Scheduler(self.cache),
                           ips=PodIPs(), namespace_phase=namespace_phase, ready_delay=ready_delay,
                           kubelet_version=kubelet_version, workers=workers, pull_fails=pull_fails,
                           events=EventRecorder(objects, catalog, "kubelet", manager="kubelet"))
        self.nodes = NodeController(self.ctx, shapes, default_shape)
        self.status_rules = StatusRuleController(self.ctx, status_rules)
        self.autoscalers = HorizontalPodAutoscalerController(self.ctx, cpu_load)
        self.controllers: list[Controller] = [
            self.nodes, PodController(self.ctx), ReplicaSetController(self.ctx), DeploymentController(self.ctx),
            StatefulSetController(self.ctx), DaemonSetController(self.ctx), JobController(self.ctx),
            APIServiceController(self.ctx), self.status_rules, self.autoscalers,
        ]
        self._backfill: asyncio.Task[None] | None = None
        self._watching: dict[str, list[Controller]] = {
            resource: [c for c in self.controllers if resource in c.watches] for resource in CACHED}

    def load(self) -> None:
        """Fill the cache from the store (blocking; call at startup, before :meth:`start`)."""
        self.cache.load(self.ctx.objects.rows_of_resource)
        self.ctx.ips.load(self.cache)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            key = entry.row.key
            watchers = self._watching.get(key.resource)
            if watchers is not None:
                obj = entry.obj()
                old = self.cache.apply(key, obj, deleted=entry.row.deleted)
                new = None if entry.row.deleted else obj
                for controller in watchers:
                    controller.observe(key, old, new)
            if self.status_rules.groups:
                self.status_rules.observe_entry(entry)

    def start(self, spaces: list[str]) -> None:
        """Listen to the bus, start the controllers and queue everything cached (an informer's relist)."""
        self.ctx.objects.bus.add_listener(self.on_commit)
        for controller in self.controllers:
            controller.start()
        for key, obj in list(self.cache.objects.items()):
            for controller in self._watching.get(key.resource, ()):
                controller.observe(key, None, obj)
        if self.status_rules.groups:
            self._backfill = asyncio.create_task(self.status_rules.backfill(spaces), name="sim-status-rules-backfill")

    async def stop(self) -> None:
        if self._backfill is not None and not self._backfill.done():
            self._backfill.cancel()
        for controller in self.controllers:
            await controller.stop()

    async def ensure_nodes(self, cluster: str) -> None:
        await self.nodes.ensure(cluster)
