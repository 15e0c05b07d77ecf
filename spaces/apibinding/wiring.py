"""API export and binding, composed on a running space runtime: the index on the watch bus and the catalogue's
custom types, the admission checks, the status controller and the providers' endpoint.

The hub serves it (its catalogue holds the two kinds, ``spaces.apibinding.kinds``); the order matters: the
runtime has loaded every space's CRDs when this starts, so each binding space serves what it binds before the
server is ready.
"""

from __future__ import annotations

from apiserver.server.admission import AdmissionChain
from spaces.apibinding.admission import BindingAdmission
from spaces.apibinding.conditions import APIBindingController
from spaces.apibinding.endpoint import ExportAPI
from spaces.apibinding.index import BindingIndex
from spaces.apibinding.kinds import BINDINGS
from spaces.runtime import SpaceRuntime


class APIBindings:
    def __init__(self, runtime: SpaceRuntime, version_info: dict[str, str]) -> None:
        self.runtime = runtime
        self.version_info = version_info

    async def start(self) -> None:
        runtime, objects = self.runtime, self.runtime.objects
        self.index = BindingIndex(runtime.catalog)
        # Read on the event loop, on purpose: no commit can be published between reading and listening.
        self.index.load(objects.rows_of_resource)
        runtime.bus.add_listener(self.index.on_commit)
        runtime.catalog.custom_listeners.append(self.index.on_custom_types)
        admission = BindingAdmission(self.index, runtime.authorizer, objects)
        objects.admit = admission if objects.admit is None else AdmissionChain(objects.admit, admission)
        objects.before_delete.setdefault(BINDINGS, []).append(admission.before_delete)
        self.controller = APIBindingController(objects, runtime.catalog, self.index, runtime.settings.public_url)
        self.controller.start(runtime.leadership)
        self.api = ExportAPI(objects, runtime.catalog, self.index, runtime.authorizer, self.version_info)

    async def stop(self) -> None:
        await self.controller.stop()
