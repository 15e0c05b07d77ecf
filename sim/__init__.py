"""Simulated workload clusters (kwok-style) for tests, demos and scale benchmarks.

``spacehub sim serve`` runs one process that serves N clusters, each a full Kubernetes API on the same
space runtime as the hub (``app``), with Pods and Nodes served (``kinds``), in-process controllers that
make workloads behave as on a real cluster (``controllers``), per-cluster credentials and kubeconfigs
(``access``), fault injection (``faults``), the pods' logs, exec, attach and port-forward (``streams``)
and, with ``--with-syncers``, a syncer per cluster (``fleet``). It reaches a hub only over HTTP, so it never
imports ``hub``, ``inventory``, ``placement`` or ``sync``.
"""
