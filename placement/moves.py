"""Make-before-break moves: a cluster that loses an object keeps its copy until the clusters that have it now
run it Ready.

Whatever changes an object's destinations — a placement edit, a Location or SyncTarget relabelled,
``spacehub.io/target-clusters``, a drain, a cluster excluded — the engine logs a DELETE for each cluster that
loses it. :meth:`Moves.look`, called in the same turn of the event loop as the change (so no stream can send
that DELETE first), holds the copy (:meth:`placement.engine.PlacementEngine.hold`) when the object still has
destinations, its kind has a readiness rule and its placements do not opt out (``spec.moveStrategy:
BreakBeforeMake``). :meth:`Moves.settle`, after every drain, lets a copy go once every destination's copy is
Ready (``copy_ready``, the status path's readiness rules), or once ``spec.moveTimeoutSeconds`` have passed
(``timed_out`` listeners record a Warning Event), or when the move no longer applies (the object is gone or
came back, the cluster was deleted). Gaining clusters get the object at once, as before: only the removal
waits. A cluster that cannot be reached removes nothing until its syncer returns, as before.

Holds are kept in memory by each hub process, decided from what every process reads alike (the engine's
inputs, the stored PlacementStatus, whose ``Leaving`` entries a restarted hub holds again: :meth:`resume`);
time comes from ``clock`` (monotonic seconds), injectable for tests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from placement.engine import PlacementEngine
from placement.model import ObjectRef

log = logging.getLogger(__name__)

MAKE_BEFORE_BREAK, BREAK_BEFORE_MAKE = "MakeBeforeBreak", "BreakBeforeMake"
DEFAULT_MOVE_TIMEOUT = 600.0  # seconds: spec.moveTimeoutSeconds when no placement sets it


@dataclass(frozen=True)
class MovePolicy:
    """What the placements selecting an object ask of its moves."""

    make_before_break: bool
    timeout: float  # seconds a leaving copy is kept at most


def move_policy(specs: Sequence[Mapping[str, Any]]) -> MovePolicy:
    """How an object the placements of these specs select moves: make-before-break unless every one says
    ``moveStrategy: BreakBeforeMake``, a leaving copy kept at most the shortest ``moveTimeoutSeconds`` of them."""
    timeouts = [float(s["moveTimeoutSeconds"]) for s in specs
                if isinstance(s.get("moveTimeoutSeconds"), int) and s["moveTimeoutSeconds"] >= 0]
    opted_out = bool(specs) and all(s.get("moveStrategy") == BREAK_BEFORE_MAKE for s in specs)
    return MovePolicy(not opted_out, min(timeouts, default=DEFAULT_MOVE_TIMEOUT))


class Moves:
    def __init__(self, engine: PlacementEngine, clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.clock = clock
        # Set by the hub: whether ``target``'s copy of an object is Ready (None: its kind has no readiness rule,
        # so it moves at once), and the policy of the placements selecting an object.
        self.copy_ready: Callable[[ObjectRef, str], bool | None] = lambda _ref, _target: None
        self.policy: Callable[[ObjectRef], MovePolicy] = lambda _ref: MovePolicy(True, DEFAULT_MOVE_TIMEOUT)
        # Told of each leaving copy let go because its time ran out: (object, cluster, clusters not Ready).
        self.timed_out: list[Callable[[ObjectRef, str, list[str]], None]] = []
        self._since: dict[tuple[ObjectRef, str], float] = {}  # when each leaving copy started leaving
        # Copies held since the last settle: judged from the next one on. The change that made them leave (a drain,
        # a new choice) has not yet given the gaining clusters their new shares, and the stored PlacementStatus
        # still shows the old ones Ready: judged now, a drained cluster's copy would go at once.
        self._fresh: set[tuple[ObjectRef, str]] = set()
        engine.watch_deletes()  # from now on the engine collects the DELETEs it logs

    def look(self) -> None:
        """Hold the copies that the engine's latest inputs took away from clusters, where a move waits."""
        waits: dict[ObjectRef, list[str] | None] = {}  # per object: its destinations when a move waits, else None
        for target, entry in self.engine.watch_deletes():
            ref = entry.ref
            if entry.kind == "namespace" or (ref, target) in self._since:
                continue
            if ref not in waits:
                waits[ref] = self._waits(ref)
            destinations = waits[ref]
            if destinations is None or target in destinations:
                continue
            self.engine.hold(ref, target)
            if self.engine.keeps_leaving(ref, target):
                self._since[(ref, target)] = self.clock()
                self._fresh.add((ref, target))
                log.info("%s keeps %s until %s run it Ready", target, ref, ", ".join(destinations))

    def resume(self, leaving: list[tuple[ObjectRef, str]]) -> None:
        """Hold again the copies a PlacementStatus stored as ``Leaving`` (by an earlier hub process) whose move still
        waits, so that a restarted hub does not delete them at the syncers' resync; their time starts again."""
        for ref, target in leaving:
            destinations = self._waits(ref)
            if (ref, target) in self._since or destinations is None or target in destinations:
                continue
            self.engine.hold(ref, target)
            if self.engine.keeps_leaving(ref, target):
                self._since[(ref, target)] = self.clock()

    def _waits(self, ref: ObjectRef) -> list[str] | None:
        """The object's destinations if a cluster losing it must wait for them, else None: it is placed nowhere
        now (deleted, or no longer selected), its placements opt out, or its kind has no readiness rule."""
        destinations = self.engine.object_destinations(ref)
        if not destinations or not self.policy(ref).make_before_break or \
                self.copy_ready(ref, destinations[0]) is None:
            return None
        return destinations

    def settle(self) -> bool:
        """Let go of the leaving copies whose move is done or whose time ran out; returns whether some are
        still held (the caller looks again soon)."""
        self.look()
        now = self.clock()
        for ref, target in self.engine.leaving_copies():
            since = self._since.setdefault((ref, target), now)
            destinations = self.engine.object_destinations(ref)
            policy = self.policy(ref)
            waiting = [d for d in destinations if (ref, target) in self._fresh or not self.copy_ready(ref, d)]
            if destinations and target not in destinations and self.engine.has_target(target) and \
                    policy.make_before_break and waiting and now - since < policy.timeout:
                continue
            self.engine.let_go(ref, target)
            del self._since[(ref, target)]
            log.info("%s lets %s go (%s)", target, ref, f"not Ready on {', '.join(waiting)}" if waiting else
                     "its destinations run it Ready" if destinations and target not in destinations else "moved back")
            if waiting and destinations and target not in destinations and now - since >= policy.timeout:
                for listener in self.timed_out:
                    listener(ref, target, waiting)
        self.engine.watch_deletes()  # the DELETEs just logged for copies let go are no new moves
        self._fresh.clear()
        return bool(self._since)
