"""Kube spaces in the hub: the index of them, the proxy serving them, the probe of their API servers and the
placement mirrors reading them (``spaces.providers``, ``placement.mirror``), started and stopped together.

The EdgePlacement CRD is what the probe applies to each kube space's API server: placements of a kube space
are written there, beside what they select, and the mirror reads them from there.

The mirrors start from what the hub recorded of them (``hub.mirrorlog``) before they first reach a server, so
that a hub restarted while a server is unreachable still places what it placed from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hub.mirrorlog import MirrorLog
from placement.kinds import CRDS
from placement.mirror import KubeSpaceMirrors
from placement.service import PlacementService
from spaces.providers.kubespaces import KubeSpaces
from spaces.providers.probe import ProviderProbe
from spaces.providers.proxy import KubeSpaceProxy
from spaces.runtime import SpaceRuntime

PLACEMENT_CRD = Path(CRDS) / "edgeplacements.yaml"


def _placement_crd() -> dict[str, Any]:
    return dict(yaml.safe_load(PLACEMENT_CRD.read_text()))


class KubeSpaceProviders:
    def __init__(self, runtime: SpaceRuntime, placement: PlacementService) -> None:
        self.runtime = runtime
        self.spaces = KubeSpaces(runtime.objects)
        self.proxy = KubeSpaceProxy(self.spaces, lambda: runtime.authorizer)
        self.probe = ProviderProbe(self.spaces, runtime.objects, runtime.catalog, (_placement_crd(),))
        self.mirrors = KubeSpaceMirrors(self.spaces, placement)
        self.records = MirrorLog(runtime.objects, self.mirrors)

    async def start(self) -> None:
        await self.spaces.load(list(self.runtime.spaces.kube_spaces))
        kept = await self.records.load(self.runtime.leadership)  # only the lease holder writes them
        self.runtime.bus.add_listener(self.spaces.on_commit)
        self.mirrors.start(kept)
        self.records.start()
        self.probe.start(self.runtime.leadership)  # only the lease holder writes Space status

    def drain(self) -> None:
        self.proxy.close()

    async def stop(self) -> None:
        await self.probe.stop()
        await self.mirrors.stop()
        await self.records.stop()
        await self.spaces.close()
