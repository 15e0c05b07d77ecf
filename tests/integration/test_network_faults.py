"""Network faults between a syncer and the hub (issue 32, item 6), made by the test itself.

* A partition: the syncer runs in a network namespace of its own, reaching the hub and its cluster over two
  veth links; the hub's link goes down for ``PARTITION_SECONDS`` while the space changes. Nothing is deleted in
  the cluster, the SyncTarget turns NotReady and the PlacementStatus says ``Stale`` (the UI's placement
  picture too: the cluster down, its copies stale); within 10 s of the link
  coming back the cluster has converged. The test runs 20 s to keep CI short (``SPACEHUB_PARTITION_SECONDS=60``
  runs the issue's minute): what the partition is measured against is the heartbeat timeout
  (``--syncer-heartbeat-timeout``, 6 s here), which both exceed, so NotReady, Stale and nothing deleted hold
  the same. What grows with the partition is the syncer's reconnect backoff, capped at 5 s (jittered to
  2.5-5 s) so that a syncer cut off for any length of time is back within the 10 s.
* A slow, lossy link: the syncer reaches the hub through a TCP relay holding every chunk 200 ms each way and
  cutting 1 % of the connections (this kernel has no ``netem``), plus all of them once halfway, and keeps up
  with 10 changes/s: never more than 3 s behind.

Real processes throughout (hub, ``spacehub sim serve``, ``spacehub syncer run``); needs root for the
namespace, and skips saying so without it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.faultnet import Link, Netns, TcpRelay
from tests.harness import wait_for
from tests.syncer_harness import (
    SyncerProcess,
    World,
    cm_path,
    configmap,
    place_configmaps,
    uids,
)
from tests.ui_harness import browser_or_skip, open_ui, rendered, sign_in

# 20 s keeps CI short; SPACEHUB_PARTITION_SECONDS=60 runs the full minute.
PARTITION_SECONDS = float(os.environ.get("SPACEHUB_PARTITION_SECONDS", "20"))
CONVERGE_SECONDS = 10.0
HEARTBEAT_TIMEOUT = "6"
PING_INTERVAL = "2"
CHANGES_PER_SECOND = 10
CHANGE_SECONDS = 20


class NetnsSyncer(SyncerProcess):
    """A syncer process inside a network namespace."""

    netns: Netns

    def launch(self, cmd: Any, env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
        return super().launch(self.netns.command(*cmd), env=env, cwd=cwd)


def _relay_kubeconfig(world: World, sim_cluster: str, host: str, port: int) -> Path:
    """The simulated cluster's kubeconfig, its server reached at ``host:port`` (a relay) instead."""
    config = yaml.safe_load(world.sim.kubeconfig(sim_cluster).read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = entry["cluster"]["server"].replace(f"127.0.0.1:{world.sim.port}",
                                                                        f"{host}:{port}")
    out = world.base / f"{sim_cluster}-via-relay.kubeconfig"
    out.write_text(yaml.safe_dump(config))
    return out


def _placement_phase(world: World, space: str, name: str, cluster: str) -> str | None:
    found = world.hub_get(space, "/apis/status.spacehub.io/v1alpha1/namespaces/app/placementstatuses/"
                                 f"configmaps.core.{name}") or {}
    return next((str(e.get("phase")) for e in found.get("clusters") or [] if e.get("name") == cluster), None)


@dataclass
class CutOff:
    """A world whose one syncer (of hub cluster ``florin``) runs in ``netns``, reaching the hub over ``hub_link``."""

    world: World
    syncer: SyncerProcess
    hub_link: Link


@pytest.fixture
def cut_off(tmp_path: Path) -> Iterator[CutOff]:
    with Netns(links=("hub", "cluster")) as netns:
        hub_link, cluster_link = netns.link("hub"), netns.link("cluster")
        world = World(tmp_path, clusters=1, hub_args=("--tls-san", hub_link.host_ip, "--syncer-heartbeat-timeout",
                                                      HEARTBEAT_TIMEOUT, "--sync-ping-interval", PING_INTERVAL))
        world.sim.insecure_http = True  # the cluster is reached through a relay at another address than its cert's
        world.start()
        try:
            with TcpRelay(hub_link.host_ip, ("127.0.0.1", world.hub.port)) as to_hub, \
                    TcpRelay(cluster_link.host_ip, ("127.0.0.1", world.sim.port)) as to_cluster:
                plain = world.join("florin", "wec1", {"env": "prod"}, start=False,
                                   hub_url=f"https://{hub_link.host_ip}:{to_hub.port}")
                syncer = NetnsSyncer(**{k: getattr(plain, k) for k in plain.__dataclass_fields__})
                syncer.netns = netns
                syncer.kubeconfig = _relay_kubeconfig(world, "wec1", cluster_link.host_ip, to_cluster.port)
                world.syncers["florin"] = syncer
                syncer.start()
                yield CutOff(world, syncer, hub_link)
        finally:
            world.close()


def test_a_partitioned_syncer_deletes_nothing_goes_stale_and_converges_when_the_link_returns(
        cut_off: CutOff) -> None:
    world, syncer, hub_link = cut_off.world, cut_off.syncer, cut_off.hub_link
    names = ("a", "b", "c")
    place_configmaps(world, "cut", *names)
    for name in names:
        world.wait_present("florin", cm_path("app", name), timeout=60)
    wait_for(lambda: world.ready("florin").get("status") == "True", timeout=30, message="florin Ready")
    before = uids(world, "florin", *names)

    hub_link.down()
    cut_at = time.monotonic()
    world.apply("cut", configmap("a", "app", v="2"), configmap("d", "app", v="1"))
    world.hub.kubectl("delete", "configmap", "c", "-n", "app", space="cut")
    saw_not_ready = saw_stale = False
    while time.monotonic() - cut_at < PARTITION_SECONDS:  # all along: nothing changes in the cluster
        assert uids(world, "florin", *names) == before
        saw_not_ready = saw_not_ready or world.ready("florin").get("status") == "False"
        saw_stale = saw_stale or _placement_phase(world, "cut", "b", "florin") == "Stale"
        time.sleep(0.5)  # the sampling period of the checks above
    assert saw_not_ready, f"the SyncTarget stayed Ready through the partition: {world.ready('florin')}"
    assert saw_stale, f"the PlacementStatus never said Stale: {_placement_phase(world, 'cut', 'b', 'florin')}"

    hub_link.up()
    back_at = time.monotonic()

    def converged() -> bool:
        a, d, c = (world.get("florin", cm_path("app", n)) for n in ("a", "d", "c"))
        return a is not None and a["data"] == {"v": "2"} and d is not None and c is None

    wait_for(converged, timeout=CONVERGE_SECONDS, message="the cluster to converge after the link returned",
             retry_on=(httpx.TransportError,))
    took = time.monotonic() - back_at
    after = uids(world, "florin", "a", "b")
    assert after["a"][0] == before["a"][0] and after["b"] == before["b"]  # updated in place, b untouched
    wait_for(lambda: world.ready("florin").get("status") == "True", timeout=CONVERGE_SECONDS,
             message="florin Ready again")
    assert "Traceback" not in syncer.log(), syncer.log()[-3000:]
    print(f"converged {took:.1f}s after the link returned")


def test_a_syncer_behind_a_slow_lossy_link_keeps_up_with_ten_changes_a_second(tmp_path: Path) -> None:
    world = World(tmp_path, clusters=1).start()
    try:
        with TcpRelay("127.0.0.1", ("127.0.0.1", world.hub.port), latency=0.2, drop_fraction=0.01) as slow:
            world.join("florin", "wec1", {"env": "prod"}, hub_url=f"https://127.0.0.1:{slow.port}")
            place_configmaps(world, "slow", "first")
            world.wait_present("florin", cm_path("app", "first"), timeout=60)
            lags = _changes_at_a_steady_rate(world, slow)
        assert slow.dropped >= 1 and slow.accepted > slow.dropped
        assert max(lags) <= 3.0, f"the syncer fell behind: lag by second {lags}"
        print(f"relay: {slow.accepted} connections, {slow.dropped} cut; lag by second {lags}")
    finally:
        world.close()


def _changes_at_a_steady_rate(world: World, link: TcpRelay) -> list[float]:
    """Write ``CHANGES_PER_SECOND`` ConfigMap updates a second for ``CHANGE_SECONDS``; each second, how far (in
    seconds of changes) the cluster is behind the hub. Halfway, every connection through ``link`` is cut: a
    syncer holds only a few connections, so 1 % of them may never be one, and the cut that matters is its
    stream's."""
    path = "/clusters/slow/api/v1/namespaces/app/configmaps/first"
    started = time.monotonic()
    lags: list[float] = []
    with world.hub.client() as hub:
        for i in range(1, CHANGES_PER_SECOND * CHANGE_SECONDS + 1):
            due = started + i / CHANGES_PER_SECOND
            time.sleep(max(0.0, due - time.monotonic()))  # pacing the writer, not synchronising
            hub.patch(path, json={"data": {"v": str(i)}},
                      headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()
            if i == CHANGES_PER_SECOND * CHANGE_SECONDS // 2:
                link.cut_all()
            if i % CHANGES_PER_SECOND == 0:
                seen = int(((world.get("florin", cm_path("app", "first")) or {}).get("data") or {}).get("v", "0"))
                lags.append((i - seen) / CHANGES_PER_SECOND)
    last = CHANGES_PER_SECOND * CHANGE_SECONDS
    world.wait_present("florin", cm_path("app", "first"), timeout=10, check=lambda o: o["data"] == {"v": str(last)})
    return lags


def test_the_ui_shows_a_partitioned_cluster_down_and_its_copies_stale_and_heals_with_the_link(cut_off: CutOff) -> None:
    world, hub_link = cut_off.world, cut_off.hub_link
    place_configmaps(world, "cut", "a")
    world.wait_present("florin", cm_path("app", "a"), timeout=60)
    wait_for(lambda: world.ready("florin").get("status") == "True", timeout=30, message="florin Ready")
    stale_edges = ("() => { const e = [...document.querySelectorAll('path.edge[data-cluster=\"florin\"]')];"
                   " return e.length > 0 && e.every(x => x.dataset.state === 'stale'); }")
    browsers = browser_or_skip()  # skips, saying why, without a browser
    browser = next(browsers)
    try:
        page = open_ui(browser, world.hub)
        sign_in(page, world.hub.token)
        rendered(page, "placement", "#/space/cut/placement/p")
        hub_link.down()
        # The heartbeat timeout (6 s) and the UI's own refresh: well within 20 s.
        page.wait_for_selector('g.cluster[data-cluster="florin"][data-health="down"]', timeout=20_000)
        page.wait_for_function(stale_edges, timeout=20_000)
        hub_link.up()
        page.wait_for_selector('g.cluster[data-cluster="florin"][data-health="ready"]', timeout=CONVERGE_SECONDS * 1000)
        page.wait_for_function(stale_edges.replace("=== 'stale'", "=== 'ready'"), timeout=CONVERGE_SECONDS * 1000)
        assert page.errors == [], page.errors
        page.context.close()
    finally:
        browsers.close()
