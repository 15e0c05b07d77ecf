"""What kube's controllers put in every namespace: the ``default`` ServiceAccount and the ``kube-root-ca.crt``
ConfigMap.

kube-controller-manager's serviceaccounts controller creates ``default`` in each namespace, and again when it is
deleted; its root-CA publisher writes ``kube-root-ca.crt`` (key ``ca.crt``: the CA clients trust for the API
server) and puts it back when it is deleted or changed. This controller does both for every active namespace of
every space it is told to serve (a kube space has its own controllers). Without a CA (a server on plain HTTP)
there is no ConfigMap to publish. Every cluster has its own of both, so they are not placed
(:func:`namespace_default`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.controllers.namespaces import NAMESPACES, NamespaceController
from apiserver.service import Objects
from apiserver.watch import Entry
from apiserver.writeoptions import WriteOptions
from kubeclient.workqueue import Gate, WorkQueue

DEFAULT_SERVICE_ACCOUNT = "default"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
SERVICE_ACCOUNTS = "serviceaccounts"
CONFIGMAPS = "configmaps"
MANAGER = "spacehub-serviceaccounts"

log = logging.getLogger(__name__)


def namespace_default(resource: str, name: str) -> bool:
    """Whether an object is one this controller keeps in every namespace: every cluster's own controllers make
    theirs, so placement never sends these to clusters (as KubeStellar leaves them out of downsync)."""
    return (resource, name) in ((SERVICE_ACCOUNTS, DEFAULT_SERVICE_ACCOUNT), (CONFIGMAPS, ROOT_CA_CONFIGMAP))


class NamespaceDefaults(WorkQueue):
    """Keeps the ``default`` ServiceAccount and ``kube-root-ca.crt`` in every active namespace."""

    def __init__(self, objects: Objects, catalog: Catalog, namespaces: NamespaceController, ca_pem: bytes | None,
                 served: Callable[[str], bool], seeding: Callable[[str], bool]) -> None:
        """``served(space)``: whether this server keeps that space's namespaces now (False for kube spaces, and
        for a space being deleted, whose contents go with it). ``seeding(space)``: whether that space's defaults
        are being written now (``spaces.seeding``, which writes this controller's objects of a namespace it
        creates, :meth:`in_namespace`)."""
        super().__init__("namespace-defaults")
        self.objects = objects
        self.catalog = catalog
        self.namespaces = namespaces
        self.ca = ca_pem.decode() if ca_pem else None
        self.served = served
        self.seeding = seeding

    def in_namespace(self, _space: str, namespace: str) -> list[tuple[str, dict[str, Any]]]:
        """What a new namespace gets: its ``default`` ServiceAccount and, with a CA, ``kube-root-ca.crt``."""
        wanted: list[tuple[str, dict[str, Any]]] = [
            (SERVICE_ACCOUNTS, {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}})]
        if self.ca is not None:
            wanted.append((CONFIGMAPS, self._root_ca(namespace)))
        return wanted

    def _root_ca(self, namespace: str) -> dict[str, Any]:
        return {"metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": namespace}, "data": {ROOT_CA_KEY: self.ca}}

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            key = entry.row.key
            if key.resource == NAMESPACES and not entry.row.deleted:
                # A namespace a space's seeding creates gets its objects from that seeding, in the same pass.
                if not (entry.row.created and self.seeding(key.space)):
                    self.add((key.space, key.name))
            elif self._kept(entry):
                self.add((key.space, key.namespace))

    def _kept(self, entry: Entry) -> bool:
        """Whether a change to this object needs undoing: the default ServiceAccount deleted, the CA's ConfigMap
        deleted or changed to anything but the CA."""
        key, deleted = entry.row.key, entry.row.deleted
        if key.resource == SERVICE_ACCOUNTS:
            return key.name == DEFAULT_SERVICE_ACCOUNT and deleted
        if key.resource != CONFIGMAPS or key.name != ROOT_CA_CONFIGMAP or self.ca is None:
            return False
        return deleted or entry.obj().get("data") != {ROOT_CA_KEY: self.ca}

    def start(self, gate: Gate | None = None) -> None:
        """Keep every namespace's objects from now on, and look at those lacking them now (in the background: the
        server does not wait for it). The listener is added first: a change after the look's snapshot reaches
        :meth:`on_commit`."""
        self.objects.bus.add_listener(self.on_commit)
        super().start(gate)
        self.in_background(self._queue_lacking, "start-up")

    async def _queue_lacking(self) -> None:
        # One read of the defaults that exist, not two point reads per namespace: with 40,000 namespaces those
        # took the hub 18 s of CPU after every start. :meth:`handle` looks again at each namespace queued.
        try:
            kept = await self.objects.run_sync(self._kept_everywhere)
        except Exception:  # each namespace is then looked at alone
            log.exception("reading the namespaces' defaults failed")
            kept = set()
        for space, namespace, _phase in self.namespaces.phases.items():
            if (space, namespace) not in kept:
                self.add((space, namespace))

    def _kept_everywhere(self) -> set[tuple[str, str]]:
        """The (space, namespace) pairs holding their ``default`` ServiceAccount and, with a CA, the CA's
        ConfigMap as :meth:`handle` would leave it (blocking: a store read)."""
        store = self.objects.store
        kept = {(row.key.space, row.key.namespace)
                for row in store.list_resource_everywhere(SERVICE_ACCOUNTS, DEFAULT_SERVICE_ACCOUNT)}
        if self.ca is None:
            return kept
        wanted = {ROOT_CA_KEY: self.ca}
        return kept & {(row.key.space, row.key.namespace)
                       for row in store.list_resource_everywhere(CONFIGMAPS, ROOT_CA_CONFIGMAP)
                       if orjson.loads(row.value).get("data") == wanted}

    async def handle(self, key: Any) -> bool:
        space, namespace = key
        if self.namespaces.phase(space, namespace) != "Active" or not self.served(space):
            return False
        await self._ensure(space, SERVICE_ACCOUNTS, namespace,
                           {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}})
        if self.ca is not None:
            await self._ensure_root_ca(space, namespace)
        return False

    async def _ensure(self, space: str, resource: str, namespace: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The object, created when missing; None when the namespace went away meanwhile."""
        rtype = self.catalog.by_group_resource(space, resource)
        if rtype is None:
            return None
        name = obj["metadata"]["name"]
        found = await self.objects.find(space, rtype, namespace, name)
        if found is not None:
            return found
        try:
            return await self.objects.create(space, rtype, namespace, obj, WriteOptions(manager=MANAGER))
        except StatusError as exc:
            if exc.code == 409:  # created meanwhile (by someone else, or another hub process)
                return await self.objects.find(space, rtype, namespace, name)
            if exc.code in (403, 404):  # the namespace is terminating or gone: nothing to keep
                return None
            raise

    async def _ensure_root_ca(self, space: str, namespace: str) -> None:
        wanted = {ROOT_CA_KEY: self.ca}
        found = await self._ensure(space, CONFIGMAPS, namespace, self._root_ca(namespace))
        if found is None or found.get("data") == wanted:
            return
        rtype = self.catalog.by_group_resource(space, CONFIGMAPS)
        assert rtype is not None
        # Someone changed it: put the CA back, as kube's publisher does.
        await self.objects.guaranteed_update(space, rtype, namespace, ROOT_CA_CONFIGMAP,
                                             lambda obj: {**obj, "data": wanted}, WriteOptions(manager=MANAGER))
