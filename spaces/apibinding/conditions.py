"""The status of APIExports and APIBindings, written from what ``spaces.apibinding.index`` decided.

Every hub process serves what the bindings decide (the index); only the lease holder writes it down, as
kube-style conditions with reasons:

* APIExport: ``status.url`` (its endpoint), ``status.resources`` (what it offers now) and ``Ready`` — False with
  ``CRDNotServed`` while a CRD it names is not established in its space.
* APIBinding: ``status.boundResources`` (what it makes its space serve), ``BindingConflict`` (True with
  ``NamingConflict`` naming each clash, else False) and ``Ready`` — True (``Bound``) when everything the export
  offers is served here; otherwise False with ``ExportNotFound``, ``BindingConflict`` or ``ExportNotReady``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.writeoptions import WriteOptions, now_rfc3339
from kubeclient.workqueue import Gate, WorkQueue
from spaces.apibinding.index import BindingIndex
from spaces.apibinding.kinds import BINDINGS, ENDPOINT_PREFIX, EXPORTS
from spaces.apibinding.resolve import ExportRef, Verdict

MANAGER = "spacehub-apibinding-controller"


def condition(kind: str, ok: bool, reason: str, message: str, old: list[dict[str, Any]]) -> dict[str, Any]:
    """A condition; its lastTransitionTime moves only when its status does."""
    status = "True" if ok else "False"
    previous = next((c for c in old if c.get("type") == kind), None)
    since = previous["lastTransitionTime"] if previous and previous.get("status") == status else now_rfc3339()
    return {"type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message}


def resources(served: dict[str, tuple[ResourceType, ...]]) -> list[dict[str, Any]]:
    return [{"group": versions[0].group, "resource": versions[0].plural, "crd": crd,
             "versions": [t.version for t in versions]} for crd, versions in served.items()]


def binding_status(verdict: Verdict, old: dict[str, Any]) -> dict[str, Any]:
    conditions = old.get("conditions") or []
    conflict = condition("BindingConflict", bool(verdict.conflicts), "NamingConflict" if verdict.conflicts
                         else "NoConflicts", "; ".join(verdict.conflicts) or "no conflicts found", conditions)
    if not verdict.export_found:
        ready = condition("Ready", False, "ExportNotFound", f"{verdict.ref or 'the APIExport named'} not found",
                          conditions)
    elif verdict.conflicts:
        ready = condition("Ready", False, "BindingConflict", "not served here: " + "; ".join(verdict.conflicts),
                          conditions)
    elif verdict.missing:
        ready = condition("Ready", False, "ExportNotReady", f"{verdict.ref} names CustomResourceDefinitions its "
                          f"space does not serve: {', '.join(verdict.missing)}", conditions)
    else:
        ready = condition("Ready", True, "Bound", f"the resources of {verdict.ref} are served in this space",
                          conditions)
    return {**old, "boundResources": resources(dict(verdict.served)), "conditions": [ready, conflict]}


class APIBindingController(WorkQueue):
    def __init__(self, objects: Objects, catalog: Catalog, index: BindingIndex, public_url: str) -> None:
        super().__init__("apibindings")
        self.objects = objects
        self.catalog = catalog
        self.index = index
        self.public_url = public_url

    def start(self, gate: Gate | None = None) -> None:
        """Write status from now on, or once ``gate`` opens (then everything is looked at again)."""
        self.index.listeners.append(self._changed)
        super().start(gate)
        self._everything()
        self.when_gate_opens(gate, self._everything_again)

    async def _everything_again(self) -> None:
        self._everything()

    def _everything(self) -> None:
        self._changed(set(self.index.exports()), set(self.index.binding_spaces()))

    def _changed(self, exports: set[ExportRef], spaces: set[str]) -> None:
        for ref in exports:
            self.add(("export", ref))
        for space in spaces:
            self.add(("bindings", space))

    async def handle(self, key: Hashable) -> bool:
        assert isinstance(key, tuple)
        kind, what = key
        if kind == "export":
            await self._export_status(what)
        else:
            for name, verdict in list(self.index.verdicts(what).items()):
                await self._write(what, BINDINGS, name, lambda old, v=verdict: binding_status(v, old))
        return False

    async def _export_status(self, ref: ExportRef) -> None:
        offer = self.index.offer(ref)
        if offer is None:
            return
        url = f"{self.public_url}{ENDPOINT_PREFIX}{ref.path}/{ref.name}"

        def compute(old: dict[str, Any]) -> dict[str, Any]:
            conditions = old.get("conditions") or []
            if offer.missing:
                ready = condition("Ready", False, "CRDNotServed", "CustomResourceDefinitions not established in "
                                  f"this space: {', '.join(offer.missing)}", conditions)
            else:
                ready = condition("Ready", True, "CRDsServed", "every CustomResourceDefinition named is offered",
                                  conditions)
            return {**old, "url": url, "resources": resources(dict(offer.types)), "conditions": [ready]}

        await self._write(ref.path, EXPORTS, ref.name, compute)

    async def _write(self, space: str, resource: str, name: str,
                     compute: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        rtype = self.catalog.by_group_resource(space, resource)
        assert rtype is not None

        def set_status(obj: dict[str, Any]) -> dict[str, Any]:
            obj["status"] = compute(dict(obj.get("status") or {}))
            return obj

        try:
            await self.objects.guaranteed_update(space, rtype, "", name, set_status, WriteOptions(manager=MANAGER),
                                                 subresource="status")
        except StatusError as exc:
            if exc.code != 404:  # deleted meanwhile: nothing to write
                raise
