"""batch/v1: Jobs (selector and label generation) and CronJobs (with upstream's cron schedule and
time zone checks).
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import invalid, not_supported, required, validate_annotations, validate_labels
from apimachinery.nested import dicts, get
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.labelselectors import selector_matches
from apiserver.builtin.strategies.objectfields import (
    Obj,
    child,
    immutable,
    metadata_of,
    name_of,
    nonnegative,
    set_default,
    spec_of,
)
from apiserver.builtin.strategies.pods import (
    default_pod_template,
    validate_pod_template,
    validate_selector_and_template,
)

JOB_RESTART_POLICIES = ("OnFailure", "Never")
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
_INT32_MAX = 2**31 - 1


class JobStrategy(BuiltinStrategy):
    has_status = True

    def default(self, obj: Obj) -> None:
        spec = child(obj, "spec")
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        set_default(spec, "parallelism", 1)
        set_default(spec, "backoffLimit", _INT32_MAX if spec.get("backoffLimitPerIndex") is not None else 6)
        set_default(spec, "completionMode", "NonIndexed")
        set_default(spec, "suspend", False)
        # With a pod failure policy, a replacement must wait until the old pod has fully failed.
        set_default(spec, "podReplacementPolicy",
                 "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
        for rule in dicts(get(spec, "podFailurePolicy", "rules")):
            for pattern in dicts(rule.get("onPodConditions")):
                set_default(pattern, "status", "True")
        default_pod_template(spec.get("template"))
        self._label_from_template(obj)

    @staticmethod
    def _label_from_template(obj: Obj) -> None:
        """A Job without labels of its own takes its pod template's."""
        template_labels = get(obj, "spec", "template", "metadata", "labels")
        if isinstance(template_labels, dict) and template_labels and not get(obj, "metadata", "labels"):
            metadata_of(obj)["labels"] = dict(template_labels)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        spec = child(obj, "spec")
        if spec.get("manualSelector") is not True:
            self._generate_selector(obj, spec)
        # Upstream defaults again when it reads the stored Job back, so a Job that had no labels
        # (because its template had none) answers with the generated ones.
        self._label_from_template(obj)

    @staticmethod
    def _generate_selector(obj: Obj, spec: Obj) -> None:
        uid, name = str(get(obj, "metadata", "uid") or ""), name_of(obj)
        labels = child(child(child(spec, "template"), "metadata"), "labels")
        # Labels the user set are kept; if they conflict with the generated selector, validation says so.
        for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
            labels.setdefault(key, name)
        for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
            labels.setdefault(key, uid)
        match_labels = child(child(spec, "selector"), "matchLabels")
        match_labels.setdefault(CONTROLLER_UID_LABEL, uid)

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes: list[Cause] = []
        for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                    "ttlSecondsAfterFinished"):
            causes += nonnegative(spec, f"spec.{key}", key)
        if spec.get("completionMode") not in ("Indexed", "NonIndexed"):
            causes.append(not_supported("spec.completionMode", spec.get("completionMode"),
                                        ("NonIndexed", "Indexed")))
        elif spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
            causes.append(required("spec.completions", "when completion mode is Indexed"))
        causes += validate_selector_and_template(spec, None, JOB_RESTART_POLICIES)
        if spec.get("manualSelector") is not True:
            causes += self._validate_generated_selector(obj, spec)
        return causes

    @staticmethod
    def _validate_generated_selector(obj: Obj, spec: Obj) -> list[Cause]:
        labels = get(spec, "template", "metadata", "labels")
        if not isinstance(labels, dict):
            return []
        uid, name = str(get(obj, "metadata", "uid") or ""), name_of(obj)
        causes = []
        for key, expected in ((LEGACY_CONTROLLER_UID_LABEL, uid), (LEGACY_JOB_NAME_LABEL, name),
                              (CONTROLLER_UID_LABEL, uid), (JOB_NAME_LABEL, name)):
            path = f"spec.template.metadata.labels[{key}]"
            if key not in labels:
                causes.append(required(path, f"must be '{expected}'"))
            elif labels[key] != expected:
                causes.append(invalid(path, labels, f"must be '{expected}'"))
        selector = spec.get("selector")
        if selector is not None and not selector_matches(selector, {CONTROLLER_UID_LABEL: uid}):
            causes.append(invalid("spec.selector", selector, "`selector` not auto-generated"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        spec, old_spec = spec_of(new), spec_of(old)
        causes += immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector")
        causes += immutable(spec.get("completionMode"), old_spec.get("completionMode"),
                             "spec.completionMode")
        if spec.get("completionMode") != "Indexed":
            causes += immutable(spec.get("completions"), old_spec.get("completions"), "spec.completions")
        # A suspended Job has not started pods, so its template may still be adjusted.
        if old_spec.get("suspend") is not True:
            causes += immutable(spec.get("template"), old_spec.get("template"), "spec.template")
        return causes


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (low, high, names) of minute, hour, day of month, month and day of week, as robfig/cron bounds them.
_CRON_FIELDS: tuple[tuple[int, int, Mapping[str, int]], ...] = (
    (0, 59, {}), (0, 23, {}), (1, 31, {}),
    (1, 12, {m: i + 1 for i, m in enumerate(_MONTHS)}),
    (0, 6, {d: i for i, d in enumerate(_WEEKDAYS)}),
)
_CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


def _cron_value(text: str, names: Mapping[str, int]) -> int | str:
    if text.lower() in names:
        return names[text.lower()]
    if text.isdigit():
        return int(text)
    return f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'


def _cron_field_error(expr: str, low: int, high: int, names: Mapping[str, int]) -> str | None:
    """robfig/cron's error for one comma-separated part of a field, as upstream surfaces it."""
    for part in expr.split(","):
        range_part, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) <= 0):
            return f"step of range should be a positive number: {part}"
        if range_part in ("*", "?"):
            continue
        bounds = range_part.split("-")
        if len(bounds) > 2:
            return f"too many hyphens: {part}"
        values = [_cron_value(b, names) for b in bounds]
        for value in values:
            if isinstance(value, str):
                return value
        start, end = values[0], values[-1]
        assert isinstance(start, int) and isinstance(end, int)
        if start < low:
            return f"beginning of range ({start}) below minimum ({low}): {part}"
        if end > high:
            return f"end of range ({end}) above maximum ({high}): {part}"
        if start > end:
            return f"beginning of range ({start}) beyond end of range ({end}): {part}"
    return None


def cron_schedule_error(schedule: str) -> str | None:
    """Why ``cron.ParseStandard`` rejects ``schedule``, or None when it parses."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        _, _, text = text.partition(" ")
        text = text.strip()
    if text.startswith("@"):
        if text in _CRON_DESCRIPTORS:
            return None
        if text.startswith("@every "):
            duration = text.removeprefix("@every ").strip()
            if _GO_DURATION.match(duration):
                return None
            return f'failed to parse duration {text}: time: invalid duration "{duration}"'
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    for expr, (low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        error = _cron_field_error(expr, low, high, names)
        if error:
            return error
    return None


def _zone_error(zone: Any) -> str | None:
    if not isinstance(zone, str) or not zone:
        return "timeZone must be nil or non-empty string"
    if zone.lower() == "local":
        return "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    if not re.match(r"^[A-Za-z.\-_0-9+]{1,14}(/[A-Za-z.\-_0-9+]{1,14})*$", zone):
        return f"unknown time zone {zone}"
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        # Without a tz database on this machine every zone would look unknown; judge syntax only then.
        return f"unknown time zone {zone}" if zoneinfo.available_timezones() else None
    return None


class CronJobStrategy(BuiltinStrategy):
    has_status = True

    def default(self, obj: Obj) -> None:
        spec = child(obj, "spec")
        set_default(spec, "concurrencyPolicy", "Allow")
        set_default(spec, "suspend", False)
        set_default(spec, "successfulJobsHistoryLimit", 3)
        set_default(spec, "failedJobsHistoryLimit", 1)
        job_spec = get(spec, "jobTemplate", "spec")
        if isinstance(job_spec, dict):
            default_pod_template(job_spec.get("template"))

    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        name = name_of(obj)
        # Jobs are named <cronjob>-<11-char timestamp suffix> and must stay DNS-1035 labels.
        if len(name) > 52:
            causes.append(invalid("metadata.name", name, "must be no more than 52 characters"))
        spec = spec_of(obj)
        schedule = spec.get("schedule")
        if not schedule:
            causes.append(required("spec.schedule"))
        else:
            error = cron_schedule_error(str(schedule))
            if error:
                causes.append(invalid("spec.schedule", schedule, error))
            if "TZ" in str(schedule):
                causes.append(invalid("spec.schedule", schedule,
                                      "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
        if spec.get("timeZone") is not None and (error := _zone_error(spec.get("timeZone"))):
            causes.append(invalid("spec.timeZone", spec.get("timeZone"), error))
        policy = spec.get("concurrencyPolicy")
        if policy not in ("Allow", "Forbid", "Replace"):
            causes.append(not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
        for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
            causes += nonnegative(spec, f"spec.{key}", key)
        job = spec.get("jobTemplate")
        if not isinstance(job, dict):
            return [*causes, required("spec.jobTemplate")]
        meta = job.get("metadata") if isinstance(job.get("metadata"), dict) else {}
        causes += validate_labels(meta.get("labels"), "spec.jobTemplate.metadata.labels")
        causes += validate_annotations(meta.get("annotations"), "spec.jobTemplate.metadata.annotations")
        job_spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
        for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"):
            causes += nonnegative(job_spec, f"spec.jobTemplate.spec.{key}", key)
        causes += validate_pod_template(job_spec.get("template"), "spec.jobTemplate.spec.template",
                                        JOB_RESTART_POLICIES)
        return causes
