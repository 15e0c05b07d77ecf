"""Overload protection and placement slices past their size bound, on hubs with small limits."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import yaml

from tests.harness import Hub, wait_for

EDGE = "edge.kubestellar.io/v2alpha1"


def test_requests_beyond_the_inflight_limit_get_429_with_retry_after(hub_factory: Callable[..., Hub]) -> None:
    hub = hub_factory("--max-requests-inflight", "1")

    def ask(_: int) -> httpx.Response:
        with hub.client() as c:
            return c.get("/clusters/root/api/v1/namespaces/default/configmaps")

    with ThreadPoolExecutor(16) as pool:
        responses = list(pool.map(ask, range(200)))
    refused = [r for r in responses if r.status_code == 429]
    assert refused, "no request was refused"
    assert all(r.status_code in (200, 429) for r in responses)
    assert refused[0].headers["retry-after"] == "1"
    assert refused[0].json()["reason"] == "TooManyRequests"
    # kubectl (client-go) backs off and retries a 429.
    assert hub.kubectl("get", "namespaces", space="root").returncode == 0


def test_syncers_flooding_the_hub_are_refused_among_themselves_and_users_are_still_served(
        hub_factory: Callable[..., Hub]) -> None:
    """Syncers have their own in-flight budget (as APF gives kubelets a priority level of their own): a fleet
    reporting at once is throttled, and a user's request beside it is served, not refused."""
    hub = hub_factory("--max-requests-inflight", "1")
    with hub.client() as c:
        registered = c.post("/placement/v1/clusters", json={"name": "busy"})
        assert registered.status_code in (200, 201), registered.text
        token = registered.json()["bootstrap"]["token"]

    def heartbeat(_: int) -> int:
        with hub.client() as c:
            return c.post("/syncer/v1/targets/busy/heartbeat", json={},
                          headers={"Authorization": f"Bearer {token}"}).status_code

    with ThreadPoolExecutor(16) as pool:
        syncers = [pool.submit(heartbeat, i) for i in range(400)]
        with hub.client() as c:  # one at a time, while the syncers' requests go on: within the users' budget
            users = [c.get("/clusters/root/api/v1/namespaces/default/configmaps").status_code for _ in range(40)]
        assert not all(f.done() for f in syncers), "the syncers' flood ended before the user's requests"
        codes = [f.result() for f in syncers]
    assert 429 in codes, "no syncer request was refused"
    assert set(codes) <= {200, 429}, codes
    assert users == [200] * 40


def test_a_placement_with_many_destinations_is_split_into_several_slices(hub_factory: Callable[..., Hub]) -> None:
    hub = hub_factory("--placement-slice-size", "2")
    for i in range(5):
        hub.spacehub("cluster", "register", f"split-{i}", "--label", "fleet=split")
    hub.create_space("splitting")
    placement = {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": "wide"},
                 "spec": {"locationSelectors": [{"matchLabels": {"fleet": "split"}}],
                          "downsync": [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["default"]}]}}
    hub.kubectl("apply", "-f", "-", space="splitting", input=yaml.safe_dump(placement))

    def slices() -> dict[str, list[str]]:
        with hub.client() as c:
            items = c.get("/clusters/splitting/apis/edge.kubestellar.io/v2alpha1/singleplacementslices").json()["items"]
        return {i["metadata"]["name"]: [d["syncTargetName"] for d in i["destinations"]] for i in items}

    wait_for(lambda: sorted(slices()) == ["wide", "wide-2", "wide-3"], message="three slices")
    split = slices()
    assert sorted(t for ts in split.values() for t in ts) == [f"split-{i}" for i in range(5)]
    assert [len(split[n]) for n in ("wide", "wide-2", "wide-3")] == [2, 2, 1]
    for i in range(3):
        hub.spacehub("cluster", "delete", f"split-{i}")
    wait_for(lambda: slices() == {"wide": ["split-3", "split-4"]}, message="slices shrink back to one")
