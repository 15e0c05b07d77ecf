"""Inventory: SyncTarget and Location objects (edge.kubestellar.io/v2alpha1) and cluster registration."""
