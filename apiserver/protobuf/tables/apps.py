"""Field tables of the ``apps/v1`` Deployment messages (``k8s.io/api/apps/v1``, v0.37 struct tags)."""

from __future__ import annotations

from apiserver.protobuf.schema import BOOL, INT32, INT64, INT_OR_STRING, KEEP, LIST, PTR, STRING, TIME, Table, table

MESSAGES: dict[str, Table] = {
    "apps.Deployment": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "apps.DeploymentSpec"),
        (3, "status", "apps.DeploymentStatus"),
    ),
    "apps.DeploymentSpec": table(
        (1, "replicas", INT32, PTR),
        (2, "selector", "meta.LabelSelector", PTR | KEEP),
        (3, "template", "core.PodTemplateSpec", KEEP),
        (4, "strategy", "apps.DeploymentStrategy"),
        (5, "minReadySeconds", INT32),
        (6, "revisionHistoryLimit", INT32, PTR),
        (7, "paused", BOOL),
        (9, "progressDeadlineSeconds", INT32, PTR),
    ),
    "apps.DeploymentStatus": table(
        (1, "observedGeneration", INT64),
        (2, "replicas", INT32),
        (3, "updatedReplicas", INT32),
        (7, "readyReplicas", INT32),
        (4, "availableReplicas", INT32),
        (5, "unavailableReplicas", INT32),
        (9, "terminatingReplicas", INT32, PTR),
        (6, "conditions", "apps.DeploymentCondition", LIST),
        (8, "collisionCount", INT32, PTR),
    ),
    "apps.DeploymentStrategy": table(
        (1, "type", STRING),
        (2, "rollingUpdate", "apps.RollingUpdateDeployment", PTR),
    ),
    "apps.DeploymentCondition": table(
        (1, "type", STRING, KEEP),
        (2, "status", STRING, KEEP),
        (6, "lastUpdateTime", TIME),
        (7, "lastTransitionTime", TIME),
        (4, "reason", STRING),
        (5, "message", STRING),
    ),
    "apps.RollingUpdateDeployment": table(
        (1, "maxUnavailable", INT_OR_STRING, PTR),
        (2, "maxSurge", INT_OR_STRING, PTR),
    ),
}
