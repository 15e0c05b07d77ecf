"""Admission wired into the object service: one call to the admission engine per create or update.

It lives with the server runtime because it joins two parts that must not know each other: the object
service (``apiserver.service``) and the policies (``apiserver.admission``).

Builds the admission request (with the namespace object), resolves policy parameters from the store
and runs the evaluation in a worker thread, so expensive CEL never blocks the event loop.
"""

from __future__ import annotations

from typing import Any

import orjson

from apimachinery.selectors import label_selector_from_object
from apiserver.admission.engine import AdmissionEngine, AdmissionRequest
from apiserver.admission.policy import CompiledPolicy
from apiserver.catalog import Catalog
from apiserver.resourcetypes import ResourceType
from apiserver.service import AdmitHook, Objects
from apiserver.writeoptions import WriteOptions


async def namespace_object(objects: Objects, catalog: Catalog, space: str, rtype: ResourceType,
                           obj: dict[str, Any] | None, old: dict[str, Any] | None) -> dict[str, Any] | None:
    """The namespace a namespaced request's object is in (selectors and CEL look at its labels)."""
    namespace = ((obj or old or {}).get("metadata") or {}).get("namespace", "")
    if not rtype.namespaced or not namespace:
        return None
    ns_type = catalog.by_group_resource(space, "namespaces")
    if ns_type is None:
        return None
    row = await objects.run_sync(objects.store.get, objects.key(space, ns_type, "", namespace))
    return orjson.loads(row.value) if row is not None else None


class AdmissionChain:
    """Several admission steps as one ``Objects.admit``: each runs in turn, the first refusal wins."""

    def __init__(self, *steps: AdmitHook) -> None:
        self.steps = steps

    async def __call__(self, space: str, rtype: ResourceType, operation: str, obj: dict[str, Any] | None,
                       old: dict[str, Any] | None, opts: WriteOptions, subresource: str) -> None:
        for step in self.steps:
            await step(space, rtype, operation, obj, old, opts, subresource)


class AdmissionHook:
    def __init__(self, engine: AdmissionEngine, objects: Objects, catalog: Catalog) -> None:
        self.engine = engine
        self.objects = objects
        self.catalog = catalog

    async def __call__(self, space: str, rtype: ResourceType, operation: str, obj: dict[str, Any] | None,
                       old: dict[str, Any] | None, opts: WriteOptions, subresource: str) -> None:
        if not self.engine.has_policies(space):
            return
        ns_object = await namespace_object(self.objects, self.catalog, space, rtype, obj, old)
        req = AdmissionRequest(space, rtype, operation, obj, old, ns_object, subresource, opts.dry_run)
        verdict = await self.objects.run_sync(self.engine.evaluate, req,
                                              lambda policy, binding: self._params(space, req, policy, binding))
        opts.warnings.extend(verdict.warnings)
        if verdict.denied is not None:
            raise verdict.denied

    def _params(self, space: str, req: AdmissionRequest, policy: CompiledPolicy,
                binding: dict[str, Any]) -> list[dict[str, Any]] | None:
        """Parameter objects for one binding (runs in the worker thread: blocking store reads)."""
        kind = policy.spec.get("paramKind")
        if not kind:
            return []
        ref = (binding.get("spec") or {}).get("paramRef") or {}
        group = (kind.get("apiVersion") or "").rpartition("/")[0]
        ptype = self.catalog.by_kind(space, group, kind.get("kind", ""))
        found: list[dict[str, Any]] = []
        if ptype is not None and ref:
            namespace = (ref.get("namespace") or req.namespace) if ptype.namespaced else ""
            if ref.get("name"):
                row = self.objects.store.get(self.objects.key(space, ptype, namespace, ref["name"]))
                if row is not None:
                    found.append(orjson.loads(row.value))
            elif ref.get("selector") is not None:
                selector = label_selector_from_object(ref["selector"])
                _rev, rows = self.objects.store.list(space, ptype.group_resource,
                                                     namespace if ptype.namespaced else None)
                for row in rows:
                    candidate = orjson.loads(row.value)
                    if selector.matches((candidate.get("metadata") or {}).get("labels")):
                        found.append(candidate)
        if not found and ref.get("parameterNotFoundAction", "Deny") == "Deny":
            return None
        return found
