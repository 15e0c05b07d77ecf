"""Inventory: the clusters — SyncTarget and Location (edge.kubestellar.io/v2alpha1), registration, credentials, health.

Owns the in-memory fleet (``clusters``), registering and removing clusters with their syncer credentials
(``registration``, ``credentials``), heartbeats and the Ready condition (``health``), the manifest that
runs a syncer in its cluster (``syncer_manifest``) and ``spacehub cluster``. It imports only ``spaces``:
never ``placement``, ``sync``, ``syncer``, ``hub``, ``sim`` or ``spacehub``.
"""
