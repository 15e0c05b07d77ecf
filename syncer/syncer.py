"""One syncer: its SyncTarget's desired set, applied to its cluster and kept there.

Owns the meaning of the stream's messages (docs/sync-protocol.md) for the cluster: apply in order,
wait for CRDs to be Established, delete only on an authoritative removal (a ``DELETE``, or absence from
a completed snapshot) and only objects carrying its marks, retry failures with backoff, and put right
what somebody else changed (drift). The cluster is reached through :class:`~syncer.cluster.Cluster`,
the hub through :class:`~syncer.hubclient.HubClient`; what it holds is remembered in the
:class:`~syncer.state.StateStore` so a restart without the hub changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from apimachinery.dottedpaths import with_values
from kubeclient.backoff import Backoff, step
from kubeclient.client import GVR, ClusterError
from kubeclient.version import spacehub_version
from syncer.autoscalers import Autoscalers, Target
from syncer.bootstrap import Bootstrap
from syncer.cluster import FIELD_MANAGER, Cluster
from syncer.drift import DriftWatcher
from syncer.driftdetail import describe, merged
from syncer.forwarding import EventForwarder
from syncer.held import (
    UNMARK,
    Held,
    content_hash,
    fingerprint,
    ident_of,
    is_ours,
    marked,
    projection,
    resource_version,
    source_of,
)
from syncer.hubclient import RECONNECT_MAX_SECONDS, HubClient, HubError
from syncer.owned import OwnedIndex
from syncer.ownership import FieldOwners
from syncer.policies import INVALID_POLICY, NOT_ADOPTED, not_adopted_message, policy_of
from syncer.reporting import Heartbeater, StatusReporter, now_rfc3339, report_bases
from syncer.state import Position, StateStore
from syncer.upsync import Upsyncer

log = logging.getLogger(__name__)
NAMESPACES = GVR("", "v1", "namespaces")
CRD_ESTABLISH_SECONDS = 30.0
TYPE_SERVED_SECONDS = 5.0
# The reason of an apply error whose type the cluster does not serve (docs/sync-protocol.md: the hub tells it apart).
CRD_MISSING = "CRDMissing"
MAX_RETRY_DELAY = 60.0
CORRECTION_BACKOFF = (1.0, 256.0)  # the first and the longest pause before correcting one object again


@dataclass
class SyncerOptions:
    status_interval: float = 0.2  # seconds between status report batches
    tunnel: bool = True  # keep the pod tunnel open (syncer/tunnel.py): the hub may read pods and debug them


class Syncer:
    def __init__(self, bootstrap: Bootstrap, cluster: Cluster, hub: HubClient, state: StateStore,
                 options: SyncerOptions | None = None) -> None:
        self.target = bootstrap.sync_target
        self.cluster = cluster
        self.hub = hub
        self.state = state
        self.options = options or SyncerOptions()
        self.position = state.position(self.target)
        self.held: dict[str, Held] = {ident: Held.from_record(ident, record)
                                      for ident, record in state.held(self.target).items()}
        self.reporter = StatusReporter(hub, self.options.status_interval, self.target)
        self.heartbeater = Heartbeater(hub, cluster, spacehub_version(), self.target)
        self.drift = DriftWatcher(cluster, self.target, self.held, self)
        self.autoscalers = Autoscalers(cluster, f"syncer {self.target}", self._autoscaled)
        self.fields = FieldOwners(self.autoscalers)
        self.owned = OwnedIndex(cluster, self.target, self._owned_changed, self._warning)
        self.reporter.associated = self.owned.summary
        self.forwarder = EventForwarder(hub, self.target, self.options.status_interval, self._report_bases)
        self.forwarder.connected = self.reporter.connected
        self.upsyncer = Upsyncer(cluster, hub, self.target, self.options.status_interval)
        self.upsyncer.connected = self.reporter.connected
        self.snapshot: set[str] | None = None  # the sources of a RESET … SYNCED in progress
        self.resumed_from = 0  # the seq the current connection started from
        self.in_sync = asyncio.Event()  # set at the first SYNCED: the fleet starts syncers in waves by it
        self.applies = 0  # objects applied to the cluster, and applies that failed (its /metrics)
        self.apply_errors = 0
        self.retry_wake = asyncio.Event()

    # --- running --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled. Never deletes anything because the hub or the cluster is unreachable."""
        await self.owned.detect_hub_space()
        for held in self.held.values():
            if held.error or held.deleting:
                held.retry_at = 0.0
            self._watch(held)
        tasks = [asyncio.create_task(self._stream_loop(), name=f"stream {self.target}"),
                 asyncio.create_task(self.heartbeater.run(), name=f"heartbeat {self.target}"),
                 asyncio.create_task(self.reporter.run(), name=f"status {self.target}"),
                 asyncio.create_task(self.forwarder.run(), name=f"events {self.target}"),
                 asyncio.create_task(self.upsyncer.run(), name=f"upsync {self.target}"),
                 asyncio.create_task(self._retry_loop(), name=f"retry {self.target}")]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await self.drift.stop()
            await self.autoscalers.stop()
            await self.owned.stop()
            await self.upsyncer.stop()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _stream_loop(self) -> None:
        backoff = Backoff(0.5, RECONNECT_MAX_SECONDS)
        while True:
            try:
                self.resumed_from = self.position.seq
                async for message in self.hub.stream(self.position.seq, self.position.epoch):
                    await self._handle(message)
                    if message["type"] == "SYNCED":
                        backoff.reset()
                log.info("syncer %s: the hub ended the stream", self.target)
            except HubError as exc:
                level = logging.ERROR if exc.code in (401, 403) else logging.WARNING
                log.log(level, "syncer %s: stream from %s failed (%s): %s", self.target, self.hub.bootstrap.hub,
                        exc.reason, exc.message)
            self.snapshot = None  # an unfinished snapshot means nothing
            self.reporter.connected.clear()
            await asyncio.sleep(backoff.next())

    # --- messages -------------------------------------------------------------------------------

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        seq = int(message.get("seq") or 0)
        if kind == "RESET":
            self.snapshot = set()
            log.info("syncer %s: full resync at seq %d", self.target, seq)
        elif kind == "UPSERT":
            await self._upsert(message["entry"], message["object"], message.get("revision"))
            if self.snapshot is not None:
                self.snapshot.add(source_of(message["entry"]))
            else:
                self._advance(seq)
        elif kind == "HOLD":
            self._hold(message["entry"], str(message.get("reason") or ""))
            if self.snapshot is not None:
                self.snapshot.add(source_of(message["entry"]))
            else:
                self._advance(seq)
        elif kind == "DELETE":
            await self._remove_source(source_of(message["entry"]), ident_of(message["entry"]))
            self._advance(seq)
        elif kind == "SYNCED":
            if self.snapshot is not None:
                await self._prune(self.snapshot)
                self.snapshot = None
                log.info("syncer %s: in sync at seq %d after a full resync (%d objects held)", self.target, seq,
                         len(self.held))
            elif not self.reporter.connected.is_set():
                log.info("syncer %s: in sync at seq %d, resumed from seq %d", self.target, seq, self.resumed_from)
            self.position = Position(seq, str(message.get("epoch") or ""))
            self.state.set_position(self.target, self.position)
            for held in self.held.values():  # the hub keeps reports in memory: tell it everything again
                held.reported = None
                if not held.deleting:
                    self.reporter.offer(held, None)
            self.reporter.connected.set()
            self.in_sync.set()
        elif kind == "UPSYNC":
            self.upsyncer.set_rules(list(message.get("rules") or []))


    # --- what its operator sees (syncer/observe.py) -----------------------------------------------

    def connected(self) -> bool:
        return self.reporter.connected.is_set()

    def seq(self) -> int:
        return self.position.seq

    def managed(self) -> int:
        return sum(1 for held in self.held.values() if not held.deleting)

    def failing(self) -> int:
        return sum(1 for held in self.held.values() if held.error and not held.deleting)

    def _advance(self, seq: int) -> None:
        self.position = Position(seq, self.position.epoch)
        self.state.set_position(self.target, self.position)

    def _save(self, held: Held) -> None:
        self.state.put(self.target, held.ident, held.record())

    def _hold(self, entry: dict[str, Any], reason: str) -> None:
        """The hub cannot make this cluster's copy (its customization failed): keep what the cluster has,
        and keep it desired, so a full resync does not delete it."""
        held = self.held.get(ident_of(entry))
        log.warning("syncer %s: keeping the cluster's copy of %s as it is: %s", self.target, ident_of(entry), reason)
        if held is not None and not held.deleting:
            held.sources.add(source_of(entry))
            self._save(held)

    async def _upsert(self, entry: dict[str, Any], obj: dict[str, Any], revision: str | None) -> None:
        ident, source = ident_of(entry), source_of(entry)
        held = self.held.get(ident)
        implicit = entry.get("entryKind") == "namespace" and bool(entry.get("implicit"))
        if implicit and held is not None and not held.deleting:
            self._runs(held, revision)
            held.sources.add(source)
            self._save(held)
            return
        applied = marked(obj, self.target, str(entry["space"]))
        digest = content_hash(applied)
        if held is not None and held.desired_hash == digest and held.live_fp and not held.error \
                and not held.deleting and held.owned:
            self._runs(held, revision)
            held.sources.add(source)  # unchanged (a hub restart, status written back): nothing to do
            held.entry = entry
            self._save(held)
            return
        if held is None:
            held = Held(ident=ident, entry=entry, applied=applied, desired_hash=digest, sources={source},
                        revision=revision)
            self.held[ident] = held
        else:
            held.entry, held.applied, held.desired_hash = entry, applied, digest
            held.sources.add(source)
            held.deleting = False
            if not implicit:
                held.owned = True
        if implicit:
            await self._ensure_namespace(held)
        else:
            await self._apply(held)
        # Only now does the cluster run (or fail to run) this revision: a report sent while the apply was under way
        # names the revision the status it carries is of.
        self._runs(held, revision)
        self._save(held)
        self._watch(held)
        if held.order == 1 and not held.error:
            await self._wait_established(held)

    def _runs(self, held: Held, revision: str | None) -> None:
        """The cluster runs ``revision`` of this object: what it runs is named by the content, not by who sent it."""
        if revision is not None and held.revision != revision:
            held.revision = revision
            self.reporter.offer(held, None)

    async def _ensure_namespace(self, held: Held) -> None:
        """An implicit Namespace: created (and then ours) if missing, never changed if the cluster has it."""
        held.in_flight = True
        try:
            live = await self.cluster.get(NAMESPACES, "", held.name)
            if live is None:
                live = await self.cluster.create(NAMESPACES, "", held.applied)
                held.owned = True
            else:
                held.owned = is_ours(live, self.target)
            self._applied(held, live)
        except ClusterError as exc:
            self._failed(held, exc)
        finally:
            held.in_flight = False

    async def _apply(self, held: Held) -> None:
        held.in_flight = True
        try:
            policy = policy_of(held.applied)
            if policy.problem is not None:
                raise ClusterError(422, INVALID_POLICY, policy.problem)
            # Before the first write (and every write of a create-only object): is it there, and whose?
            first_check = policy.create_only or (not held.live_fp and not policy.adopt)
            retain = self.fields.retained(held)
            live = None
            if first_check or retain:
                live = await self.cluster.get(held.gvr, held.namespace, held.name)
            if first_check:
                if live is not None and not policy.adopt and not is_ours(live, self.target):
                    raise ClusterError(409, NOT_ADOPTED, not_adopted_message(
                        str(held.entry.get("kind") or held.gvr.resource), held.namespace, held.name))
                if live is not None and policy.create_only:
                    self._applied(held, live, corrected=False)
                    return
            # Fields the cluster owns: created with the space's values, from then on applied as the cluster has them.
            sent = with_values(held.applied, retain, live) if retain and live is not None else held.applied
            live = await self._apply_when_served(held, sent)
            self._applied(held, live, corrected=not policy.create_only)
        except ClusterError as exc:
            self._failed(held, exc)
        finally:
            held.in_flight = False

    async def _apply_when_served(self, held: Held, sent: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply creates, so a 404 means the type is not served: right after its CRD became
        Established an API server may still be installing the endpoint. When this syncer applied that
        CRD, wait a little before failing; otherwise (a CRD nobody placed) fail at once."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TYPE_SERVED_SECONDS
        delay = 0.02
        while True:
            try:
                return await self.cluster.apply(held.gvr, held.namespace, held.name, sent)
            except ClusterError as exc:
                if not exc.not_found:
                    raise
                if loop.time() >= deadline or not self._holds_crd_of(held.gvr.group):
                    if held.gvr.group and not await self.cluster.serves(held.gvr):
                        raise ClusterError(404, CRD_MISSING, f"the cluster serves no {held.gvr}: its "
                                           "CustomResourceDefinition is not installed there") from None
                    raise
            await asyncio.sleep(delay)  # polling the cluster with a deadline
            delay = min(0.5, delay * 2)

    def _applied(self, held: Held, live: dict[str, Any], *, corrected: bool = True) -> None:
        """``corrected``: later changes in the cluster are drift to put back (not so for create-only objects,
        nor for Namespaces the cluster already had)."""
        if held.error:
            log.info("syncer %s: %s applied after earlier failures", self.target, held.describe())
        self.applies += 1
        compared = self.fields.compared(held)
        held.live_fp = fingerprint(compared, live) if held.owned and corrected else "-"
        held.baseline = projection(compared, live)
        held.applied_rv = resource_version(live)
        held.error = None
        held.retry_delay = 0.0
        self._track_owned(held, live)
        self.fields.note(held, live)
        self.reporter.offer(held, live)

    def _failed(self, held: Held, exc: ClusterError) -> None:
        self.apply_errors += 1
        held.error = f"{exc.reason}: {exc.message}" if exc.code else exc.message
        held.retry_delay = min(MAX_RETRY_DELAY, max(1.0, held.retry_delay * 2))
        held.retry_at = asyncio.get_running_loop().time() + held.retry_delay
        log.warning("syncer %s: cannot apply %s (retry in %.0fs): %s", self.target, held.describe(),
                    held.retry_delay, held.error)
        self.reporter.offer(held, None)
        self.retry_wake.set()

    def _holds_crd_of(self, group: str) -> bool:
        return bool(group) and any(h.order == 1 and not h.error and (h.applied.get("spec") or {}).get("group") == group
                                   for h in self.held.values())

    async def _wait_established(self, held: Held) -> None:
        """Custom resources of a CRD are served only once it is Established; the stream sends them next."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CRD_ESTABLISH_SECONDS
        delay = 0.02
        while True:
            try:
                live = await self.cluster.get(held.gvr, "", held.name)
            except ClusterError as exc:
                self._failed(held, exc)
                return
            conditions = ((live or {}).get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                return
            if loop.time() >= deadline:
                self._failed(held, ClusterError(0, "NotEstablished", f"CustomResourceDefinition {held.name} is "
                                                f"not Established after {CRD_ESTABLISH_SECONDS:.0f}s"))
                return
            await asyncio.sleep(delay)  # polling the cluster with a deadline, not synchronising a test
            delay = min(0.5, delay * 2)

    async def _remove_source(self, source: str, ident: str) -> None:
        held = self.held.get(ident)
        if held is None:
            return
        held.sources.discard(source)
        if held.sources:
            self._save(held)
            return
        held.deleting = True
        self.reporter.forget(ident)
        self._save(held)
        await self._delete(held)

    async def _delete(self, held: Held) -> None:
        """Delete the cluster object if it still carries our marks; keep trying while the cluster fails."""
        held.in_flight = True
        try:
            if held.owned:
                live = await self.cluster.get(held.gvr, held.namespace, held.name)
                if live is not None and is_ours(live, self.target) and policy_of(held.applied).orphan:
                    await self._orphan(held)
                elif live is not None and is_ours(live, self.target):
                    await self.cluster.delete(held.gvr, held.namespace, held.name)
                elif live is not None:
                    log.info("syncer %s: not deleting %s: it no longer carries the syncer's marks", self.target,
                             held.describe())
        except ClusterError as exc:
            self._failed(held, exc)
            self._save(held)
            return
        finally:
            held.in_flight = False
        del self.held[held.ident]
        self.owned.untrack(held.ident)
        self.state.remove(self.target, held.ident)

    async def _orphan(self, held: Held) -> None:
        """Leave the object in the cluster without the syncer's marks. Its Namespace, if the syncer made it,
        is left too (unmarked, never deleted): deleting it would take the orphan with it."""
        if held.namespace:
            ns = self.held.get(ident_of({"resource": "namespaces", "namespace": "", "name": held.namespace}))
            if ns is not None and ns.owned:
                await self.cluster.merge_patch(NAMESPACES, "", held.namespace, UNMARK)
                ns.owned, ns.live_fp = False, "-"
                self._save(ns)
        await self.cluster.merge_patch(held.gvr, held.namespace, held.name, UNMARK)
        log.info("syncer %s: %s left in the cluster without its marks (removal policy orphan)", self.target,
                 held.describe())

    async def _prune(self, snapshot: set[str]) -> None:
        """After a complete snapshot: whatever it did not name is not desired any more."""
        leaving: list[Held] = []
        for held in self.held.values():
            gone = {source for source in held.sources if source not in snapshot}
            if gone:
                held.sources -= gone
                self._save(held)
            if not held.sources and not held.deleting:
                held.deleting = True
                self.reporter.forget(held.ident)
                self._save(held)
                leaving.append(held)
        for held in sorted(leaving, key=lambda h: -h.order):  # objects, then CRDs, then Namespaces
            await self._delete(held)

    # --- retries and drift ----------------------------------------------------------------------

    async def _retry_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = [h for h in self.held.values() if (h.error or h.deleting) and not h.in_flight]
            now = loop.time()
            ready = sorted((h for h in due if h.retry_at <= now), key=lambda h: h.order if not h.deleting else -h.order)
            for held in ready:
                if held.deleting:
                    await self._delete(held)
                    continue
                if held.entry.get("entryKind") == "namespace" and held.entry.get("implicit"):
                    await self._ensure_namespace(held)
                else:
                    await self._apply(held)
                if held.order == 1 and not held.error:
                    await self._wait_established(held)
                self._save(held)
            self.retry_wake.clear()
            pending = [h.retry_at for h in self.held.values() if (h.error or h.deleting) and not h.in_flight]
            timeout = max(0.05, min(pending) - loop.time()) if pending else None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self.retry_wake.wait()

    def _watch(self, held: Held) -> None:
        if held.owned:
            self.drift.ensure(held.gvr)
            spec = held.applied.get("spec")
            if isinstance(spec, dict) and "replicas" in spec:
                self.autoscalers.start()  # only what sets spec.replicas can have it taken by an HPA: watch them then

    def observed(self, gvr: GVR, live: dict[str, Any]) -> None:
        """A managed object as the cluster has it now (from the watch): report status, spot drift."""
        meta = live.get("metadata") or {}
        held = self.held.get(ident_of({"group": gvr.group, "resource": gvr.resource,
                                       "namespace": meta.get("namespace") or "", "name": meta.get("name") or ""}))
        if held is None or held.deleting or not held.owned:
            return
        self._track_owned(held, live)
        self.fields.note(held, live)
        self.reporter.offer(held, live)
        if held.in_flight or held.error or not held.live_fp:
            return
        rv = resource_version(live)
        if rv and rv <= held.applied_rv:
            return  # our own write, or older than it
        if self.fields.basis_changed(held):
            self._schedule_reapply(held)  # an HPA came or went since the last apply: not drift, a new basis
            return
        compared = self.fields.compared(held)
        if fingerprint(compared, live) != held.live_fp:
            self._drifted(held, compared, live)

    def _drifted(self, held: Held, compared: dict[str, Any], live: dict[str, Any]) -> None:
        """Somebody changed fields the syncer applies: note which and who, then put them back (or, in drift mode
        ReportOnly, take the cluster's values as the new normal so that only later changes are reported)."""
        report_only = policy_of(held.applied).report_only
        now = projection(compared, live)
        entries = describe(held.baseline or projection(compared, compared), live, now, FIELD_MANAGER,
                           now_rfc3339(), corrected=not report_only)
        held.drift = merged(held.drift, entries)
        if not report_only:
            self._schedule_correction(held, "changed")
            return
        log.warning("syncer %s: drift: %s changed in the cluster (%s); reported, not put back (drift mode ReportOnly)",
                    self.target, held.describe(), ", ".join(f"{e['path']} by {e['manager'] or 'unknown'}"
                                                            for e in entries))
        held.live_fp, held.baseline = content_hash(now), now
        held.applied_rv = resource_version(live)
        self._save(held)
        self.reporter.offer(held, live)

    # --- what workloads own, and Events about them ------------------------------------------------

    def _track_owned(self, held: Held, live: dict[str, Any]) -> None:
        if self.owned.is_workload(held.gvr.group, held.gvr.resource):
            self.owned.track(held.ident, held.namespace, str((live.get("metadata") or {}).get("uid") or ""))

    def _owned_changed(self, ident: str) -> None:
        held = self.held.get(ident)
        if held is not None and not held.deleting:
            self.reporter.offer(held, None)

    def _warning(self, ident: str, event: dict[str, Any]) -> None:
        if ident in self.held and not self.held[ident].deleting:
            self.forwarder.offer(ident, event)

    def _report_bases(self, ident: str) -> list[dict[str, Any]]:
        held = self.held.get(ident)
        return report_bases(held) if held is not None else []

    def vanished(self, gvr: GVR, namespace: str, name: str) -> None:
        """A managed object left the watch (deleted, or its marks removed): put it back."""
        held = self.held.get(ident_of({"group": gvr.group, "resource": gvr.resource, "namespace": namespace,
                                       "name": name}))
        if held is not None and not held.deleting and held.owned and not held.in_flight and not held.error:
            self._schedule_correction(held, "deleted or unmarked")

    def _schedule_correction(self, held: Held, what: str) -> None:
        held.in_flight = True  # one correction at a time; the watch events it causes are ours
        asyncio.get_running_loop().create_task(self._correct(held, what))

    async def _correct(self, held: Held, what: str) -> None:
        # Something in the cluster fighting us (a mutating webhook, another controller) must not turn
        # into a hot loop: corrections of one object back off exponentially.
        delay = step(held.corrections, *CORRECTION_BACKOFF) if held.corrections else 0.0
        if delay:
            await asyncio.sleep(delay)
        held.in_flight = False
        if held.deleting or held.ident not in self.held:
            return
        held.corrections += 1
        held.last_correction = now_rfc3339()
        log.warning("syncer %s: drift: %s was %s in the cluster; re-applying the hub's version (correction %d)",
                    self.target, held.describe(), what, held.corrections)
        await self._apply(held)
        self._save(held)

    # --- fields the cluster owns (syncer/ownership.py) --------------------------------------------

    def _autoscaled(self, target: Target) -> None:
        """An HPA now targets an object, or none does any more: apply it again on the new basis."""
        namespace, group, kind, name = target
        for held in self.held.values():
            if held.namespace == namespace and held.gvr.group == group and held.name == name \
                    and held.entry.get("kind") == kind and held.owned and not held.deleting and held.live_fp:
                scaled = self.autoscalers.scaled(*target)
                log.info("syncer %s: %s is %s a HorizontalPodAutoscaler in the cluster", self.target, held.describe(),
                         "scaled by" if scaled else "no longer scaled by")
                self._schedule_reapply(held)

    def _schedule_reapply(self, held: Held) -> None:
        if held.in_flight:
            return
        held.in_flight = True  # the apply's own watch events are not drift
        asyncio.get_running_loop().create_task(self._reapply(held))

    async def _reapply(self, held: Held) -> None:
        held.in_flight = False
        if held.deleting or held.ident not in self.held:
            return
        await self._apply(held)
        self._save(held)
