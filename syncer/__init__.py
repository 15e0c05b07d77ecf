"""The syncer agent: one per workload cluster, dialling inward to the hub (docs/sync-protocol.md).

It applies its SyncTarget's desired set to its cluster through the standard Kubernetes API (kr8s),
corrects drift, reports status back, and survives long disconnections without deleting anything.
Many agents can share one process and one event loop (``spacehub sim serve --with-syncers``).
It speaks to the hub only over HTTP, so it must never import the hub's packages (hub, inventory,
placement, sync); it may use ``spaces`` helpers.
"""
