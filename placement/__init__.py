"""Placement: resolves EdgePlacements into SinglePlacementSlices and per-cluster desired sets.

Computes from plain objects and never knows whether they came from SQL or a watch.
"""
