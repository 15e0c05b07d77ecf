"""The checks at the door that need a space's bindings.

* Creating an APIBinding needs ``bind`` on the ``apiexports`` named after the export, in the provider space (kcp's
  rule): a provider decides who may bind its API, and so whose objects its controller will see. Writes of the hub's
  own (no user) are not checked.
* A CustomResourceDefinition may not be created for a resource that a binding of the space serves: its objects
  are the binding's (the other way round, a binding yields to a CRD the space had first, ``resolve``).
* An APIBinding is not deleted while objects of a resource it serves exist in its space: they would be left
  without an API (unservable, out of the provider's sight). Delete them first.
"""

from __future__ import annotations

from typing import Any

from apimachinery import errors
from apiserver.access import Attributes, Authorizer
from apiserver.customresources import CRD_RESOURCE
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.writeoptions import WriteOptions
from spaces.apibinding.index import BindingIndex
from spaces.apibinding.kinds import APIS_GROUP, BINDINGS, EXPORT_RESOURCE
from spaces.apibinding.resolve import export_ref


class BindingAdmission:
    def __init__(self, index: BindingIndex, authorizer: Authorizer, objects: Objects) -> None:
        self.index = index
        self.authorizer = authorizer
        self.objects = objects

    async def __call__(self, space: str, rtype: ResourceType, operation: str, obj: dict[str, Any] | None,
                       old: dict[str, Any] | None, opts: WriteOptions, subresource: str) -> None:
        """An admission step (``Objects.admit``)."""
        if subresource or obj is None:
            return
        if rtype.group_resource == BINDINGS and operation == "CREATE":
            self._check_bind(obj, opts)
        elif rtype.group_resource == CRD_RESOURCE and operation == "CREATE":
            self._check_crd(space, obj)

    def _check_bind(self, binding: dict[str, Any], opts: WriteOptions) -> None:
        ref = export_ref(binding)
        if opts.user is None or ref is None:  # the schema requires the reference; no user: the hub's own write
            return
        asked = Attributes(verb="bind", group=APIS_GROUP, resource=EXPORT_RESOURCE, name=ref.name)
        if not self.authorizer.authorize(ref.path, opts.user, asked).allowed:
            name = binding["metadata"].get("name", "")
            raise errors.StatusError(
                403, "Forbidden", f'{BINDINGS} "{name}" is forbidden: User "{opts.user.name}" cannot bind {ref}: '
                f'it needs "bind" on {EXPORT_RESOURCE} "{ref.name}" in space "{ref.path}"',
                name=name, group=APIS_GROUP, kind="apibindings")

    def _check_crd(self, space: str, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group = spec.get("group", "")
        binding = self.index.bound_by(space, group, names.get("plural", ""), names.get("kind", ""))
        if binding is not None:
            resource = f"{names.get('plural', '')}.{group}"
            raise errors.conflict("customresourcedefinitions", "apiextensions.k8s.io", crd["metadata"].get("name", ""),
                                  f'APIBinding "{binding}" serves {resource} (or its kind) in this space; '
                                  "delete the binding first to define it here")

    async def before_delete(self, space: str, binding: dict[str, Any]) -> None:
        """Refuse to delete a binding while its resources have objects (``Objects.before_delete``)."""
        name = binding["metadata"]["name"]
        verdict = self.index.verdicts(space).get(name)
        if verdict is None:
            return
        for resource in verdict.served:
            count = await self.objects.run_sync(self._count, space, resource)
            if count:
                raise errors.conflict("apibindings", APIS_GROUP, name, f"{count} {resource} still exist in this "
                                      "space; delete them first (without the binding they would have no API)")

    def _count(self, space: str, resource: str) -> int:
        return self.objects.count_in(space, resource)
