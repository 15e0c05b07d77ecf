"""Overload protection and placement slices past their size bound, on hubs with small limits."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator

import yaml

from tests.harness import Hub, wait_for

EDGE = "edge.kubestellar.io/v2alpha1"


@contextlib.contextmanager
def request_in_flight(hub: Hub, path: str, token: str) -> Iterator[None]:
    """A POST to ``path`` held in flight: its headers promise a body that is sent only on leaving, so the hub
    serves it (awaiting the rest of the body) for as long as the block runs."""
    body = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held"}}'
    with socket.create_connection(("127.0.0.1", hub.port), timeout=30) as raw, \
            hub.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{hub.port}\r\nAuthorization: Bearer {token}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                    + body[:1])
        yield
        tls.sendall(body[1:])
        assert tls.recv(64).startswith(b"HTTP/1.1 "), "the held request was never answered"


def test_requests_beyond_the_inflight_limit_get_429_with_retry_after(hub_factory: Callable[..., Hub]) -> None:
    hub = hub_factory("--max-requests-inflight", "1")
    path = "/clusters/root/api/v1/namespaces/default/configmaps"
    with hub.client() as c:
        assert c.get(path).status_code == 200  # one at a time: within the limit
        with request_in_flight(hub, path, hub.token):
            # Polled only until the hub has begun serving the held request; from then on every request waits.
            refused = wait_for(lambda: (r := c.get(path)).status_code == 429 and r,
                               message="a request beside the held one refused")
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["reason"] == "TooManyRequests" and refused.json()["code"] == 429
            assert c.get(path).status_code == 429
        assert c.get(path).status_code == 200  # the held request answered: the slot is free again
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
    heartbeat = "/syncer/v1/targets/busy/heartbeat"
    syncer = {"Authorization": f"Bearer {token}"}
    with hub.client() as c:
        assert c.post(heartbeat, json={}, headers=syncer).status_code == 200
        with request_in_flight(hub, heartbeat, token):
            wait_for(lambda: c.post(heartbeat, json={}, headers=syncer).status_code == 429,
                     message="a syncer request beside the held one refused")
            users = [c.get("/clusters/root/api/v1/namespaces/default/configmaps").status_code for _ in range(10)]
            assert users == [200] * 10  # the users' budget is their own
        assert c.post(heartbeat, json={}, headers=syncer).status_code == 200


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
