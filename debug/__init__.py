"""Debugging from the hub: a workload space's pods, read from the clusters it placed workloads on.

``kubectl get|describe|logs|exec|attach|port-forward|delete pod`` against a space reach the clusters' pods
through the syncers' tunnels (``sync.tunnel``): the pods are never stored in the space. ``naming`` decides
which pods a space shows and under which names, ``fleet`` asks the clusters, ``http`` and ``sockets`` answer
kubectl, ``routes`` hooks it all into the hub's app (docs/architecture.md; README "Debug from the hub").
"""
