"""The proxy helpers of tests/proxies.py against the real hub: tinyproxy as a CONNECT proxy and nginx as a
TLS-terminating reverse proxy, both real programs (skipped when not installed)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from apiserver.server.tls import SERVING_CERT, SERVING_KEY
from tests.harness import Hub, wait_for
from tests.proxies import ForwardProxy, ReverseProxy

PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
             "NO_PROXY", "no_proxy")


@pytest.fixture
def forward_proxy(tmp_path: Path) -> Iterator[ForwardProxy]:
    with ForwardProxy(tmp_path / "tinyproxy") as fp:
        yield fp


@pytest.fixture
def reverse_proxy(tmp_path: Path, hub: Hub) -> Iterator[ReverseProxy]:
    pki = hub.data_dir / "pki"
    with ReverseProxy(tmp_path / "nginx", upstream=hub.base_url, cert_file=pki / SERVING_CERT,
                      key_file=pki / SERVING_KEY, upstream_ca=hub.ca_file) as rp:
        yield rp


def readyz_via(hub: Hub, fp: ForwardProxy) -> int:
    with httpx.Client(proxy=fp.url, verify=hub.ssl_context(), trust_env=False, timeout=10) as c:
        return c.get(f"{hub.base_url}/readyz").status_code


def test_forward_proxy_tunnels_and_comes_back_on_the_same_port(hub: Hub, forward_proxy: ForwardProxy) -> None:
    target = f"127.0.0.1:{hub.port}"
    assert readyz_via(hub, forward_proxy) == 200
    assert forward_proxy.connects_to(target) == 1, forward_proxy.connect_log()

    port = forward_proxy.port
    forward_proxy.stop()
    with pytest.raises((httpx.ProxyError, httpx.ConnectError)):
        readyz_via(hub, forward_proxy)

    forward_proxy.start()
    assert forward_proxy.port == port
    assert readyz_via(hub, forward_proxy) == 200
    assert forward_proxy.connects_to(target) == 2, forward_proxy.connect_log()


def test_https_proxy_environment_variable_goes_through_the_forward_proxy(
        hub: Hub, forward_proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", forward_proxy.url)
    target = f"127.0.0.1:{hub.port}"
    before = forward_proxy.connects_to(target)
    with httpx.Client(verify=hub.ssl_context(), trust_env=True, timeout=10) as c:
        assert c.get(f"{hub.base_url}/readyz").status_code == 200
    assert forward_proxy.connects_to(target) == before + 1, forward_proxy.connect_log()


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}


def next_event(lines: Iterator[str], deadline: float) -> dict[str, Any]:
    """The next watch event; each read is bounded by the client's read timeout, the whole by ``deadline``."""
    while time.monotonic() < deadline:
        line = next(lines)
        if line.strip():
            event: dict[str, Any] = orjson.loads(line)
            return event
    raise AssertionError("no watch event before the deadline")


def test_reverse_proxy_terminates_tls_and_streams_watches(hub: Hub, reverse_proxy: ReverseProxy, space: str) -> None:
    with httpx.Client(verify=hub.ssl_context(), trust_env=False, timeout=10) as c:
        assert c.get(f"{reverse_proxy.url}/readyz").status_code == 200
    wait_for(lambda: reverse_proxy.requests_to("/readyz") == 1, timeout=10,
             message=f"/readyz in nginx's access log: {reverse_proxy.access_log()}")

    path = f"/clusters/{space}/api/v1/namespaces/default/configmaps"
    auth = {"Authorization": f"Bearer {hub.token}"}
    # Watch and writes on separate connections; reads time out after 10 s instead of hanging the test.
    with httpx.Client(base_url=reverse_proxy.url, verify=hub.ssl_context(), trust_env=False, timeout=10,
                      headers=auth) as writer, \
         httpx.Client(base_url=reverse_proxy.url, verify=hub.ssl_context(), trust_env=False, timeout=10,
                      headers=auth) as watcher:
        r = writer.post(path, json=configmap("before-watch"))
        assert r.status_code == 201, r.text
        with watcher.stream("GET", path, params={"watch": "true"}) as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            first = next_event(lines, time.monotonic() + 10)
            assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "before-watch"), first

            # The stream is still open: a write made now must arrive on it, not after it ends.
            r = writer.post(path, json=configmap("during-watch"))
            assert r.status_code == 201, r.text
            deadline = time.monotonic() + 10
            while True:
                event = next_event(lines, deadline)
                if event["object"]["metadata"]["name"] == "during-watch":
                    break
            assert event["type"] == "ADDED", event

    assert reverse_proxy.requests_to(path) >= 2  # the two POSTs, logged when they finished
    # The watch is logged once nginx has noticed that the client went away.
    wait_for(lambda: reverse_proxy.requests_to(f"{path}?watch=true") == 1, timeout=10,
             message=f"the watch in nginx's access log: {reverse_proxy.access_log()}")
