"""Each kube Space's ``ProviderReachable`` condition, and what the hub puts on its API server.

Every ``INTERVAL`` seconds (and at once when the Space or its Secret changes) the API server is asked for
``/api`` with the kubeconfig's credentials: the answer sets the condition (``Reachable``; or ``Unreachable``,
``Unauthorized``, ``Forbidden``, ``Error``, ``SecretNotFound``, ``KubeconfigInvalid`` with the server's or the
hub's words). A condition is written only when it changes, and only by the lease holder (the probe runs
behind ``leadership``), so several hub processes never race on the Space's status.

Each time a server becomes reachable the probe applies the ``bootstrap`` objects to it with server-side apply
(the hub gives the EdgePlacement CRD: placements of a kube space live on its server, beside what they select).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable, Sequence
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.service import Objects
from apiserver.writeoptions import WriteOptions, now_rfc3339
from kubeclient.client import GVR, PROBE_TIMEOUT, ClusterError
from kubeclient.workqueue import Gate, WorkQueue
from spaces.providers.kubespaces import SPACES, KubeSpace, KubeSpaces
from spaces.providers.upstream import MANAGER, ProviderError, Upstream

log = logging.getLogger(__name__)
CONDITION = "ProviderReachable"
INTERVAL = 2.0
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
Verdict = tuple[str, str, str]  # the condition's status, reason and message


class ProviderProbe(WorkQueue):
    def __init__(self, spaces: KubeSpaces, objects: Objects, catalog: Catalog,
                 bootstrap: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__("provider-probe")
        self.spaces = spaces
        self.objects = objects
        self.catalog = catalog
        self.bootstrap = bootstrap
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._bootstrapped: set[str] = set()  # reachable since the bootstrap objects were applied

    def start(self, gate: Gate | None = None) -> None:
        self.spaces.listeners.append(self.add)
        for space in self.spaces.all():
            self.add(space.id)
        super().start(gate)

    async def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        await super().stop()

    async def handle(self, key: Hashable) -> bool:
        space_id = str(key)
        timer = self._timers.pop(space_id, None)
        if timer is not None:
            timer.cancel()
        space = self.spaces.get(space_id)
        if space is None:  # no longer a kube space
            self._bootstrapped.discard(space_id)
            return False
        # The next look is due whatever happens to this one.
        self._timers[space_id] = asyncio.get_running_loop().call_later(INTERVAL, self.add, space_id)
        verdict = await self._probe(space)
        await self._write(space, verdict)
        return False

    async def _probe(self, space: KubeSpace) -> Verdict:
        try:
            upstream = await self.spaces.upstream(space.id)
        except ProviderError as exc:
            self._bootstrapped.discard(space.id)
            return "False", exc.reason, exc.message
        try:
            await upstream.client.request_json("GET", "/api", timeout=PROBE_TIMEOUT)
        except ClusterError as exc:
            self._bootstrapped.discard(space.id)
            if not exc.code:
                return "False", "Unreachable", f"{upstream.server}: {exc.message}"
            reason = {401: "Unauthorized", 403: "Forbidden"}.get(exc.code, "Error")
            return "False", reason, f"GET {upstream.url('api')}: {exc.code} {exc.message}"
        if space.id not in self._bootstrapped and await self._apply_bootstrap(space, upstream):
            self._bootstrapped.add(space.id)
        return "True", "Reachable", f"the API server at {upstream.server} answers"

    async def _apply_bootstrap(self, space: KubeSpace, upstream: Upstream) -> bool:
        for obj in self.bootstrap:
            name = obj["metadata"]["name"]
            try:
                await upstream.client.apply(CRDS, "", name, obj)
            except ClusterError as exc:
                log.warning("space %s: applying %s %s failed: %s", space.path, CRDS, name, exc.message)
                return False
        return True

    async def _write(self, space: KubeSpace, verdict: Verdict) -> None:
        stype = self.catalog.by_group_resource(space.parent, SPACES)
        assert stype is not None  # Space objects are stored only where Spaces are served
        try:
            current = await self.objects.get(space.parent, stype, "", space.name)
        except StatusError as exc:
            if exc.code == 404:
                return  # deleted meanwhile
            raise
        if current["metadata"].get("deletionTimestamp") or _condition_of(current) == verdict:
            return  # a Space being deleted is left to its finalization (a write now would only race it)
        status, reason, message = verdict
        log.info("space %s: %s=%s (%s): %s", space.path, CONDITION, status, reason, message)

        def set_condition(obj: dict[str, Any]) -> dict[str, Any]:
            if obj["metadata"].get("deletionTimestamp"):
                return obj  # unchanged: nothing is written
            st = obj.setdefault("status", {})
            old = next((c for c in st.get("conditions") or [] if c.get("type") == CONDITION), {})
            since = old.get("lastTransitionTime") if old.get("status") == status else None
            condition = {"type": CONDITION, "status": status, "reason": reason, "message": message,
                         "observedGeneration": obj["metadata"].get("generation", 1),
                         "lastTransitionTime": since or now_rfc3339()}
            st["conditions"] = [c for c in st.get("conditions") or [] if c.get("type") != CONDITION] + [condition]
            return obj

        try:
            await self.objects.guaranteed_update(space.parent, stype, "", space.name, set_condition,
                                                 WriteOptions(manager=MANAGER), subresource="status")
        except StatusError as exc:
            if exc.code != 404:
                raise


def _condition_of(obj: dict[str, Any]) -> Verdict | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == CONDITION:
            return c.get("status"), c.get("reason"), c.get("message")
    return None
