"""Simulated workload clusters (kwok-style) for tests, demos and scale benchmarks.

``spacehub sim serve`` runs one process that serves N clusters, each a full Kubernetes API built from
the hub's own machinery (``app``), with Pods and Nodes served (``kinds``), in-process controllers that
make workloads behave as on a real cluster (``controllers``), per-cluster credentials and kubeconfigs
(``access``) and fault injection (``faults``).
"""
