"""Staged, health-gated rollouts: the pure state machine of one EdgePlacement's ``spec.rollout``.

A rollout takes the placement's objects from the revisions every cluster runs (``previous``, per object) to
their newest revisions (``revision``, per object), stage by stage. A cluster belongs to the first stage whose
``clusterSelector`` selects it (an empty selector takes every cluster left; a cluster no stage selects joins
the last stage). Within a stage at most ``maxUnavailable`` clusters are updating at once; once every cluster
of the stage is Ready the stage soaks ``soakSeconds`` and the next one starts (a ``Manual`` stage first waits
for an approval). A cluster that fails, or is not Ready ``progressDeadlineSeconds`` after it was given the
new revision, stops the rollout: ``Pause`` holds every cluster where it is, ``Rollback`` returns the updated
clusters to the previous revisions.

Which revision a cluster runs (:meth:`Rollout.pinned`) follows from the state alone, so every hub process
that reads the stored state (``status.rollout``) pins the same clusters. Time comes from the caller
(``now``, seconds since the epoch), so tests drive it with a clock of their own. Never does I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from apimachinery.errors import StatusError
from apimachinery.selectors import LabelSelector, label_selector_from_object

Phase = Literal["Progressing", "Paused", "WaitingForApproval", "Failed", "RolledBack", "Complete"]
PHASES: tuple[Phase, ...] = ("Progressing", "Paused", "WaitingForApproval", "Failed", "RolledBack", "Complete")
DEFAULT_PROGRESS_DEADLINE = 600.0  # seconds, as a Deployment's progressDeadlineSeconds
DEFAULT_HISTORY_LIMIT = 10


@dataclass(frozen=True)
class Stage:
    name: str
    selector: LabelSelector
    max_unavailable: int | str  # clusters of the stage updating at once, or a percentage ("25%")
    soak_seconds: float
    manual: bool

    def budget(self, members: int) -> int:
        """How many of the stage's ``members`` may update at once: percentages round down, at least 1."""
        value = self.max_unavailable
        if isinstance(value, str):
            value = int(members * int(value.rstrip("%")) / 100)
        return max(1, value)


@dataclass(frozen=True)
class RolloutSpec:
    stages: tuple[Stage, ...]
    progress_deadline: float
    rollback: bool  # onFailure: Rollback (else Pause)
    gate: str | None  # CEL, per cluster, besides Ready


@dataclass(frozen=True)
class Health:
    """How one updated cluster is doing with the new revisions (all of the placement's objects)."""

    state: Literal["Ready", "Failed", "Waiting"]
    message: str = ""


@dataclass(frozen=True)
class Event:
    """An Event for the placement (and its objects): ``Normal`` or ``Warning``, a reason, a message."""

    type: str
    reason: str
    message: str


def history_limit(spec: Mapping[str, Any]) -> int:
    value = spec.get("revisionHistoryLimit")
    return value if isinstance(value, int) and value >= 1 else DEFAULT_HISTORY_LIMIT


def parse_rollout(spec: Mapping[str, Any]) -> RolloutSpec | None:
    """The placement's ``spec.rollout`` (None: all at once, as without it). The CRD schema and
    :mod:`placement.rollout_validation` refused what is malformed; what an older object may still hold is
    read leniently (a bad selector selects nothing)."""
    raw = spec.get("rollout")
    if not isinstance(raw, Mapping):
        return None
    stages = []
    for item in raw.get("stages") or []:
        if not isinstance(item, Mapping):
            continue
        try:
            selector = label_selector_from_object(item.get("clusterSelector") or {})
        except StatusError:
            selector = LabelSelector(nothing=True)
        max_unavailable = item.get("maxUnavailable", 1)
        if not isinstance(max_unavailable, int | str) or isinstance(max_unavailable, bool):
            max_unavailable = 1
        stages.append(Stage(str(item.get("name") or f"stage-{len(stages) + 1}"), selector, max_unavailable,
                            float(item.get("soakSeconds") or 0), item.get("approval") == "Manual"))
    if not stages:
        stages.append(Stage("all", LabelSelector(), "100%", 0.0, False))
    deadline = raw.get("progressDeadlineSeconds")
    gate = raw.get("gate")
    return RolloutSpec(tuple(stages), float(deadline) if isinstance(deadline, int) else DEFAULT_PROGRESS_DEADLINE,
                       raw.get("onFailure") == "Rollback", gate if isinstance(gate, str) and gate else None)


def stages_of(spec: RolloutSpec, clusters: Mapping[str, Mapping[str, str]]) -> dict[str, int]:
    """Each cluster's stage index: the first stage that selects it, else the last stage."""
    last = len(spec.stages) - 1
    return {name: next((i for i, s in enumerate(spec.stages) if s.selector.matches(labels)), last)
            for name, labels in clusters.items()}


@dataclass
class Rollout:
    """One placement's rollout. ``objects``: per object key, [revision rolled out, previous revision or None
    (the object is new: every cluster gets it at once)]. ``updated``: clusters given the new revisions, with
    when; ``ready``: those that reported Ready since."""

    objects: dict[str, list[int | None]]
    phase: Phase = "Progressing"
    stage: int = 0
    updated: dict[str, float] = field(default_factory=dict)
    ready: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    soak_from: float | None = None
    approved: int = -1  # the highest stage index approved by hand
    paused_by_user: bool = False
    message: str = ""
    control: int = 0  # bumped by each pause, resume or approve (the lease holder takes a higher one in)

    @property
    def revision(self) -> int:
        """The newest revision the rollout takes out (of any of its objects)."""
        return max((r for r, _ in self.objects.values() if r is not None), default=0)

    def pinned(self, key: str, cluster: str, stage_of_cluster: int | None) -> int | None:
        """The revision ``cluster`` runs of the object ``key`` (None: not rolled out by this placement)."""
        revisions = self.objects.get(key)
        if revisions is None:
            return None
        new, previous = revisions
        if previous is None or self.phase == "Complete":
            return new
        if self.phase == "RolledBack":
            return previous
        if cluster in self.updated or (stage_of_cluster is not None and stage_of_cluster < self.stage):
            return new
        return previous

    # --- changes ----------------------------------------------------------------------------------

    def renew(self, newest: Mapping[str, int]) -> bool:
        """Objects got new revisions (``newest``: each object's newest): start over from the first stage, the
        clusters not reached running the revisions the last complete rollout left (as Deployments do).
        Returns whether anything changed."""
        changed = False
        objects: dict[str, list[int | None]] = {}
        for key, number in newest.items():
            old = self.objects.get(key)
            if old is None:
                objects[key] = [number, None]
                changed = True
            elif old[0] != number:
                stable = old[0] if self.phase == "Complete" else old[1]
                objects[key] = [number, stable]
                changed = True
            else:
                objects[key] = old
        changed = changed or objects.keys() != self.objects.keys()
        if not changed:
            return False
        # An object new to the placement goes everywhere at once; only a new revision of one clusters run
        # starts the stages over.
        restart = any(objects[k] != self.objects.get(k) and objects[k][1] is not None for k in objects)
        self.objects = objects
        if restart:
            self.phase, self.stage, self.soak_from, self.approved = "Progressing", 0, None, -1
            self.updated, self.ready, self.failed = {}, set(), {}
            self.paused_by_user, self.message = False, ""
        return True

    def step(self, spec: RolloutSpec, stage_of: Mapping[str, int], health: Callable[[str], Health],
             now: float) -> list[Event]:
        """Advance as far as the clusters' health and the time allow; returns the Events of what happened."""
        events: list[Event] = []
        if self.phase in ("Complete", "RolledBack", "Failed") or self.paused_by_user or \
                (self.phase == "Paused" and self.failed):
            return events
        if self.stage == 0 and not self.updated and self.phase == "Progressing" and not self.message:
            self.message = f"rolling out revision {self.revision}"
            events.append(Event("Normal", "RolloutStarted", f"revision {self.revision}: stage "
                                f"{spec.stages[0].name} first"))
        if self._check_failures(spec, stage_of, health, now, events):
            return events
        while self.stage < len(spec.stages):
            stage = spec.stages[self.stage]
            members = sorted(c for c, i in stage_of.items() if i == self.stage)
            if stage.manual and self.approved < self.stage:
                self.phase = "WaitingForApproval"
                self.message = f"stage {stage.name} waits for approval (spacehub rollout approve)"
                return events
            self.phase = "Progressing"
            for cluster in members:
                if cluster in self.updated and cluster not in self.ready and health(cluster).state == "Ready":
                    self.ready.add(cluster)
            updating = [c for c in members if c in self.updated and c not in self.ready]
            room = stage.budget(len(members)) - len(updating)
            for cluster in [c for c in members if c not in self.updated][:max(0, room)]:
                self.updated[cluster] = now
                if health(cluster).state == "Ready":  # already runs it (e.g. undo to the same content)
                    self.ready.add(cluster)
            if not all(c in self.ready for c in members):
                waiting = [c for c in members if c not in self.ready]
                self.message = f"stage {stage.name}: {len(members) - len(waiting)} of {len(members)} clusters " \
                               f"ready; waiting for {', '.join(waiting[:3])}"
                return events
            if self.soak_from is None:
                self.soak_from = now
            if now - self.soak_from < stage.soak_seconds:
                self.message = f"stage {stage.name}: every cluster ready, soaking {stage.soak_seconds:g}s"
                return events
            events.append(Event("Normal", "StageComplete", f"revision {self.revision}: stage {stage.name} complete"))
            self.stage += 1
            self.soak_from = None
        self.phase = "Complete"
        self.message = f"revision {self.revision} runs on every cluster"
        events.append(Event("Normal", "RolloutComplete", self.message))
        return events

    def _check_failures(self, spec: RolloutSpec, stage_of: Mapping[str, int], health: Callable[[str], Health],
                        now: float, events: list[Event]) -> bool:
        for cluster in sorted(self.updated):
            if cluster in self.ready or cluster not in stage_of:
                continue
            h = health(cluster)
            late = h.state != "Ready" and now - self.updated[cluster] > spec.progress_deadline
            if h.state == "Failed" or late:
                why = h.message or "not ready"
                if late and h.state != "Failed":
                    why = f"not ready within {spec.progress_deadline:g}s: {why}"
                self.failed[cluster] = why
        if not self.failed:
            return False
        first = sorted(self.failed)[0]
        self.message = f"cluster {first} failed: {self.failed[first]}"
        events.append(Event("Warning", "RolloutFailed", f"revision {self.revision}: {self.message}"))
        if spec.rollback:
            self.phase = "RolledBack"
            events.append(Event("Warning", "RolledBack", f"the updated clusters ({', '.join(sorted(self.updated))}) "
                                                         "return to the previous revision"))
        else:
            self.phase = "Paused"
            events.append(Event("Warning", "RolloutPaused", "every cluster stays where it is until `spacehub "
                                                            "rollout resume` or `undo`"))
        return True

    def pause(self) -> None:
        self.paused_by_user = True
        self.phase = "Paused"
        self.message = "paused by spacehub rollout pause"

    def resume(self, now: float) -> None:
        """Clear a pause (by hand, or after a failure: the failed clusters keep the new revision and get a new
        deadline from ``now``)."""
        self.paused_by_user = False
        if self.phase == "Paused":
            self.phase = "Progressing"
            self.message = "resumed"
        for cluster in self.failed:
            self.updated[cluster] = now
        self.failed = {}

    def approve(self) -> None:
        self.approved = self.stage
        self.phase = "Progressing"

    # --- stored form (status.rollout) ----------------------------------------------------------------

    def to_status(self, spec: RolloutSpec, stage_of: Mapping[str, int],
                  object_names: Mapping[str, str]) -> dict[str, Any]:
        """``status.rollout``: what users (and the UI) read, and what another hub process resumes from."""
        stages = []
        for i, stage in enumerate(spec.stages):
            members = sorted(c for c, s in stage_of.items() if s == i)
            stages.append({"name": stage.name, "clusters": len(members),
                           "updated": sum(1 for c in members if self._has_new(c, i)),
                           "ready": sum(1 for c in members if c in self.ready or (i < self.stage and
                                                                                  self.phase != "RolledBack")),
                           "failed": sum(1 for c in members if c in self.failed)})
        clusters = []
        for cluster in sorted(stage_of):
            i = stage_of[cluster]
            entry: dict[str, Any] = {"name": cluster, "stage": spec.stages[i].name,
                                     "revision": self._cluster_revision(cluster, i),
                                     "phase": self._cluster_phase(cluster, i)}
            if cluster in self.updated:
                entry["updatedAt"] = _rfc3339(self.updated[cluster])
            if cluster in self.failed:
                entry["message"] = self.failed[cluster]
            clusters.append(entry)
        out: dict[str, Any] = {
            "revision": self.revision,
            "stage": spec.stages[min(self.stage, len(spec.stages) - 1)].name,
            "stageIndex": self.stage, "phase": self.phase, "message": self.message,
            "stages": stages, "clusters": clusters,
            "objects": [{"object": object_names.get(k, k), "key": k, "revision": r, **({"previousRevision": p}
                                                                                      if p is not None else {})}
                        for k, (r, p) in sorted(self.objects.items())],
            "approvedStage": self.approved, "pausedByUser": self.paused_by_user, "controlGeneration": self.control,
        }
        if self.soak_from is not None:
            out["soakStartedAt"] = _rfc3339(self.soak_from)
        return out

    def _has_new(self, cluster: str, stage_index: int) -> bool:
        if self.phase == "RolledBack":
            return False
        return self.phase == "Complete" or cluster in self.updated or stage_index < self.stage

    def _cluster_revision(self, cluster: str, stage_index: int) -> int:
        pinned = [self.pinned(k, cluster, stage_index) for k in self.objects]
        return max((p for p in pinned if p is not None), default=0)

    def _cluster_phase(self, cluster: str, stage_index: int) -> str:
        if cluster in self.failed:
            return "Failed"
        if not self._has_new(cluster, stage_index):
            return "Waiting"
        return "Ready" if cluster in self.ready or stage_index < self.stage or self.phase == "Complete" \
            else "Updating"

    @classmethod
    def from_status(cls, stored: Mapping[str, Any]) -> Rollout | None:
        """The state a hub process stored (None: nothing usable)."""
        try:
            objects = {str(o["key"]): [int(o["revision"]), (int(o["previousRevision"]) if "previousRevision" in o
                                                             else None)] for o in stored.get("objects") or []}
            phase = stored.get("phase")
            if phase not in PHASES:
                return None
            updated, ready, failed = {}, set(), {}
            for c in stored.get("clusters") or []:
                if "updatedAt" in c:
                    updated[str(c["name"])] = _epoch(str(c["updatedAt"]))
                if c.get("phase") == "Ready" and "updatedAt" in c:
                    ready.add(str(c["name"]))
                if c.get("phase") == "Failed":
                    failed[str(c["name"])] = str(c.get("message") or "failed")
            soak = stored.get("soakStartedAt")
            return cls(objects, phase, int(stored.get("stageIndex") or 0), updated, ready, failed,
                       _epoch(soak) if isinstance(soak, str) else None, int(stored.get("approvedStage", -1)),
                       bool(stored.get("pausedByUser")), str(stored.get("message") or ""),
                       int(stored.get("controlGeneration") or 0))
        except (KeyError, TypeError, ValueError):
            return None


def _rfc3339(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _epoch(text: str) -> float:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC).timestamp()
