"""Status conditions as kube's controllers keep them (``metav1.Condition``-like entries in ``status.conditions``)."""

from __future__ import annotations

from typing import Any

from apiserver.writeoptions import now_rfc3339

Obj = dict[str, Any]


def new_condition(kind: str, status: str, reason: str, message: str, *, update_time: bool = False,
                  probe_time: bool = False) -> Obj:
    now = now_rfc3339()
    out: Obj = {"type": kind, "status": status}
    if probe_time:
        out["lastProbeTime"] = now
    if update_time:
        out["lastUpdateTime"] = now
    out.update(lastTransitionTime=now, reason=reason, message=message)
    return out


def set_condition(conditions: list[Obj], cond: Obj) -> list[Obj]:
    """``SetDeploymentCondition``-style: unchanged status and reason keep the old entry; a status that
    did not change keeps its transition time; the updated condition moves to the end."""
    current = next((c for c in conditions if c.get("type") == cond["type"]), None)
    if current is not None and current.get("status") == cond["status"] and current.get("reason") == cond.get(
            "reason"):
        return conditions
    if current is not None and current.get("status") == cond["status"] and "lastTransitionTime" in current:
        cond = {**cond, "lastTransitionTime": current["lastTransitionTime"]}
    return [c for c in conditions if c.get("type") != cond["type"]] + [cond]
