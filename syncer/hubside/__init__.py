"""The hub side of the syncer connection: the ``/syncer/v1`` API the hub mounts (docs/sync-protocol.md).

Syncers dial inward over plain HTTPS: one long-lived NDJSON stream of the desired set and its changes,
plus heartbeat and status POSTs. This package turns the placement engine's desired sets and change logs
into that stream, records heartbeats and readiness on SyncTargets, keeps the clusters' reported state
and returns singleton status to workload objects. It never computes placement and never talks to a
cluster; the cluster-side agent lives elsewhere in ``syncer``.
"""

from syncer.hubside.hub import SyncerHub
from syncer.hubside.routes import streams_unlimited, syncer_routes

__all__ = ["SyncerHub", "streams_unlimited", "syncer_routes"]
