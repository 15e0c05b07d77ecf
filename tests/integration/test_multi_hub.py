"""Several hub processes on one PostgreSQL database form one hub (skipped where PostgreSQL is absent).

Three ``spacehub hub serve`` processes share a data dir (CA, admin credentials) and a database schema, each
on its own port, as an operator runs them behind a load balancer. Writes through one are seen by watches
and syncer streams served by another; one process holds the lease and runs the controllers and placement
writes, and a standby takes over when it is killed.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.harness import Hub, hub_processes, wait_for
from tests.integration.test_sync_stream import (
    apply,
    configmap,
    deployment,
    placement,
    post,
    register,
    report,
    workload,
)

pytestmark = pytest.mark.postgres
CM = "/clusters/{space}/api/v1/namespaces/default/configmaps"


@pytest.fixture
def hubs(pg_url: str, tmp_path: Path) -> Iterator[list[Hub]]:
    with hub_processes(pg_url, tmp_path, 3) as started:
        yield started


def leading(hubs: list[Hub]) -> list[Hub]:
    """The running processes whose /metrics say they hold the lease."""
    found = []
    for hub in hubs:
        if hub.proc is None:
            continue
        with hub.client(timeout=5) as c:
            if re.search(r"^spacehub_leader 1\.0$", c.get("/metrics").text, re.M):
                found.append(hub)
    return found


def leader_of(hubs: list[Hub]) -> Hub:
    """The one process that holds the lease (fails unless exactly one does)."""
    found = leading(hubs)
    assert len(found) == 1, f"{len(found)} processes lead"
    return found[0]


def test_writes_through_one_process_are_watched_in_order_through_another(hubs: list[Hub]) -> None:
    writer, watcher, lister = hubs
    writer.create_space("shared")
    path = CM.format(space="shared")
    with watcher.client() as c:
        start = wait_for(lambda: (c.get(path).json().get("metadata") or {}).get("resourceVersion"),
                         message="space on the watcher")  # a 404 Status until the watcher knows the space
    events: list[dict[str, Any]] = []
    done = threading.Event()

    def watch() -> None:
        with httpx.Client(base_url=watcher.base_url, verify=watcher.ssl_context(), timeout=60,
                          headers={"Authorization": f"Bearer {watcher.token}"}) as c, \
                c.stream("GET", path, params={"watch": "true", "resourceVersion": start}) as r:
            for line in r.iter_lines():
                if line:
                    events.append(orjson.loads(line))
                if len(events) == 32:
                    break
        done.set()

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    for i in range(30):
        writer.kubectl("create", "configmap", f"cm-{i}", f"--from-literal=i={i}", "-n", "default", space="shared")
    writer.kubectl("label", "configmap", "cm-7", "seen=yes", "-n", "default", space="shared")
    writer.kubectl("delete", "configmap", "cm-3", "-n", "default", space="shared")
    assert done.wait(30), f"the watch through another process saw {len(events)} of 32 events"
    kinds = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert kinds == [("ADDED", f"cm-{i}") for i in range(30)] + [("MODIFIED", "cm-7"), ("DELETED", "cm-3")]
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions)
    listed = lister.kubectl("get", "configmaps", "-n", "default", "-o", "name", space="shared").stdout.split()
    assert sorted(listed) == sorted([f"configmap/cm-{i}" for i in range(30) if i != 3] + ["configmap/kube-root-ca.crt"])
    leader_of(hubs)


class ResumingSyncer:
    """A syncer's stream client that applies messages to a dict and, when its hub process dies, resumes
    from its last seq and epoch on the next process, checking the protocol's ordering as it goes."""

    def __init__(self, hubs: list[Hub], target: str, token: str, space: str) -> None:
        self.hubs, self.target, self.token, self.space = hubs, target, token, space
        self.state: dict[str, dict[str, Any]] = {}
        self.seq, self.epoch = 0, ""
        self.snapshots = 0
        self.problems: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        turn = 0
        while not self._stop.is_set():
            alive = [h for h in self.hubs if h.proc is not None and h.proc.poll() is None]
            hub = alive[turn % len(alive)] if alive else None
            turn += 1
            if hub is None:
                return
            try:
                self._follow(hub)
            except (httpx.HTTPError, OSError, ValueError):
                time.sleep(0.2)

    def _follow(self, hub: Hub) -> None:
        params = {"since": self.seq, **({"epoch": self.epoch} if self.epoch else {})}
        with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(), timeout=httpx.Timeout(10, read=60),
                          headers={"Authorization": f"Bearer {self.token}"}) as c, \
                c.stream("GET", f"/syncer/v1/targets/{self.target}/stream", params=params) as r:
            if r.status_code != 200:
                raise ValueError(r.status_code)
            snapshot: dict[str, dict[str, Any]] | None = None
            for line in r.iter_lines():
                if self._stop.is_set():
                    return
                if not line:
                    continue
                m = orjson.loads(line)
                kind, seq = m["type"], int(m["seq"])
                if kind == "RESET":
                    snapshot = {}
                    self.snapshots += 1
                elif kind in ("UPSERT", "DELETE", "HOLD"):
                    if snapshot is None and seq <= self.seq:
                        self.problems.append(f"{kind} seq {seq} after {self.seq} from port {hub.port}")
                    entry = m["entry"]
                    if entry["space"] != self.space or entry["resource"] != "configmaps":
                        continue
                    held = snapshot if snapshot is not None else self.state
                    if kind == "UPSERT":
                        held[entry["name"]] = m["object"].get("data") or {}
                    elif kind == "DELETE":
                        held.pop(entry["name"], None)
                elif kind == "SYNCED":
                    if snapshot is not None:
                        self.state, snapshot = snapshot, None
                    self.epoch = m["epoch"]
                if snapshot is None and seq < self.seq and kind != "SYNCED":
                    self.problems.append(f"{kind} went back from seq {self.seq} to {seq}")
                if snapshot is None:
                    self.seq = max(self.seq, seq) if kind != "SYNCED" else seq


def test_leader_killed_during_a_burst_standby_takes_over_and_every_cluster_converges(
        hubs: list[Hub], tmp_path: Path) -> None:
    first = hubs[0]
    first.create_space("burst")
    tokens = {f"mh-{i}": register(first, tmp_path, f"mh-{i}", fleet="burst") for i in range(4)}
    apply(first, "burst", placement("everywhere", {"fleet": "burst"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                                         "namespaces": ["default"],
                                                                         "labelSelectors": [
        {"matchLabels": {"burst": "yes"}}]}]))
    leader = leader_of(hubs)
    followers = [h for h in hubs if h is not leader]
    syncers = [ResumingSyncer(hubs[i % 3:] + hubs[:i % 3], name, token, "burst")
               for i, (name, token) in enumerate(tokens.items())]
    try:
        expected: dict[str, dict[str, str]] = {}
        with followers[0].client() as c:
            for i in range(60):
                body = configmap(f"b-{i}", "default", round=str(i))
                body["metadata"]["labels"] = {"burst": "yes"}
                assert c.post(CM.format(space="burst"), json=body).status_code == 201
                expected[f"b-{i}"] = {"round": str(i)}
                if i == 20:
                    leader.kill()
                if i % 10 == 9:  # changes and deletions in the burst too
                    r = c.delete(f"{CM.format(space='burst')}/b-{i - 5}")
                    assert r.status_code == 200, r.text
                    del expected[f"b-{i - 5}"]
        killed_at = time.monotonic()
        wait_for(lambda: leading(followers), timeout=10, message="a standby to take the lease")  # none until then
        new_leader = leader_of(followers)
        took = time.monotonic() - killed_at
        for s in syncers:
            wait_for(lambda s=s: s.state == expected, timeout=30,
                     message=f"{s.target} to converge (has {len(s.state)} of {len(expected)})")
            assert s.problems == []
        # The placement's status is written only by the lease holder: the new one writes it.
        def placement_counts() -> bool:
            with new_leader.client() as c:
                status = c.get("/clusters/burst/apis/edge.kubestellar.io/v2alpha1/edgeplacements/everywhere"
                               ).json().get("status") or {}
            return status.get("selectedObjectCount") == len(expected) and status.get("destinationCount") == 4
        wait_for(placement_counts, timeout=20, message="the new leader to write the placement's status")
        assert took < 10
        # At least one syncer was streaming from the killed process and resumed on another (a snapshot).
        assert any(s.snapshots >= 2 for s in syncers), [s.snapshots for s in syncers]
    finally:
        for s in syncers:
            s.stop()


def test_no_acknowledged_write_is_lost_when_a_process_is_killed_under_load(hubs: list[Hub]) -> None:
    target, witness = hubs[1], hubs[2]
    target.create_space("load")
    path = CM.format(space="load")
    acknowledged: list[str] = []
    lock = threading.Lock()

    def write(worker: int) -> None:
        with target.client(timeout=10) as c:
            for i in range(1000):
                name = f"w{worker}-{i}"
                try:
                    r = c.post(path, json={"metadata": {"name": name}, "data": {"w": str(worker)}})
                except httpx.HTTPError:
                    return  # the process is gone: what it acknowledged must be there
                if r.status_code == 201:
                    with lock:
                        acknowledged.append(name)

    writers = [threading.Thread(target=write, args=(w,), daemon=True) for w in range(8)]
    for w in writers:
        w.start()
    wait_for(lambda: len(acknowledged) >= 200, timeout=30, message="writes to be acknowledged")
    target.kill()
    for w in writers:
        w.join(30)
    with witness.client() as c:
        stored = {i["metadata"]["name"] for i in c.get(path).json()["items"]}
    missing = set(acknowledged) - stored
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:5]}"


def test_reports_sent_to_any_process_reach_the_lease_holder_and_outlive_a_restart(hubs: list[Hub],
                                                                                  tmp_path: Path) -> None:
    first = hubs[0]
    first.create_space("reports")
    tokens = {name: register(first, tmp_path, name, fleet="reports") for name in ("rp-a", "rp-b")}
    apply(first, "reports", deployment("web", "default"),
          placement("web", {"fleet": "reports"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                                   "namespaces": ["default"]}]))
    leader = leader_of(hubs)
    followers = [h for h in hubs if h is not leader]
    api = "/placement/v1/spaces/reports/namespaces/default/objects/deployments.apps/web"
    with first.client() as c:
        wait_for(lambda: len(c.get(api).json().get("destinations") or []) == 2, message="web placed on both clusters")
    # Each cluster's syncer reached a different process that does not hold the lease.
    for (name, token), follower in zip(tokens.items(), followers, strict=True):
        status = {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
                  "observedGeneration": 1}
        r = post(follower, token, f"/syncer/v1/targets/{name}/status",
                 {"objects": [report("reports", "apps", "deployments", "default", "web", status, generation=1)]})
        assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
    summary = "/apis/status.spacehub.io/v1alpha1/namespaces/default/placementstatuses/deployments.apps.web"

    def summarised() -> dict[str, Any] | None:
        with leader.client() as c:
            r = c.get(f"/clusters/reports{summary}")
        body = r.json() if r.status_code == 200 else {}
        return body if (body.get("summary") or {}).get("ready") == 2 else None

    written = wait_for(summarised, message="the lease holder's summary to count both clusters ready")
    assert written["summary"]["targeted"] == 2
    # Every process serves the same reports; after a restart of all of them, the reports are still known.
    for hub in hubs:
        with hub.client() as c:
            assert [x["cluster"] for x in c.get(api).json()["reported"]] == ["rp-a", "rp-b"]
    for hub in hubs:
        hub.stop()
    first.start()
    with first.client() as c:
        body = wait_for(lambda: c.get(api).json(), message="the restarted hub's placement API")
        assert [x["cluster"] for x in body["reported"]] == ["rp-a", "rp-b"]
    assert workload(first, "reports", "apis/apps/v1/namespaces/default/deployments/web")["metadata"]["name"] == "web"


def test_upsynced_copies_sent_to_different_processes_are_compared_and_shown_once(hubs: list[Hub],
                                                                                 tmp_path: Path) -> None:
    first = hubs[0]
    first.create_space("ups")
    tokens = {name: register(first, tmp_path, name, fleet="ups") for name in ("up-a", "up-b")}
    body = placement("bring", {"fleet": "ups"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                  "namespaces": ["nowhere"]}])
    body["spec"]["upsync"] = [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["found"]}]
    apply(first, "ups", body)
    leader = leader_of(hubs)
    followers = [h for h in hubs if h is not leader]

    def send(hub: Hub, cluster: str, value: str) -> None:
        obj = configmap("found-it", "found", value=value)
        item = {"op": "UPSERT", "space": "ups", "placement": "bring", "version": "v1", "resource": "configmaps",
                "namespace": "found", "name": "found-it", "object": obj}
        r = wait_for(lambda: (r := post(hub, tokens[cluster], f"/syncer/v1/targets/{cluster}/upsync",
                                        {"objects": [item]})).json().get("accepted") == 1 and r,
                     message=f"{cluster}'s upsync rule to be known to port {hub.port}")
        assert r.status_code == 200, r.text

    send(followers[0], "up-a", "from-a")
    send(followers[1], "up-b", "from-b")  # the process receiving it alone would show this copy
    # The space shows the first cluster's copy by name, whichever process received which.
    def shown() -> bool:
        with leader.client() as c:
            r = c.get("/clusters/ups/api/v1/namespaces/found/configmaps/found-it")
        return r.status_code == 200 and r.json().get("data") == {"value": "from-a"}  # 404 until upsynced

    wait_for(shown, message="the copy of up-a shown")

    def clash() -> bool:
        with leader.client() as c:
            placement = c.get("/clusters/ups/apis/edge.kubestellar.io/v2alpha1/edgeplacements/bring").json()
        status = placement.get("status") or {}
        return any(x["type"] == "UpsyncClash" for x in status.get("conditions") or [])

    wait_for(clash, message="the lease holder to say the clusters' copies clash")


def test_a_crd_created_through_one_process_is_served_and_validated_by_every_process(hubs: list[Hub]) -> None:
    from tests.integration.test_crds import install_widgets, widget

    first, second, third = hubs
    first.create_space("crds")
    install_widgets(first, "crds")  # Established: written by the lease holder, whichever process that is
    for hub in (second, third):
        wait_for(lambda hub=hub: "widgets" in hub.kubectl("api-resources", "--api-group=example.spacehub.io",
                                                          space="crds").stdout,
                 message=f"port {hub.port} to serve widgets")
    second.kubectl("apply", "-f", "-", space="crds", input=widget("w1"))
    refused = third.kubectl("apply", "-f", "-", space="crds", input=widget("w2", owner="Not_A_Label"), check=False)
    assert refused.returncode != 0 and "is not a valid DNS label" in refused.stderr, refused.stderr
    assert third.kubectl("get", "widgets", "-o", "name", space="crds").stdout.split() == \
        ["widget.example.spacehub.io/w1"]


def test_an_update_through_one_process_right_after_a_write_through_another_is_never_lost(hubs: list[Hub]) -> None:
    """Each process starts an update from the newest row it has seen (apiserver/store/recent.py). Right after a
    write through another process that row can be stale; an update that looks like a no-op on it must be
    decided again from the database, or the second write is silently dropped."""
    first, second, _ = hubs
    first.create_space("racing")
    path = CM.format(space="racing")
    merge = {"Content-Type": "application/merge-patch+json"}
    with first.client() as a, second.client() as b:
        assert a.post(path, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flip"},
                                  "data": {"k": "b"}}).status_code == 201
        wait_for(lambda: b.get(f"{path}/flip").status_code == 200, message="the ConfigMap through the second")
        for _ in range(30):
            assert b.patch(f"{path}/flip", content=b'{"data": {"k": "b"}}', headers=merge).status_code == 200
            assert a.patch(f"{path}/flip", content=b'{"data": {"k": "a"}}', headers=merge).status_code == 200
            answered = b.patch(f"{path}/flip", content=b'{"data": {"k": "b"}}', headers=merge)
            assert answered.status_code == 200 and answered.json()["data"] == {"k": "b"}
            stored = a.get(f"{path}/flip").json()
            assert stored["data"] == {"k": "b"}, "the second process's update was lost"
            assert stored["metadata"]["resourceVersion"] == answered.json()["metadata"]["resourceVersion"]


def test_every_process_pins_the_clusters_of_a_staged_rollout_at_the_same_revisions(hubs: list[Hub],
                                                                                   tmp_path: Path) -> None:
    first = hubs[0]
    first.create_space("staged")
    for name in ("st-a", "st-b"):
        register(first, tmp_path, name, fleet="staged")
    staged = placement("web", {"fleet": "staged"}, [{"apiGroup": "apps", "resources": ["deployments"],
                                                     "namespaces": ["default"]}])
    staged["spec"]["rollout"] = {"stages": [{"name": "all", "maxUnavailable": 1}], "progressDeadlineSeconds": 600}
    web = deployment("web", "default")
    apply(first, "staged", web, staged)

    def revisions(hub: Hub) -> dict[str, int | None]:
        out = {}
        with hub.client() as c:
            for target in ("st-a", "st-b"):
                items = c.get(f"/placement/v1/clusters/{target}/desired").json()["items"]
                out[target] = next((i.get("revision") for i in items if i["name"] == "web"), None)
        return out

    wait_for(lambda: all(revisions(h) == {"st-a": 1, "st-b": 1} for h in hubs), message="revision 1 everywhere")
    # A new image through a process that does not lead: the lease holder rolls it out one cluster at a time
    # (no cluster reports Ready, so it stays there), and every process gives the clusters the same revisions.
    leader = leader_of(hubs)
    follower = next(h for h in hubs if h is not leader)
    web["spec"]["template"]["spec"]["containers"][0]["image"] = "library/httpd:2.5"
    apply(follower, "staged", web)
    wait_for(lambda: all(revisions(h) == {"st-a": 2, "st-b": 1} for h in hubs),
             message="every process: st-a at revision 2, st-b at 1")
    with follower.client() as c:
        rollout = c.get("/placement/v1/spaces/staged/placements/web/rollout").json()
        assert (rollout["revision"], rollout["phase"]) == (2, "Progressing"), rollout
        # A pause through a follower reaches the lease holder.
        assert c.post("/placement/v1/spaces/staged/placements/web:pause").status_code == 200
    with leader.client() as c:
        wait_for(lambda: c.get("/placement/v1/spaces/staged/placements/web/rollout").json()["phase"] == "Paused",
                 message="the lease holder paused")


def test_a_scheduled_placements_choice_is_the_same_in_every_process_and_outlives_the_leader(
        hubs: list[Hub], tmp_path: Path) -> None:
    first = hubs[0]
    first.create_space("chosen")
    for name, cpu in [("ch-a", "4"), ("ch-b", "16"), ("ch-c", "8")]:
        register(first, tmp_path, name, fleet="chosen")
        first.kubectl("patch", "synctargets", name, "--subresource=status", "--type=merge", "-p",
                      orjson.dumps({"status": {"allocatable": {"cpu": cpu, "memory": "8Gi"}}}).decode(),
                      space="inventory")
    scheduled = placement("two", {"fleet": "chosen"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                        "namespaces": ["default"]}])
    scheduled["spec"].update(numberOfClusters=2, prioritizers=[{"type": "Capacity"}])
    apply(hubs[1], "chosen", scheduled, configmap("c", "default"))

    def chosen_everywhere(expected: list[str], among: list[Hub]) -> bool:
        for hub in among:
            with hub.client() as c:
                if c.get("/placement/v1/spaces/chosen/placements/two/scheduling").json().get("chosen") != expected:
                    return False
                for target in ("ch-a", "ch-b", "ch-c"):
                    names = {e["name"] for e in c.get(f"/placement/v1/clusters/{target}/desired").json()["items"]
                             if e["space"] == "chosen"}
                    if ("c" in names) != (target in expected):
                        return False
        return True
    wait_for(lambda: chosen_everywhere(["ch-b", "ch-c"], hubs), timeout=20,
             message="the two largest clusters chosen in every process")

    # A larger newcomer changes nothing, in any process, even once the leader is gone.
    register(first, tmp_path, "ch-d", fleet="chosen")
    first.kubectl("patch", "synctargets", "ch-d", "--subresource=status", "--type=merge", "-p",
                  orjson.dumps({"status": {"allocatable": {"cpu": "64", "memory": "8Gi"}}}).decode(),
                  space="inventory")
    leader = leader_of(hubs)
    with leader.client() as c:
        wait_for(lambda: {r["cluster"]: r["reason"] for r in c.get(
            "/placement/v1/spaces/chosen/placements/two/scheduling").json()["candidates"]}.get("ch-d") == "Steady",
            timeout=20, message="ch-d seen by the leader as better but not chosen")
    leader.kill()
    rest = [h for h in hubs if h is not leader]
    wait_for(lambda: len(leading(rest)) == 1, timeout=10, message="a standby to take the lease")
    assert chosen_everywhere(["ch-b", "ch-c"], rest)

    # A reschedule asked of either process is made once, by the new leader, and seen by both.
    with rest[0].client() as c:
        assert c.post("/placement/v1/spaces/chosen/placements/two:reschedule").status_code == 200
    wait_for(lambda: chosen_everywhere(["ch-b", "ch-d"], rest), timeout=20,
             message="the reschedule's choice in every remaining process")
