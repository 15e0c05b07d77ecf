"""Table columns of the workload kinds: apps/v1 (Deployment, ReplicaSet, StatefulSet, DaemonSet) and batch/v1."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from apimachinery.durations import human_duration, parse_time
from apiserver.builtin.tables.columns import (
    Obj,
    age_col,
    at,
    bool_ptr,
    col,
    field_doc,
    format_labels,
    format_selector,
    has_condition,
    int_at,
    list_at,
    name_col,
    selector_string,
    since,
    str_at,
    template_cols,
)
from apiserver.resourcetypes import Column


def _ready_of_desired(o: Obj) -> str:
    return f"{int_at(o, 'status', 'readyReplicas')}/{int_at(o, 'spec', 'replicas')}"


def _deployment() -> list[Column]:
    doc = "io.k8s.api.apps.v1.DeploymentStatus"
    return [
        name_col(),
        col("Ready", "string", _ready_of_desired, "Number of the pod with ready state"),
        col("Up-to-date", "string", lambda o: int_at(o, "status", "updatedReplicas"),
             field_doc(doc, "updatedReplicas")),
        col("Available", "string", lambda o: int_at(o, "status", "availableReplicas"),
             field_doc(doc, "availableReplicas")),
        age_col(),
        *template_cols("spec", "template", "spec",
                        selector=lambda o: selector_string(at(o, "spec", "selector")),
                        selector_doc=field_doc("io.k8s.api.apps.v1.DeploymentSpec", "selector")),
    ]


def _replicaset() -> list[Column]:
    status_doc = "io.k8s.api.apps.v1.ReplicaSetStatus"
    return [
        name_col(),
        col("Desired", "integer", lambda o: int_at(o, "spec", "replicas"),
             field_doc("io.k8s.api.apps.v1.ReplicaSetSpec", "replicas")),
        col("Current", "integer", lambda o: int_at(o, "status", "replicas"), field_doc(status_doc, "replicas")),
        col("Ready", "integer", lambda o: int_at(o, "status", "readyReplicas"),
             field_doc(status_doc, "readyReplicas")),
        age_col(),
        *template_cols("spec", "template", "spec",
                        selector=lambda o: format_selector(at(o, "spec", "selector")),
                        selector_doc=field_doc("io.k8s.api.apps.v1.ReplicaSetSpec", "selector")),
    ]


def _statefulset() -> list[Column]:
    return [
        name_col(),
        col("Ready", "string", _ready_of_desired, "Number of the pod with ready state"),
        age_col(),
        *template_cols("spec", "template", "spec"),
    ]


def _daemonset() -> list[Column]:
    doc = "io.k8s.api.apps.v1.DaemonSetStatus"

    def status_int(field: str) -> Callable[[Obj], int]:
        return lambda o: int_at(o, "status", field)

    return [
        name_col(),
        col("Desired", "integer", status_int("desiredNumberScheduled"), field_doc(doc, "desiredNumberScheduled")),
        col("Current", "integer", status_int("currentNumberScheduled"), field_doc(doc, "currentNumberScheduled")),
        col("Ready", "integer", status_int("numberReady"), field_doc(doc, "numberReady")),
        col("Up-to-date", "integer", status_int("updatedNumberScheduled"),
             field_doc(doc, "updatedNumberScheduled")),
        col("Available", "integer", status_int("numberAvailable"), field_doc(doc, "numberAvailable")),
        col("Node Selector", "string",
             lambda o: format_labels(at(o, "spec", "template", "spec", "nodeSelector")),
             field_doc("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
        age_col(),
        *template_cols("spec", "template", "spec",
                        selector=lambda o: format_selector(at(o, "spec", "selector")),
                        selector_doc=field_doc("io.k8s.api.apps.v1.DaemonSetSpec", "selector")),
    ]


# --- batch/v1 -------------------------------------------------------------------------------------


def _job_status(o: Obj) -> str:
    if has_condition(o, "Complete"):
        return "Complete"
    if has_condition(o, "Failed"):
        return "Failed"
    if str_at(o, "metadata", "deletionTimestamp"):
        return "Terminating"
    for condition, shown in (("Suspended", "Suspended"), ("FailureTarget", "FailureTarget"),
                             ("SuccessCriteriaMet", "SuccessCriteriaMet")):
        if has_condition(o, condition):
            return shown
    return "Running"


def _job_completions(o: Obj) -> str:
    succeeded = int_at(o, "status", "succeeded")
    completions = at(o, "spec", "completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        return f"{succeeded}/{completions}"
    parallelism = int_at(o, "spec", "parallelism")
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(o: Obj) -> str:
    start = parse_time(str_at(o, "status", "startTime"))
    if start is None:
        return ""
    end = parse_time(str_at(o, "status", "completionTime")) or datetime.now(UTC)
    return human_duration((end - start).total_seconds())


def _job() -> list[Column]:
    return [
        name_col(),
        col("Status", "string", _job_status, "Status of the job."),
        col("Completions", "string", _job_completions, field_doc("io.k8s.api.batch.v1.JobStatus", "succeeded")),
        col("Duration", "string", _job_duration, "Time required to complete the job."),
        age_col(),
        *template_cols("spec", "template", "spec",
                        selector=lambda o: format_selector(at(o, "spec", "selector")),
                        selector_doc=field_doc("io.k8s.api.batch.v1.JobSpec", "selector")),
    ]


def _cronjob() -> list[Column]:
    spec_doc, status_doc = "io.k8s.api.batch.v1.CronJobSpec", "io.k8s.api.batch.v1.CronJobStatus"

    def last_schedule(o: Obj) -> str:
        return since(o, "status", "lastScheduleTime") if str_at(o, "status", "lastScheduleTime") else "<none>"

    return [
        name_col(),
        col("Schedule", "string", lambda o: str_at(o, "spec", "schedule"), field_doc(spec_doc, "schedule")),
        col("Timezone", "string", lambda o: str_at(o, "spec", "timeZone") or "<none>",
             field_doc(spec_doc, "timeZone")),
        col("Suspend", "boolean", lambda o: bool_ptr(at(o, "spec", "suspend")),
             field_doc(spec_doc, "suspend")),
        col("Active", "integer", lambda o: len(list_at(o, "status", "active")), field_doc(status_doc, "active")),
        col("Last Schedule", "string", last_schedule, field_doc(status_doc, "lastScheduleTime")),
        age_col(),
        *template_cols("spec", "jobTemplate", "spec", "template", "spec",
                        selector=lambda o: format_selector(
                            at(o, "spec", "jobTemplate", "spec", "selector")),
                        selector_doc=field_doc("io.k8s.api.batch.v1.JobSpec", "selector")),
    ]


# The kinds of this module and the columns each shows.
BUILDERS: dict[tuple[str, str], Callable[[], Iterable[Column]]] = {
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replicaset,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
}
