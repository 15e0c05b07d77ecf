"""The workload cluster as the syncer sees it: the client core (``kubeclient.client``) with kr8s's credentials,
as ``spacehub-syncer``.

The sync stream names every entry by (group, version, resource), so no discovery is needed, and a type whose CRD
was created a moment ago is reachable at once (upsync rules name only group and resource: ``served_version``
asks discovery). The "cluster" may be a space of another spacehub hub (a child hub, README "Hubs of hubs"): the
same API, and ``hub_clusters`` for what it has in place of Nodes.
"""

from __future__ import annotations

from typing import Any

from kubeclient.client import GVR, ClusterError, KubeClient
from kubeclient.kubeconfig import split_server
from kubeclient.session import kr8s_credentials

FIELD_MANAGER = "spacehub-syncer"
HUB_CLUSTERS = "/placement/v1/clusters"
VERSION = "/version/"  # what the syncer asks first: the server answers


class Cluster(KubeClient):
    """One workload cluster's API. Cheap: many share one process."""

    @classmethod
    async def connect(cls, kubeconfig: str | None, context: str | None = None) -> Cluster:
        """kr8s reads the kubeconfig (``None``: $KUBECONFIG, else in-cluster service account); the cluster must
        answer its version (a ``ClusterError`` otherwise: the caller waits and connects again)."""
        cluster = cls(await kr8s_credentials(kubeconfig, context), kubeconfig or "in-cluster", FIELD_MANAGER)
        try:
            await cluster.request_json("GET", VERSION)
        except BaseException:
            await cluster.close()
            raise
        return cluster

    async def nodes(self) -> list[dict[str, Any]]:
        items, _ = await self.list(GVR("", "v1", "nodes"), "")
        return items

    async def hub_clusters(self) -> list[dict[str, Any]] | None:
        """When this "cluster" is a space of a spacehub hub (its server ends in ``/clusters/<space>``), the
        hub's own clusters as its placement API lists them (``GET /placement/v1/clusters``: name, readiness,
        capacity and allocatable); None for a server that is not one."""
        base, space = split_server(self.http.server)
        if space is None:
            return None
        try:
            return list((await self.request_json("GET", HUB_CLUSTERS, server=base)).get("items") or [])
        except ClusterError as error:
            if error.not_found:
                return None
            raise
