"""APIServices: the ``Available`` condition kube-aggregator's availability controller sets.

A simulated cluster aggregates no API server, so the answers are the ones a real cluster gives before
anything serves the group: a local APIService (no ``spec.service``) is available; one naming a Service
that does not exist is ``False (ServiceNotFound)`` with upstream's message; one whose Service exists has
nothing behind it here, ``False (MissingEndpoints)``. Re-evaluated when the APIService or a Service of
its namespace changes.
"""

from __future__ import annotations

from typing import Any

from apiserver.store import Key
from apiserver.writeoptions import now_rfc3339
from sim.controllers.base import Context, Controller
from sim.controllers.cache import APISERVICES, SERVICES
from sim.controllers.util import Obj, condition, get


class APIServiceController(Controller):
    watches = (APISERVICES, SERVICES)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "apiservices")

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if key.resource == APISERVICES:
            if new is not None:
                self.add(key)
            return
        for api_key, api in self.cache.all(key.space, APISERVICES):
            ref = get(api, "spec", "service")
            if isinstance(ref, dict) and (ref.get("namespace"), ref.get("name")) == (key.namespace, key.name):
                self.add(api_key)

    async def handle(self, key: Any) -> bool:
        api = self.cache.get(key)
        if api is None:
            return False
        status, reason, message = self._availability(key.space, api)
        old = condition(api, "Available") or {}
        since = old.get("lastTransitionTime") if old.get("status") == status else None
        available = {"type": "Available", "status": status, "lastTransitionTime": since or now_rfc3339(),
                     "reason": reason, "message": message}
        await self.write_status(key, api, {"conditions": [available]})
        return False

    def _availability(self, space: str, api: Obj) -> tuple[str, str, str]:
        ref = get(api, "spec", "service")
        if not isinstance(ref, dict):
            return "True", "Local", "Local APIServices are always available"
        namespace, name = str(ref.get("namespace") or ""), str(ref.get("name") or "")
        if self.cache.get(Key(space, SERVICES, namespace, name)) is None:
            return "False", "ServiceNotFound", f'service/{name} in "{namespace}" is not present'
        return "False", "MissingEndpoints", (f'endpoints for service/{name} in "{namespace}" have no addresses '
                                             "(a simulated cluster runs no API server behind it)")
