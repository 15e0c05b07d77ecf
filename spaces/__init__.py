"""Spaces: logical clusters served with a Kubernetes API.

Owns the log-structured store, the resource registry (built-in kinds and CRDs), the HTTP API that
kubectl talks to under ``/clusters/<space>``, the runtime every space server shares, kubeconfigs and
the client, and the output every command shares. It must never import placement, inventory, the sync
server, the syncer, the hub or the simulator; those build on top of it through the store and the watch.
"""
