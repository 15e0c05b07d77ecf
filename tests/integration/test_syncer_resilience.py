"""Syncers through outages, restarts, kills and proxies: nothing is deleted because something is
unreachable, and everything converges when it comes back.

Real processes throughout: the hub, ``spacehub sim serve``, ``spacehub syncer run``, and Debian's
tinyproxy and nginx (tests/proxies.py; skipped where they are not installed).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.harness import wait_for
from tests.proxies import ForwardProxy, ReverseProxy, require
from tests.syncer_harness import World, cm_path, configmap, place_configmaps, proxy_env, uids

OUTAGE_SECONDS = 60.0


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=2).start()
    yield w
    w.close()


def test_a_60_second_hub_outage_and_a_syncer_restart_during_it_delete_and_recreate_nothing(world: World) -> None:
    world.join("florin", "wec1", {"env": "prod"})
    world.join("guilder", "wec2", {"env": "prod"})
    names = ("a", "b", "c")
    place_configmaps(world, "outage", *names)
    for cluster in ("florin", "guilder"):
        for name in names:
            world.wait_present(cluster, cm_path("app", name))
    before = {cluster: uids(world, cluster, *names) for cluster in ("florin", "guilder")}

    world.hub.stop()
    deadline = time.monotonic() + OUTAGE_SECONDS
    restarted = False
    while time.monotonic() < deadline:  # the outage itself: watch the clusters all along
        for cluster in ("florin", "guilder"):
            assert uids(world, cluster, *names) == before[cluster]
        if not restarted and time.monotonic() > deadline - OUTAGE_SECONDS / 2:
            florin = world.syncers["florin"]  # a restart without the hub: only the state file to go on
            florin.stop()
            florin.start()
            restarted = True
        time.sleep(1.0)
    assert "failed" in world.syncers["guilder"].log()
    assert restarted and "Traceback" not in world.syncers["florin"].log()

    world.hub.start()
    world.apply("outage", configmap("a", "app", v="2"))
    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, cm_path("app", "a"), timeout=60, check=lambda o: o["data"] == {"v": "2"})
        after = uids(world, cluster, *names)
        assert after["a"][0] == before[cluster]["a"][0]  # updated in place
        assert {n: after[n] for n in ("b", "c")} == {n: before[cluster][n] for n in ("b", "c")}


def test_changes_made_while_a_syncer_is_down_converge_when_it_returns(world: World) -> None:
    florin = world.join("florin", "wec1", {"env": "prod"})
    place_configmaps(world, "down", "keep", "change", "drop")
    for name in ("keep", "change", "drop"):
        world.wait_present("florin", cm_path("app", name))
    florin.stop()
    world.apply("down", configmap("change", "app", v="2"), configmap("new", "app", v="1"))
    world.hub.kubectl("delete", "configmap", "drop", "-n", "app", space="down")
    florin.start()
    world.wait_present("florin", cm_path("app", "change"), check=lambda o: o["data"] == {"v": "2"})
    world.wait_present("florin", cm_path("app", "new"))
    world.wait_absent("florin", cm_path("app", "drop"))
    assert world.get("florin", cm_path("app", "keep")) is not None
    assert "resumed from seq" in florin.runs()[-1]


def test_a_syncer_killed_mid_stream_resumes_without_a_full_resync(world: World) -> None:
    florin = world.join("florin", "wec1", {"env": "prod"})
    place_configmaps(world, "kill", "first")
    world.wait_present("florin", cm_path("app", "first"))
    world.sim.set_faults("wec1", latencySeconds=0.1)  # slow the cluster so that the kill lands mid-stream
    names = [f"m{i}" for i in range(30)]
    world.hub.kubectl("apply", "-f", "-", space="kill",
                      input=yaml.safe_dump_all([configmap(n, "app", v="1") for n in names]))
    wait_for(lambda: world.get("florin", cm_path("app", "m2")) is not None, timeout=30, message="m2 applied")
    florin.kill()
    present = [n for n in names if world.get("florin", cm_path("app", n)) is not None]
    assert len(present) < len(names), "the syncer finished before it was killed"
    world.sim.clear_faults("wec1")
    florin.start()
    for name in names:
        world.wait_present("florin", cm_path("app", name))
    last = florin.runs()[-1]
    assert "resumed from seq" in last and "full resync" not in last, last[-2000:]


def test_the_whole_flow_works_through_an_http_connect_proxy_and_survives_its_outage(world: World,
                                                                                      tmp_path: Path) -> None:
    require("tinyproxy")
    with ForwardProxy(tmp_path / "tinyproxy") as proxy:
        florin = world.join("florin", "wec1", {"env": "prod"}, env=proxy_env(world, proxy.url))
        place_configmaps(world, "proxied", "one")
        world.wait_present("florin", cm_path("app", "one"))
        assert proxy.connects_to(f"127.0.0.1:{world.hub.port}") >= 1
        assert proxy.connects_to(f"127.0.0.1:{world.sim.port}") == 0  # NO_PROXY: the cluster is reached directly

        proxy.stop()
        wait_for(lambda: "hub unreachable" in florin.log(), timeout=30, message="the syncer noticing the proxy gone")
        world.apply("proxied", configmap("two", "app", v="1"))
        assert world.get("florin", cm_path("app", "one")) is not None
        proxy.start()
        world.wait_present("florin", cm_path("app", "two"), timeout=60)
        assert "Traceback" not in florin.log()


def test_the_hub_can_sit_behind_a_tls_reverse_proxy(world: World, tmp_path: Path) -> None:
    require("nginx")
    pki = world.hub.data_dir / "pki"
    with ReverseProxy(tmp_path / "nginx", world.hub.base_url, pki / "serving.crt", pki / "serving.key",
                      world.hub.ca_file) as lb:
        florin = world.join("florin", "wec1", {"env": "prod"}, hub_url=lb.url)
        place_configmaps(world, "balanced", "one")
        world.wait_present("florin", cm_path("app", "one"))
        world.apply("balanced", configmap("one", "app", v="2"))
        world.wait_present("florin", cm_path("app", "one"), check=lambda o: o["data"] == {"v": "2"})
        wait_for(lambda: lb.requests_to("/syncer/v1/targets/florin/heartbeat") >= 1, timeout=30,
                 message="heartbeats through nginx")
        assert "hub https://127.0.0.1" in florin.log() and lb.url in florin.log()


def test_sim_with_syncers_registers_its_clusters_once_and_syncs_them(tmp_path: Path) -> None:
    world = World(tmp_path, clusters=2)
    # Two processes: wec2 and its syncer live in the second, which must accept a label naming it too.
    world.sim.extra_args = ("--hub", world.hub.base_url, "--hub-kubeconfig", str(world.hub.kubeconfig),
                            "--with-syncers", "--cluster-label", "env=prod", "--cluster-label", "wec2:tier=gold",
                            "--cluster-label", "wec1:first=yes", "--processes", "2")
    try:
        world.start()
        clusters = yaml.safe_load(world.hub.spacehub("cluster", "list", "-o", "yaml").stdout)["items"]
        assert {c["name"]: c["labels"] for c in clusters} == {"wec1": {"env": "prod", "first": "yes", "id": "wec1"},
                                                               "wec2": {"env": "prod", "tier": "gold", "id": "wec2"}}
        place_configmaps(world, "fleet", "x")
        for cluster in ("wec1", "wec2"):
            world.wait_present(cluster, cm_path("app", "x"))
        # Heartbeats carry the cluster's capacity: 2 nodes of 8 CPUs each by default.
        target = wait_for(lambda: (t := world.hub_get("inventory", "/apis/edge.kubestellar.io/v2alpha1/synctargets/"
                                                      "wec2")) and (t.get("status") or {}).get("allocatable") and t,
                          timeout=30, message="wec2's capacity")
        assert target["status"]["allocatable"]["cpu"] == "16"
        ready = [c for c in target["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"

        world.sim.stop()
        world.sim.start()  # the same data dir: registered clusters and their bootstraps are reused
        world.apply("fleet", configmap("later", "app"))
        for cluster in ("wec1", "wec2"):
            world.wait_present(cluster, cm_path("app", "later"))
        assert "registered now, 2 already" in world.sim.log()
    finally:
        world.close()


def test_a_cluster_its_syncer_cannot_reach_is_not_ready_at_once_and_ready_again_when_it_answers(
        world: World) -> None:
    world.join("florin", "wec1", {"env": "prod"})
    world.join("guilder", "wec2", {"env": "prod"})
    place_configmaps(world, "reach", "a")
    for cluster in ("florin", "guilder"):
        world.wait_present(cluster, cm_path("app", "a"))
    wait_for(lambda: world.ready("florin").get("status") == "True", message="florin Ready")

    world.sim.set_faults("wec1", refuse=True)  # the syncer runs on; its cluster stops answering
    refused_at = time.monotonic()
    down = wait_for(lambda: (r := world.ready("florin")).get("status") == "False" and r, timeout=10,
                    message="florin not Ready")
    # The cut watch tells the syncer, which says so in a heartbeat sent at once, not in a quarter of the
    # heartbeat timeout (60 s here).
    assert time.monotonic() - refused_at < 5
    assert down["reason"] == "ClusterUnreachable" and "cannot reach its cluster" in str(down["message"])
    assert world.ready("guilder").get("status") == "True"
    assert world.get("wec2", cm_path("app", "a")) is not None

    world.sim.clear_faults("wec1")
    up = wait_for(lambda: (r := world.ready("florin")).get("status") == "True" and r, timeout=30,
                  message="florin Ready again")
    assert up["reason"] == "SyncerHeartbeat"
    assert world.get("wec1", cm_path("app", "a")) is not None  # nothing was deleted meanwhile
