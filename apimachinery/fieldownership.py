"""The annotations that say who owns an object's fields once it is placed, shared by the hub (which sets them on a
cluster's copy from a downsync test's ``retainFields`` and ``driftMode``) and the syncer (which obeys them)."""

from __future__ import annotations

RETAIN_ANNOTATION = "spacehub.io/retain-fields"  # comma-separated dotted paths the cluster owns after creation
DRIFT_MODE_ANNOTATION = "spacehub.io/drift-mode"
DRIFT_MODES = ("Correct", "ReportOnly")
# "false": an object a HorizontalPodAutoscaler targets keeps the space's spec.replicas (by default the HPA's stand).
HPA_OWNS_REPLICAS_ANNOTATION = "spacehub.io/hpa-owns-replicas"
