"""Field table of ``scheduling.k8s.io/v1`` PriorityClass (``k8s.io/api/scheduling/v1``, v0.37 struct tags)."""

from __future__ import annotations

from apiserver.protobuf.schema import BOOL, INT32, KEEP, PTR, STRING, Table, table

MESSAGES: dict[str, Table] = {
    "scheduling.PriorityClass": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "value", INT32, KEEP),
        (3, "globalDefault", BOOL),
        (4, "description", STRING),
        (5, "preemptionPolicy", STRING, PTR),
    ),
}
