"""The syncer protocol end to end (docs/sync-protocol.md): raw HTTP streaming clients with real syncer tokens.

Each test registers its own clusters with labels no other test uses and only looks at entries of its
own space, so placements of other tests on the shared hub cannot interfere.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from tests.harness import Hub, metric_samples, metric_value, wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
EDGE = "edge.kubestellar.io/v2alpha1"
COUNT = "kubestellar.io/executing-count"
Message = dict[str, Any]


def register(hub: Hub, tmp_path: Path, name: str, **labels: str) -> str:
    """Register a cluster; returns its syncer token from the bootstrap file."""
    out = tmp_path / f"{name}-bootstrap.yaml"
    args = [arg for k, v in labels.items() for arg in ("--label", f"{k}={v}")]
    hub.spacehub("cluster", "register", name, *args, "--bootstrap-out", str(out))
    return str(yaml.safe_load(out.read_text())["token"])


def placement(name: str, location_labels: dict[str, str], downsync: list[dict[str, Any]], *,
              singleton: bool = False) -> dict[str, Any]:
    return {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": [{"matchLabels": location_labels}], "downsync": downsync,
                     "wantSingletonReportedState": singleton}}


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": data}


def deployment(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "httpd", "image": "library/httpd:2.4"}]}}}}


def apply(hub: Hub, space: str, *docs: dict[str, Any]) -> None:
    hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump_all(docs))


def desired_names(hub: Hub, target: str, space: str) -> set[str]:
    with hub.client() as c:
        r = c.get(f"/placement/v1/clusters/{target}/desired")
        assert r.status_code == 200, r.text
        return {f"{e['resource']}/{e['namespace']}/{e['name']}" for e in r.json()["items"] if e["space"] == space}


def mine(space: str) -> Callable[[Message], bool]:
    return lambda m: "entry" in m and m["entry"]["space"] == space


def named(space: str, resource: str, name: str, kind: str | None = None) -> Callable[[Message], bool]:
    return lambda m: (m["type"] == kind if kind else "entry" in m) and "entry" in m and \
        (m["entry"]["space"], m["entry"]["resource"], m["entry"]["name"]) == (space, resource, name)


class Stream:
    """A syncer's stream read by a background thread; messages are kept in arrival order."""

    def __init__(self, hub: Hub, target: str, token: str, **params: Any) -> None:
        self.messages: list[Message] = []
        self._cond = threading.Condition()
        self._client = httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(),
                                    headers={"Authorization": f"Bearer {token}"},
                                    timeout=httpx.Timeout(30, read=120))
        self._cm = self._client.stream("GET", f"/syncer/v1/targets/{target}/stream", params=params)
        self.response = self._cm.__enter__()
        assert self.response.status_code == 200, self.response.read()
        self.ended = False
        self._reading = threading.Event()  # cleared: the thread stops reading (a slow syncer)
        self._reading.set()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self.response.iter_lines():
                if line:
                    with self._cond:
                        self.messages.append(orjson.loads(line))
                        self._cond.notify_all()
                self._reading.wait()
        except (httpx.HTTPError, RuntimeError, ValueError, OSError):
            pass
        finally:
            with self._cond:
                self.ended = True
                self._cond.notify_all()

    def wait(self, predicate: Callable[[Message], bool], after: int = 0, timeout: float = 20,
             what: str = "a message") -> int:
        """The index of the first message at or after ``after`` matching ``predicate``."""
        def found() -> int | None:
            return next((i for i in range(after, len(self.messages)) if predicate(self.messages[i])), None)

        with self._cond:
            if not self._cond.wait_for(lambda: found() is not None or self.ended, timeout):
                raise AssertionError(f"timed out waiting for {what}; got {self.messages[after:]}")
            index = found()
            assert index is not None, f"stream ended before {what}; got {self.messages[after:]}"
            return index

    def pause(self) -> None:
        """Stop reading after the next line: the hub's writes pile up in the socket buffers, then in its own."""
        self._reading.clear()

    def resume(self) -> None:
        self._reading.set()

    def wait_synced(self, after: int = 0) -> int:
        return self.wait(lambda m: m["type"] == "SYNCED", after, what="SYNCED")

    def close(self) -> None:
        # Shut the socket down first: that unblocks the reading thread at once.
        network = self.response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._reading.set()
        self.response.close()
        self._client.close()
        self._thread.join(10)


@pytest.fixture
def streams() -> Iterator[Callable[..., Stream]]:
    opened: list[Stream] = []

    def open_stream(hub: Hub, target: str, token: str, **params: Any) -> Stream:
        s = Stream(hub, target, token, **params)
        opened.append(s)
        return s

    yield open_stream
    for s in opened:
        s.close()


def test_first_connect_sends_snapshot_in_apply_order_then_synced(hub: Hub, space: str, tmp_path: Path,
                                                                 streams: Callable[..., Stream]) -> None:
    token = register(hub, tmp_path, "ss-snap", **{"sync-test": "snap"})
    hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space=space)
    hub.kubectl("wait", "--for=condition=Established", "crd/widgets.example.spacehub.io", "--timeout=10s",
                space=space)
    apply(hub, space, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "explicitns",
                                                                            "labels": {"snap": "yes"}}},
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "snapns"}},
          configmap("settings", "explicitns", color="blue"), deployment("web", "snapns"),
          {"apiVersion": "example.spacehub.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "snapns"},
           "spec": {"image": "r/w@sha256:" + "e" * 64, "owner": "team-s"}},
          placement("snap", {"sync-test": "snap"}, [
              {"namespaceSelectors": [{"matchLabels": {"snap": "yes"}}]},
              {"apiGroup": "", "resources": ["namespaces"], "namespaces": ["*"], "objectNames": ["explicitns"]},
              {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["snapns"]},
              {"apiGroup": "example.spacehub.io", "resources": ["widgets"], "namespaces": ["snapns"]},
              {"apiGroup": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"], "namespaces": ["*"],
               "objectNames": ["widgets.example.spacehub.io"]}]))
    expected = {"namespaces//explicitns", "namespaces//snapns", "configmaps/explicitns/settings",
                "deployments/snapns/web", "widgets/snapns/w", "customresourcedefinitions//widgets.example.spacehub.io"}
    wait_for(lambda: desired_names(hub, "ss-snap", space) == expected, message="the desired set")

    s = streams(hub, "ss-snap", token)
    assert s.response.headers["content-type"] == "application/x-ndjson"
    assert s.response.headers["x-accel-buffering"] == "no"
    assert s.response.headers["transfer-encoding"] == "chunked"
    synced = s.wait_synced()
    reset, *upserts = s.messages[:synced]
    assert reset["type"] == "RESET"
    seq = reset["seq"]
    assert all(m["type"] == "UPSERT" and m["seq"] == seq for m in upserts)
    assert s.messages[synced]["seq"] == seq and s.messages[synced]["epoch"]
    ours = [m for m in upserts if m["entry"]["space"] == space]
    order = [f"{m['entry']['resource']}/{m['entry']['namespace']}/{m['entry']['name']}" for m in ours]
    assert set(order) == expected and len(order) == len(expected)
    kinds = [m["entry"]["entryKind"] for m in ours]
    assert kinds == sorted(kinds, key=["namespace", "crd", "object"].index), order
    # Across spaces too: every namespace before every CRD before every other object.
    all_kinds = [m["entry"]["entryKind"] for m in upserts]
    assert all_kinds == sorted(all_kinds, key=["namespace", "crd", "object"].index)

    by_name = {m["entry"]["name"]: m for m in ours}
    assert by_name["web"]["entry"] == {"space": space, "group": "apps", "version": "v1", "resource": "deployments",
                                       "namespace": "snapns", "name": "web", "kind": "Deployment",
                                       "entryKind": "object", "implicit": False}
    web = by_name["web"]["object"]
    assert web["spec"]["replicas"] == 2 and "status" not in web
    assert not {"uid", "resourceVersion", "managedFields", "creationTimestamp"} & set(web["metadata"])
    assert by_name["snapns"]["entry"]["implicit"] is True
    assert by_name["snapns"]["object"] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "snapns"}}
    assert by_name["explicitns"]["entry"]["implicit"] is False
    assert by_name["explicitns"]["object"]["metadata"]["labels"]["snap"] == "yes"
    crd = by_name["widgets.example.spacehub.io"]
    assert (crd["entry"]["kind"], crd["entry"]["entryKind"], crd["entry"]["version"]) == \
        ("CustomResourceDefinition", "crd", "v1")
    assert (by_name["w"]["entry"]["kind"], by_name["w"]["entry"]["group"]) == ("Widget", "example.spacehub.io")


def test_live_changes_deletes_and_resume_without_reset(hub: Hub, space: str, tmp_path: Path,
                                                       streams: Callable[..., Stream]) -> None:
    token = register(hub, tmp_path, "ss-live", **{"sync-test": "live"})
    apply(hub, space, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "livens"}},
          configmap("one", "livens", v="1"),
          placement("live", {"sync-test": "live"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                     "namespaces": ["livens"]}]))
    wait_for(lambda: "configmaps/livens/one" in desired_names(hub, "ss-live", space), message="one placed")
    s = streams(hub, "ss-live", token)
    synced = s.wait_synced()
    base, epoch = s.messages[synced]["seq"], s.messages[synced]["epoch"]

    apply(hub, space, configmap("one", "livens", v="2"))
    i = s.wait(lambda m: named(space, "configmaps", "one", "UPSERT")(m) and m["object"]["data"] == {"v": "2"},
               synced, what="the update of one")
    assert s.messages[i]["seq"] > base
    apply(hub, space, configmap("two", "livens", v="1"))
    j = s.wait(named(space, "configmaps", "two", "UPSERT"), i, what="two created")
    hub.kubectl("delete", "configmap", "one", "-n", "livens", space=space)
    k = s.wait(named(space, "configmaps", "one", "DELETE"), j, what="one deleted")
    assert "object" not in s.messages[k] and s.messages[k]["entry"]["kind"] == "ConfigMap"
    seqs = [m["seq"] for m in s.messages[synced:k + 1]]
    assert seqs == sorted(seqs) and s.messages[k]["seq"] > s.messages[j]["seq"] > s.messages[i]["seq"]
    last = s.messages[k]["seq"]
    s.close()

    # Missed while disconnected: three created, two deleted.
    apply(hub, space, configmap("three", "livens", v="1"))
    hub.kubectl("delete", "configmap", "two", "-n", "livens", space=space)
    wait_for(lambda: desired_names(hub, "ss-live", space) == {"namespaces//livens", "configmaps/livens/three"},
             message="the changes while disconnected")
    r = streams(hub, "ss-live", token, since=last, epoch=epoch)
    rs = r.wait_synced()
    missed = r.messages[:rs]
    assert all(m["type"] in ("UPSERT", "DELETE") and m["seq"] > last for m in missed), missed
    ours = [(m["type"], m["entry"]["name"]) for m in missed if mine(space)(m)]
    assert ("UPSERT", "three") in ours and ("DELETE", "two") in ours and ("UPSERT", "one") not in ours
    assert ours.index(("UPSERT", "three")) < ours.index(("DELETE", "two"))
    assert r.messages[rs]["seq"] == max([last] + [m["seq"] for m in missed])

    # Relabelling the cluster's Location out of the placement: everything of this space is deleted.
    hub.kubectl("label", "location", "ss-live", "sync-test=elsewhere", "--overwrite", space="inventory")
    r.wait(named(space, "configmaps", "three", "DELETE"), rs, what="three deleted by relabelling")
    r.wait(named(space, "namespaces", "livens", "DELETE"), rs, what="the implicit namespace deleted")


def test_since_too_old_unknown_or_from_another_epoch_gets_a_snapshot(hub: Hub, space: str, tmp_path: Path,
                                                                     streams: Callable[..., Stream]) -> None:
    token = register(hub, tmp_path, "ss-old", **{"sync-test": "old"})
    apply(hub, space, configmap("cm", "default"),
          placement("old", {"sync-test": "old"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                   "namespaces": ["default"]}]))
    wait_for(lambda: "configmaps/default/cm" in desired_names(hub, "ss-old", space), message="cm placed")
    first = streams(hub, "ss-old", token)
    synced = first.messages[first.wait_synced()]
    for params in ({"since": 1}, {"since": 10**15}, {"since": synced["seq"], "epoch": "another-hub"},
                   {"since": 0}):
        s = streams(hub, "ss-old", token, **params)
        end = s.wait_synced()
        assert s.messages[0]["type"] == "RESET", params
        assert any(named(space, "configmaps", "cm", "UPSERT")(m) for m in s.messages[:end]), params
    # The current seq with the right epoch: nothing missed, no RESET.
    s = streams(hub, "ss-old", token, since=synced["seq"], epoch=synced["epoch"])
    assert s.messages[s.wait_synced()] == synced and s.messages[0] == synced

    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(),
                      headers={"Authorization": f"Bearer {token}"}) as c:
        r = c.get("/syncer/v1/targets/ss-old/stream", params={"since": "yesterday"})
        assert r.status_code == 400 and r.json()["reason"] == "BadRequest" and "since" in r.json()["message"]


def test_pings_arrive_and_a_seq_from_before_a_restart_gets_a_snapshot(hub_factory: Callable[..., Hub],
                                                                     tmp_path: Path,
                                                                     streams: Callable[..., Stream]) -> None:
    h = hub_factory("--sync-ping-interval", "0.3")
    h.create_space("work")
    token = register(h, tmp_path, "pinged", zone="a")
    apply(h, "work", configmap("cm", "default"),
          placement("p", {"zone": "a"}, [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["default"]}]))
    wait_for(lambda: "configmaps/default/cm" in desired_names(h, "pinged", "work"), message="cm placed")
    s = streams(h, "pinged", token)
    synced = s.messages[s.wait_synced()]
    assert synced["pingInterval"] == 0.3
    p1 = s.wait(lambda m: m["type"] == "PING", what="a PING")
    p2 = s.wait(lambda m: m["type"] == "PING", p1 + 1, what="a second PING")
    assert s.messages[p1]["seq"] == s.messages[p2]["seq"] == synced["seq"]
    s.close()

    h.stop()
    h.start()
    r = streams(h, "pinged", token, since=synced["seq"], epoch=synced["epoch"])
    end = r.wait_synced()
    assert r.messages[0]["type"] == "RESET"
    assert r.messages[end]["epoch"] != synced["epoch"]
    assert any(named("work", "configmaps", "cm", "UPSERT")(m) for m in r.messages[:end])


def test_streams_do_not_count_against_the_inflight_limit(hub_factory: Callable[..., Hub], tmp_path: Path,
                                                         streams: Callable[..., Stream]) -> None:
    h = hub_factory("--max-requests-inflight", "1")
    token = register(h, tmp_path, "limited", zone="b")
    for _ in range(3):
        s = streams(h, "limited", token)
        s.wait_synced()
    with h.client() as c:
        assert c.get("/placement/v1/clusters/limited").status_code == 200


def synctarget(hub: Hub, name: str) -> dict[str, Any]:
    with hub.client() as c:
        r = c.get(f"/clusters/inventory/apis/edge.kubestellar.io/v2alpha1/synctargets/{name}")
        assert r.status_code == 200, r.text
        return dict(r.json())


def ready(target: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in (target.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), None)


def post(hub: Hub, token: str, path: str, body: Any) -> httpx.Response:
    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(),
                      headers={"Authorization": f"Bearer {token}"}) as c:
        return c.post(path, json=body)


def test_heartbeat_records_time_capacity_and_ready(hub: Hub, tmp_path: Path) -> None:
    token = register(hub, tmp_path, "ss-beat", **{"sync-test": "beat"})
    assert ready(synctarget(hub, "ss-beat")) is None
    r = post(hub, token, "/syncer/v1/targets/ss-beat/heartbeat",
             {"capacity": {"cpu": "8", "pods": 110}, "allocatable": {"cpu": "7500m", "pods": 110},
              "syncerVersion": "0.1.0"})
    assert r.status_code == 200, r.text
    assert r.json()["heartbeatTimeoutSeconds"] == 60
    target = synctarget(hub, "ss-beat")
    status = target["status"]
    assert status["lastSyncerHeartbeatTime"] == r.json()["lastSyncerHeartbeatTime"]
    assert status["capacity"] == {"cpu": "8", "pods": 110} and status["allocatable"]["cpu"] == "7500m"
    condition = ready(target)
    assert condition is not None and (condition["status"], condition["reason"]) == ("True", "SyncerHeartbeat")
    assert "0.1.0" in condition["message"]
    with hub.client() as c:
        cluster = c.get("/placement/v1/clusters/ss-beat").json()
    assert cluster["ready"] is True and cluster["capacity"]["pods"] == "110"

    # The same heartbeat again changes nothing but the time: not written while the stored time is recent (half
    # the 60 s timeout); new capacity is written at once.
    again = post(hub, token, "/syncer/v1/targets/ss-beat/heartbeat",
                 {"capacity": {"cpu": "8", "pods": 110}, "syncerVersion": "0.1.0"})
    assert again.json()["lastSyncerHeartbeatTime"] == status["lastSyncerHeartbeatTime"]
    assert synctarget(hub, "ss-beat")["metadata"]["resourceVersion"] == target["metadata"]["resourceVersion"]
    grown = post(hub, token, "/syncer/v1/targets/ss-beat/heartbeat",
                 {"capacity": {"cpu": "16", "pods": 110}, "syncerVersion": "0.1.0"})
    assert grown.status_code == 200
    assert synctarget(hub, "ss-beat")["status"]["capacity"]["cpu"] == "16"

    bad = post(hub, token, "/syncer/v1/targets/ss-beat/heartbeat", {"capacity": {"cpu": [1]}})
    assert bad.status_code == 422 and bad.json()["reason"] == "Invalid", bad.text
    assert "capacity.cpu" in bad.json()["message"]


def test_heartbeat_timeout_marks_not_ready_and_deletes_nothing(hub_factory: Callable[..., Hub],
                                                               tmp_path: Path) -> None:
    h = hub_factory("--syncer-heartbeat-timeout", "1")
    h.create_space("work")
    token = register(h, tmp_path, "quiet", zone="q")
    apply(h, "work", configmap("cm", "default"),
          placement("p", {"zone": "q"}, [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["default"]}]))
    wait_for(lambda: "configmaps/default/cm" in desired_names(h, "quiet", "work"), message="cm placed")
    before = desired_names(h, "quiet", "work")

    assert post(h, token, "/syncer/v1/targets/quiet/heartbeat", {}).status_code == 200
    condition = ready(synctarget(h, "quiet"))
    assert condition is not None and condition["status"] == "True"
    timed_out = wait_for(lambda: (c := ready(synctarget(h, "quiet"))) and c["status"] == "False" and c,
                         timeout=15, message="Ready=False after the heartbeat timeout")
    assert timed_out["reason"] == "HeartbeatTimeout"
    assert desired_names(h, "quiet", "work") == before
    with h.client() as c:
        assert c.get("/clusters/work/api/v1/namespaces/default/configmaps/cm").status_code == 200
        assert c.get("/placement/v1/clusters/quiet").json()["ready"] is False

    assert post(h, token, "/syncer/v1/targets/quiet/heartbeat", {}).status_code == 200
    condition = ready(synctarget(h, "quiet"))
    assert condition is not None and (condition["status"], condition["reason"]) == ("True", "SyncerHeartbeat")


def workload(hub: Hub, space: str, path: str) -> dict[str, Any]:
    with hub.client() as c:
        r = c.get(f"/clusters/{space}/{path}")
        assert r.status_code == 200, r.text
        return dict(r.json())


def annotation(obj: dict[str, Any]) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(COUNT)


def report(space: str, group: str, resource: str, namespace: str, name: str, status: Any,
           **extra: Any) -> dict[str, Any]:
    return {"space": space, "group": group, "resource": resource, "namespace": namespace, "name": name,
            "status": status, **extra}


def test_singleton_deployment_gets_the_reported_status_and_executing_count(hub: Hub, space: str,
                                                                            tmp_path: Path) -> None:
    token = register(hub, tmp_path, "ss-single", **{"sync-test": "single"})
    apply(hub, space, deployment("web", "default"), configmap("unplaced", "default"),
          placement("single", {"sync-test": "single"},
                    [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["default"]}], singleton=True))
    path = "apis/apps/v1/namespaces/default/deployments/web"
    wait_for(lambda: annotation(workload(hub, space, path)) == "1", message="executing-count 1")

    status = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "observedGeneration": 1}
    r = post(hub, token, "/syncer/v1/targets/ss-single/status", {"objects": [
        report(space, "apps", "deployments", "default", "web", status, generation=1),
        report(space, "", "configmaps", "default", "unplaced", None, error="not mine")]})
    assert r.status_code == 200, r.text
    assert r.json()["accepted"] == 1
    assert [(i["index"], i["reason"]) for i in r.json()["ignored"]] == [(1, "NotDesired")]
    copied = wait_for(lambda: (o := workload(hub, space, path)).get("status", {}).get("readyReplicas") == 2 and o,
                      message="the reported status copied")
    assert copied["status"] == status and annotation(copied) == "1"
    assert any(f.get("manager") == "spacehub-status" for f in copied["metadata"]["managedFields"])
    with hub.client() as c:
        body = c.get(f"/placement/v1/spaces/{space}/namespaces/default/objects/deployments.apps/web").json()
    assert body["singletonStatus"] is True
    assert [(x["cluster"], x["status"], x["generation"]) for x in body["reported"]] == [("ss-single", status, 1)]
    # What the cluster gets carries neither the annotation nor the status.
    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(),
                      headers={"Authorization": f"Bearer {token}"}) as c:
        projected = c.get(f"/clusters/inventory/synctargets/ss-single/{path}").json()
    assert "status" not in projected and COUNT not in (projected["metadata"].get("annotations") or {})

    # The cluster leaves: the report is forgotten, the count drops to 0 and the copied status is cleared.
    hub.kubectl("label", "location", "ss-single", "sync-test=gone", "--overwrite", space="inventory")
    # Cleared back to the Deployment's empty status (kube always serializes a built-in kind's status).
    cleared = wait_for(lambda: annotation(o := workload(hub, space, path)) == "0" and o.get("status") == {} and o,
                       message="count 0 and status cleared")
    assert annotation(cleared) == "0"
    with hub.client() as c:
        body = c.get(f"/placement/v1/spaces/{space}/namespaces/default/objects/deployments.apps/web").json()
    assert body["reported"] == [] and body["destinations"] == []


def test_replicaset_on_two_clusters_counts_two_and_copies_no_status(hub: Hub, space: str, tmp_path: Path) -> None:
    first = register(hub, tmp_path, "ss-pair-a", **{"sync-test": "pair", "pair-first": "yes"})
    second = register(hub, tmp_path, "ss-pair-b", **{"sync-test": "pair"})
    rs = deployment("rs", "default") | {"apiVersion": "apps/v1", "kind": "ReplicaSet"}
    pair = placement("pair", {"sync-test": "pair"},
                     [{"apiGroup": "apps", "resources": ["replicasets"], "namespaces": ["default"]}], singleton=True)
    pair["spec"]["wantMultiWECReportedState"] = False  # singleton only (the aggregate is on by default)
    apply(hub, space, rs, deployment("solo", "default"), pair,
          placement("solo", {"pair-first": "yes"},
                    [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["default"]}], singleton=True))
    rs_path = "apis/apps/v1/namespaces/default/replicasets/rs"
    solo_path = "apis/apps/v1/namespaces/default/deployments/solo"
    wait_for(lambda: annotation(workload(hub, space, rs_path)) == "2", message="executing-count 2")
    for token, cluster in ((first, "ss-pair-a"), (second, "ss-pair-b")):
        rs_status = {"replicas": 2, "readyReplicas": 2}
        r = post(hub, token, f"/syncer/v1/targets/{cluster}/status",
                 {"objects": [report(space, "apps", "replicasets", "default", "rs", rs_status)]})
        assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
    # Reports are handled in order: once the later report on solo is copied, the ones on rs were handled.
    r = post(hub, first, "/syncer/v1/targets/ss-pair-a/status",
             {"objects": [report(space, "apps", "deployments", "default", "solo", {"readyReplicas": 1})]})
    assert r.json()["accepted"] == 1
    wait_for(lambda: workload(hub, space, solo_path).get("status") == {"readyReplicas": 1}, message="solo's status")
    replicaset = workload(hub, space, rs_path)
    assert annotation(replicaset) == "2" and replicaset["status"] == {"replicas": 0}  # as created: nothing copied
    with hub.client() as c:
        body = c.get(f"/placement/v1/spaces/{space}/namespaces/default/objects/replicasets.apps/rs").json()
    assert [x["cluster"] for x in body["reported"]] == ["ss-pair-a", "ss-pair-b"]
    assert body["singletonStatus"] is False


def test_only_the_targets_own_token_or_admin_may_use_its_syncer_api(hub: Hub, tmp_path: Path,
                                                                    streams: Callable[..., Stream]) -> None:
    own = register(hub, tmp_path, "ss-own", **{"sync-test": "own"})
    other = register(hub, tmp_path, "ss-other", **{"sync-test": "own"})
    base = "/syncer/v1/targets/ss-own"
    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(),
                      headers={"Authorization": f"Bearer {other}"}) as c:
        for r in (c.get(f"{base}/stream"), c.post(f"{base}/status", json={"objects": []}),
                  c.post(f"{base}/heartbeat", json={})):
            assert r.status_code == 403, r.text
            assert r.json()["kind"] == "Status" and r.json()["reason"] == "Forbidden"
    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context()) as c:
        assert c.get(f"{base}/stream").status_code == 401
    with hub.client() as c:
        missing = c.get("/syncer/v1/targets/ss-nowhere/stream")
        assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
        assert "ss-nowhere" in missing.json()["message"]
        assert c.post(f"{base}/stream").status_code == 405
        assert c.post("/syncer/v1/targets/ss-nowhere/status", json={"objects": []}).status_code == 404
    assert post(hub, own, f"{base}/status", {"objects": []}).json() == {"accepted": 0, "ignored": []}
    streams(hub, "ss-own", own).wait_synced()
    streams(hub, "ss-own", hub.token).wait_synced()


def test_deleting_the_cluster_sends_its_deletes_and_ends_the_stream(hub: Hub, space: str, tmp_path: Path,
                                                                    streams: Callable[..., Stream]) -> None:
    token = register(hub, tmp_path, "ss-gone", **{"sync-test": "gone"})
    apply(hub, space, configmap("cm", "default"),
          placement("gone", {"sync-test": "gone"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                    "namespaces": ["default"]}]))
    wait_for(lambda: "configmaps/default/cm" in desired_names(hub, "ss-gone", space), message="cm placed")
    s = streams(hub, "ss-gone", token)
    synced = s.wait_synced()
    hub.spacehub("cluster", "delete", "ss-gone")
    s.wait(named(space, "configmaps", "cm", "DELETE"), synced, what="cm deleted with its cluster")
    wait_for(lambda: s.ended, message="the stream to end")
    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(),
                      headers={"Authorization": f"Bearer {token}"}) as c:
        assert c.get("/syncer/v1/targets/ss-gone/stream").status_code == 401  # the credential is revoked
    with hub.client() as c:
        assert c.get("/syncer/v1/targets/ss-gone/stream").status_code == 404


def metric(hub: Hub, name: str, **labels: str) -> float:
    return metric_value(metric_samples(hub), name, **labels)


def test_idle_streams_are_written_by_the_broadcaster_and_a_slow_reader_loses_nothing(
        hub: Hub, space: str, tmp_path: Path, streams: Callable[..., Stream]) -> None:
    """An up-to-date stream is parked and written to directly; a syncer that stops reading fills the socket
    buffers, the broadcaster hands its stream back to its task, and when it reads again it gets every change
    once and in order, and is parked again."""
    token = register(hub, tmp_path, "ss-slow", **{"sync-test": "slow"})
    apply(hub, space, placement("slow", {"sync-test": "slow"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                                "namespaces": ["default"]}]))
    s = streams(hub, "ss-slow", token)
    synced = s.wait_synced()
    wait_for(lambda: metric(hub, "spacehub_sync_streams_direct") >= 1, message="the stream parked")
    slow_before = metric(hub, "spacehub_sync_stream_handbacks_total", reason="slow_reader")
    with hub.client() as c:
        def create(name: str, size: int) -> None:
            r = c.post(f"/clusters/{space}/api/v1/namespaces/default/configmaps",
                       json=configmap(name, "default", blob="x" * size))
            assert r.status_code == 201, r.text

        create("first", 10)
        s.wait(named(space, "configmaps", "first", "UPSERT"), synced, what="first, written by the broadcaster")
        s.pause()
        # About 21 MB: more than the kernel's socket buffers on both ends hold, so the hub's own fills.
        names = [f"big-{i:02d}" for i in range(30)]
        for name in names:
            create(name, 700_000)
        wait_for(lambda: metric(hub, "spacehub_sync_stream_handbacks_total", reason="slow_reader") > slow_before,
                 timeout=60, message="the broadcaster to hand the slow stream back to its task")
        s.resume()
        last_big = s.wait(named(space, "configmaps", names[-1], "UPSERT"), synced, timeout=60, what="the last big one")
        create("last", 10)
        s.wait(named(space, "configmaps", "last", "UPSERT"), last_big, what="last, after catching up")
    wait_for(lambda: metric(hub, "spacehub_sync_streams_direct") >= 1, message="the stream parked again")
    live = s.messages[synced + 1:]
    seqs = [m["seq"] for m in live]
    assert seqs == sorted(seqs), "messages out of order"
    upserts = [(m["entry"]["name"], m["seq"]) for m in live
               if m["type"] == "UPSERT" and mine(space)(m) and m["entry"]["resource"] == "configmaps"]
    assert len(upserts) == len(set(upserts)), "a change was sent twice"
    assert [name for name, _ in upserts] == ["first", *names, "last"]
