"""Placement: resolves EdgePlacements into SinglePlacementSlices and per-cluster desired sets.

The engine computes from plain objects and never knows whether they came from SQL or a watch; the
service feeds it from the store and the inventory and writes what it resolves; the REST API and its
commands show it. It imports ``inventory`` and ``spaces`` only: never ``sync``, ``syncer``, ``hub``,
``sim`` or ``spacehub``.
"""
