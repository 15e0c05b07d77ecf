"""Spaces: logical clusters served with a Kubernetes API.

Owns the log-structured store, the resource registry (built-in kinds and, later, CRDs) and the
HTTP API that kubectl talks to under ``/clusters/<space>``. It must never know about placement or
syncers; those build on top of it through the store and the watch.
"""
