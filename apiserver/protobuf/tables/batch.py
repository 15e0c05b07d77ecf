"""Field tables of the ``batch/v1`` Job and CronJob messages (``k8s.io/api/batch/v1``, v0.37 struct tags)."""

from __future__ import annotations

from apiserver.protobuf.schema import BOOL, INT32, INT64, KEEP, LIST, PTR, STRING, TIME, Table, table

MESSAGES: dict[str, Table] = {
    "batch.Job": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "batch.JobSpec"),
        (3, "status", "batch.JobStatus"),
    ),
    "batch.CronJob": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "batch.CronJobSpec"),
        (3, "status", "batch.CronJobStatus"),
    ),
    "batch.JobSpec": table(
        (1, "parallelism", INT32, PTR),
        (2, "completions", INT32, PTR),
        (3, "activeDeadlineSeconds", INT64, PTR),
        (11, "podFailurePolicy", "batch.PodFailurePolicy", PTR),
        (16, "successPolicy", "batch.SuccessPolicy", PTR),
        (7, "backoffLimit", INT32, PTR),
        (12, "backoffLimitPerIndex", INT32, PTR),
        (13, "maxFailedIndexes", INT32, PTR),
        (4, "selector", "meta.LabelSelector", PTR),
        (5, "manualSelector", BOOL, PTR),
        (6, "template", "core.PodTemplateSpec", KEEP),
        (8, "ttlSecondsAfterFinished", INT32, PTR),
        (9, "completionMode", STRING, PTR),
        (10, "suspend", BOOL, PTR),
        (14, "podReplacementPolicy", STRING, PTR),
        (15, "managedBy", STRING, PTR),
    ),
    "batch.JobStatus": table(
        (1, "conditions", "batch.JobCondition", LIST),
        (2, "startTime", TIME, PTR),
        (3, "completionTime", TIME, PTR),
        (4, "active", INT32),
        (5, "succeeded", INT32),
        (6, "failed", INT32),
        (11, "terminating", INT32, PTR),
        (7, "completedIndexes", STRING),
        (10, "failedIndexes", STRING, PTR),
        (8, "uncountedTerminatedPods", "batch.UncountedTerminatedPods", PTR),
        (9, "ready", INT32, PTR),
    ),
    "batch.CronJobSpec": table(
        (1, "schedule", STRING, KEEP),
        (8, "timeZone", STRING, PTR),
        (2, "startingDeadlineSeconds", INT64, PTR),
        (3, "concurrencyPolicy", STRING),
        (4, "suspend", BOOL, PTR),
        (5, "jobTemplate", "batch.JobTemplateSpec", KEEP),
        (6, "successfulJobsHistoryLimit", INT32, PTR),
        (7, "failedJobsHistoryLimit", INT32, PTR),
    ),
    "batch.CronJobStatus": table(
        (1, "active", "core.ObjectReference", LIST),
        (4, "lastScheduleTime", TIME, PTR),
        (5, "lastSuccessfulTime", TIME, PTR),
    ),
    "batch.PodFailurePolicy": table(
        (1, "rules", "batch.PodFailurePolicyRule", LIST | KEEP),
    ),
    "batch.SuccessPolicy": table(
        (1, "rules", "batch.SuccessPolicyRule", LIST | KEEP),
    ),
    "batch.JobCondition": table(
        (1, "type", STRING, KEEP),
        (2, "status", STRING, KEEP),
        (3, "lastProbeTime", TIME),
        (4, "lastTransitionTime", TIME),
        (5, "reason", STRING),
        (6, "message", STRING),
    ),
    "batch.UncountedTerminatedPods": table(
        (1, "succeeded", STRING, LIST),
        (2, "failed", STRING, LIST),
    ),
    "batch.JobTemplateSpec": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "batch.JobSpec"),
    ),
    "batch.PodFailurePolicyRule": table(
        (1, "action", STRING, KEEP),
        (2, "onExitCodes", "batch.PodFailurePolicyOnExitCodesRequirement", PTR),
        (3, "onPodConditions", "batch.PodFailurePolicyOnPodConditionsPattern", LIST),
    ),
    "batch.SuccessPolicyRule": table(
        (1, "succeededIndexes", STRING, PTR),
        (2, "succeededCount", INT32, PTR),
    ),
    "batch.PodFailurePolicyOnExitCodesRequirement": table(
        (1, "containerName", STRING, PTR),
        (2, "operator", STRING, KEEP),
        (3, "values", INT32, LIST | KEEP),
    ),
    "batch.PodFailurePolicyOnPodConditionsPattern": table(
        (1, "type", STRING, KEEP),
        (2, "status", STRING, KEEP),
    ),
}
