"""Jobs: run pods to completion within ``parallelism`` until ``completions`` succeeded, or fail.

Keeps ``min(parallelism, completions - succeeded)`` pods active (work-queue Jobs without
``completions``: ``parallelism`` until one succeeds); ``Indexed`` Jobs run each index once
(``<job>-<index>-<random>``, the completion-index label and annotation, ``completedIndexes``). Pods
finish as the pod lifecycle decides (exit code 0 unless ``sim.spacehub.io/exit-code`` says otherwise).
More failures than ``backoffLimit`` fail the Job (``FailureTarget`` and ``Failed``,
``BackoffLimitExceeded``); enough successes complete it (``SuccessCriteriaMet`` and ``Complete``,
``CompletionsReached``, ``completionTime``), which ``kubectl wait --for=condition=complete`` sees. A
suspended Job has its active pods deleted and a ``Suspended`` condition.
"""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.store import Key
from apiserver.writeoptions import now_rfc3339
from sim.controllers.base import BURST, Context, Controller
from sim.controllers.cache import JOBS, PODS
from sim.controllers.util import Obj, as_int, condition, deleting, get, labels, phase, pod_active, pod_ready

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
_COMPLETE_MESSAGE = "Reached expected number of succeeded pods"
_BACKOFF_MESSAGE = "Job has reached the specified backoff limit"


def _finished(job: Obj) -> bool:
    return any((condition(job, kind) or {}).get("status") == "True" for kind in ("Complete", "Failed"))


def _index(pod: Obj) -> int | None:
    value = labels(pod).get(COMPLETION_INDEX) or get(pod, "metadata", "annotations", COMPLETION_INDEX)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def compress_indexes(indexes: set[int]) -> str:
    """``0,1,2,5`` → ``0-2,5``, as ``status.completedIndexes`` writes them."""
    parts: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def _conditions(job: Obj, *new: tuple[str, str, str]) -> list[Obj]:
    now = now_rfc3339()
    kept = [c for c in get(job, "status", "conditions") or [] if c.get("type") not in {t for t, _, _ in new}]
    return kept + [{"type": kind, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
                    "reason": reason, "message": message} for kind, reason, message in new]


class JobController(Controller):
    watches = (JOBS, PODS)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "jobs")

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if key.resource == JOBS:
            if new is not None:
                self.add(key)
            return
        self.enqueue_owner(key, new or old or {}, "Job", JOBS)

    async def handle(self, key: Any) -> bool:
        job = self.cache.get(key)
        if job is None or deleting(job) or _finished(job):
            return False
        spec = job.get("spec") or {}
        pods = [(k, p) for k, p in self.cache.owned(job, PODS) if not deleting(p)]
        active = [(k, p) for k, p in pods if pod_active(p)]
        succeeded = [p for _, p in pods if phase(p) == "Succeeded"]
        failed = [p for _, p in pods if phase(p) == "Failed"]
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions") if isinstance(spec.get("completions"), int) else None
        parallelism = as_int(spec.get("parallelism"), 1)
        done_indexes = {i for i in map(_index, succeeded) if i is not None}
        n_succeeded = len(done_indexes) if indexed else len(succeeded)
        status: Obj = dict(job.get("status") or {})
        if not status.get("startTime") and spec.get("suspend") is not True:
            status["startTime"] = now_rfc3339()
        conditions: list[Obj] | None = None
        if len(failed) > as_int(spec.get("backoffLimit"), 6):
            await self.delete_all(k for k, _ in active)
            active = []
            conditions = _conditions(job, ("FailureTarget", "BackoffLimitExceeded", _BACKOFF_MESSAGE),
                                     ("Failed", "BackoffLimitExceeded", _BACKOFF_MESSAGE))
        elif (completions is not None and n_succeeded >= completions) or (
                completions is None and n_succeeded > 0 and not active):
            await self.delete_all(k for k, _ in active)
            active = []
            conditions = _conditions(job, ("SuccessCriteriaMet", "CompletionsReached", _COMPLETE_MESSAGE),
                                     ("Complete", "CompletionsReached", _COMPLETE_MESSAGE))
            status["completionTime"] = now_rfc3339()
        elif spec.get("suspend") is True:
            await self.delete_all(k for k, _ in active)
            active = []
            if (condition(job, "Suspended") or {}).get("status") != "True":
                conditions = _conditions(job, ("Suspended", "JobSuspended", "Job suspended"))
        else:
            active = await self._run(key, job, active, completions, parallelism, n_succeeded, done_indexes, indexed)
        if conditions is not None:
            status["conditions"] = conditions
        status.update(active=len(active), ready=sum(1 for _, p in active if pod_ready(p)), succeeded=n_succeeded,
                      failed=len(failed), terminating=0, uncountedTerminatedPods={})
        for name in ("active", "succeeded", "failed"):
            if status[name] == 0:
                del status[name]
        if indexed:
            status["completedIndexes"] = compress_indexes(done_indexes)
        await self.write_status(key, job, status)
        return False

    async def _run(self, key: Key, job: Obj, active: list[tuple[Key, Obj]], completions: int | None,
                   parallelism: int, n_succeeded: int, done: set[int], indexed: bool) -> list[tuple[Key, Obj]]:
        """Create or delete pods so that the wanted number is active; returns the active pods."""
        if completions is None:
            want = parallelism if n_succeeded == 0 else 0
        else:
            want = max(0, min(parallelism, completions - n_succeeded))
        if len(active) > want:
            surplus = sorted(active, key=lambda kp: str(get(kp[1], "metadata", "creationTimestamp") or ""))[want:]
            await self.delete_all(k for k, _ in surplus)
        elif len(active) < want and self.namespace_active(key.space, key.namespace):
            template = get(job, "spec", "template")
            creations = []
            if indexed and completions is not None:
                busy = {i for i in (_index(p) for _, p in active) if i is not None}
                todo = [i for i in range(completions) if i not in done and i not in busy][:min(want - len(active),
                                                                                                  BURST)]
                for i in todo:
                    creations.append(self.create_pod(
                        key.space, job, template, generate_name=f"{key.name}-{i}-",
                        labels={COMPLETION_INDEX: str(i)}, annotations={COMPLETION_INDEX: str(i)}))
            else:
                creations = [self.create_pod(key.space, job, template, generate_name=f"{key.name}-")
                             for _ in range(min(want - len(active), BURST))]
            await asyncio.gather(*creations)
        return [(k, p) for k, p in self.cache.owned(job, PODS) if pod_active(p)]
