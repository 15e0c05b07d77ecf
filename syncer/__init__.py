"""Syncer: the per-cluster agent that dials inward to the hub and applies its desired set."""
