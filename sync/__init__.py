"""The hub's end of the syncer connection: the ``/syncer/v1`` API the hub mounts (docs/sync-protocol.md).

Syncers dial inward over plain HTTPS: one long-lived NDJSON stream of the desired set and its changes,
plus heartbeat and status POSTs. This package turns the placement engine's desired sets and change logs
into that stream, hands heartbeats to the inventory's health records, keeps the clusters' reported state
and returns singleton status to workload objects. It never computes placement and never talks to a
cluster (the agent is ``syncer``). It may import ``placement``, ``inventory`` and ``spaces``; never
``hub``, ``sim``, ``syncer`` or ``spacehub``.
"""
