"""Field tables of the ``policy/v1`` PodDisruptionBudget messages (``k8s.io/api/policy/v1``, v0.37 struct tags)."""

from __future__ import annotations

from apiserver.protobuf.schema import INT32, INT64, INT_OR_STRING, KEEP, LIST, PTR, STRING, TIME, MapOf, Table, table

MESSAGES: dict[str, Table] = {
    "policy.PodDisruptionBudget": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "policy.PodDisruptionBudgetSpec"),
        (3, "status", "policy.PodDisruptionBudgetStatus"),
    ),
    "policy.PodDisruptionBudgetSpec": table(
        (1, "minAvailable", INT_OR_STRING, PTR),
        (2, "selector", "meta.LabelSelector", PTR),
        (3, "maxUnavailable", INT_OR_STRING, PTR),
        (4, "unhealthyPodEvictionPolicy", STRING, PTR),
    ),
    "policy.PodDisruptionBudgetStatus": table(
        (1, "observedGeneration", INT64),
        (2, "disruptedPods", MapOf(STRING, TIME)),
        (3, "disruptionsAllowed", INT32, KEEP),
        (4, "currentHealthy", INT32, KEEP),
        (5, "desiredHealthy", INT32, KEEP),
        (6, "expectedPods", INT32, KEEP),
        (7, "conditions", "meta.Condition", LIST),
    ),
}
