"""What one cluster's report says about one placed object: pending, applied, ready, failed or stale, and why.

Pure. Readiness follows how kubectl and the workload controllers judge it: a Deployment is ready when its
available and updated replicas reach the replicas it wants, a StatefulSet or ReplicaSet when its ready
replicas do, a DaemonSet when every scheduled pod is ready and updated, a Job when it completed, anything
with conditions when none of ``Ready``/``Available``/``Complete``/``Established`` is False (and one of them
is True when present), and a kind without status as soon as it is applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from status.reports import Report

Phase = Literal["Pending", "Applied", "Ready", "Failed", "Stale"]
READINESS_CONDITIONS = ("Ready", "Available", "Complete", "Established")
# The kinds whose readiness is judged by their replicas or completion (the rules of ``_ready`` below): a move
# waits for their new copies to be Ready (placement.moves); any other kind moves at once.
KINDS_WITH_READINESS = frozenset({"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job"})
# Worst first: what a summary shows when clusters disagree.
SEVERITY: dict[str, int] = {"Failed": 0, "Stale": 1, "Pending": 2, "Applied": 3, "Ready": 4}


@dataclass(frozen=True)
class ClusterState:
    phase: Phase
    current: bool  # the cluster runs the object's current content
    message: str = ""
    condition: Mapping[str, Any] | None = None  # the condition that explains a not-ready phase


def cluster_state(kind: str, spec: Mapping[str, Any], report: Report | None, *, current_revision: str | None,
                  stale: bool, copy_error: str | None = None) -> ClusterState:
    """The state of one object on one cluster. ``spec`` is the object's spec in its space (what the
    cluster was asked to run); ``stale`` is true when the cluster's syncer stopped sending heartbeats;
    ``copy_error`` says why the cluster does not get this object's copy (its customization failed, another
    space's copy won a conflict)."""
    current = report is not None and report.applied_revision is not None and \
        report.applied_revision == current_revision
    if copy_error is not None:
        return ClusterState("Failed", current, f"{copy_error} (the cluster keeps another copy)")
    if stale:
        return ClusterState("Stale", current, "the cluster's syncer sends no heartbeats")
    if report is None:
        return ClusterState("Pending", False, "no report from the cluster yet")
    if report.error:
        return ClusterState("Failed", current, report.error)
    ready, message, condition = _unobserved(report) or _ready(kind, spec, report.status or {})
    waiting = _waiting(report.associated)
    if waiting:
        message = f"{message}; {waiting}" if message else waiting
    if ready and (current or report.applied_revision is None):
        return ClusterState("Ready", current, message, condition)
    if ready:
        message = message or "the cluster runs an earlier version of the object"
    return ClusterState("Applied", current, message, condition)


def _ready(kind: str, spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[bool, str, Any]:
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    failing = next((c for c in conditions if c.get("type") in READINESS_CONDITIONS and c.get("status") == "False"),
                   None)
    if failing is not None:
        return False, _condition_text(failing), failing
    replicas = spec.get("replicas", 1) if isinstance(spec.get("replicas", 1), int) else 1
    if kind == "Deployment":
        return _at_least(status, replicas, "availableReplicas", "updatedReplicas")
    if kind in ("StatefulSet", "ReplicaSet"):
        return _at_least(status, replicas, "readyReplicas")
    if kind == "DaemonSet":
        desired = int(status.get("desiredNumberScheduled") or 0)
        return _at_least(status, desired, "numberReady", "updatedNumberScheduled")
    if kind == "Job":
        if any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions):
            return True, "", None
        failed = next((c for c in conditions if c.get("type") == "Failed" and c.get("status") == "True"), None)
        if failed is not None:
            return False, _condition_text(failed), failed
        return False, f"{int(status.get('succeeded') or 0)} of {spec.get('completions', 1)} completions", None
    present = [c for c in conditions if c.get("type") in READINESS_CONDITIONS]
    if present and not any(c.get("status") == "True" for c in present):
        unknown = present[0]
        return False, _condition_text(unknown), unknown
    return True, "", None


def _unobserved(report: Report) -> tuple[bool, str, Any] | None:
    """Not ready while the status describes an older generation than the cluster's object has (as ``kubectl
    rollout status`` waits for ``observedGeneration``): a status read right after an update is the old one's."""
    observed = (report.status or {}).get("observedGeneration")
    if isinstance(observed, int) and isinstance(report.generation, int) and observed < report.generation:
        return False, f"observedGeneration {observed}/{report.generation}", None
    return None


def _at_least(status: Mapping[str, Any], wanted: int, *fields: str) -> tuple[bool, str, Any]:
    for name in fields:
        have = int(status.get(name) or 0)
        if have < wanted:
            return False, f"{name} {have}/{wanted}", None
    return True, "", None


def _condition_text(condition: Mapping[str, Any]) -> str:
    reason = condition.get("reason") or ""
    message = condition.get("message") or ""
    head = f"{condition.get('type')}={condition.get('status')}"
    return f"{head} ({reason}): {message}" if reason and message else f"{head} {reason or message}".strip()


def _waiting(associated: Mapping[str, Any] | None) -> str:
    """The newest waiting or terminated container state of the workload's pods, as the syncer summarised it."""
    pods = (associated or {}).get("pods") or {}
    for key in ("waiting", "terminated"):
        state = pods.get(key)
        if isinstance(state, Mapping) and state.get("reason"):
            text = f"pod {state.get('pod', '')}: {state['reason']}"
            return f"{text}: {state['message']}" if state.get("message") else text
    return ""


def worst(states: Mapping[str, ClusterState]) -> tuple[str, ClusterState] | None:
    """The cluster whose state is worst (then the first by name), or None when every one is Ready."""
    ranked = sorted(states.items(), key=lambda item: (SEVERITY[item[1].phase], item[0]))
    if not ranked or ranked[0][1].phase == "Ready":
        return None
    return ranked[0]
