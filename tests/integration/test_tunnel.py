"""The pod tunnel (docs/sync-protocol.md, "The tunnel"): syncers keep it open, the hub reaches pods through it.

Real processes and real network paths throughout. The hub-side API lives in the hub process, so the tests
of the relay itself run the real hub app on uvicorn in the test's event loop, with the syncer's tunnel in
the same loop dialling it over TLS through tinyproxy, against ``spacehub sim serve`` as the cluster (its
pods, watches, followed logs, exec and port-forward), and tests/tunnel_harness.py's ExecCluster where a
cluster must flood or close on demand. The rest runs the hub, the simulator and
``spacehub syncer run`` as processes: the tunnel's status, who may open it, hub restarts, proxies.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import secrets
import signal
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson
import pytest
import yaml

from apimachinery.errors import StatusError
from kubeclient.tunnel.frames import MAX_CHUNK, WINDOW, Kind, decode
from kubeclient.tunnel.stream import Closed, Message, Stream, StreamReset
from sync.tunnel import TunnelRegistry
from syncer.cluster import Cluster
from syncer.hubclient import HubConnections
from syncer.relay import ClusterRelay
from syncer.tunnel import Tunnel
from tests.harness import free_port, wait_for
from tests.polling import eventually
from tests.proxies import ForwardProxy, ReverseProxy, require
from tests.sim_harness import Sim
from tests.syncer_harness import World, proxy_env
from tests.tunnel_harness import (
    BIG_MESSAGE,
    FLOOD_BYTES,
    SUBPROTOCOLS,
    ExecCluster,
    HubInProcess,
    hub_in_process,
)

# kr8s warns of API server versions newer than it knows; the syncer silences that, pytest's filters do not.
pytestmark = pytest.mark.filterwarnings("ignore:Kubernetes version:UserWarning")
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
                   "NO_PROXY", "no_proxy")
NS = "debug"
STOP_SECONDS = 2.0  # a hub process exits within this after SIGTERM, tunnels open or not


# --- in process: the relay ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    base = tmp_path_factory.mktemp("tunnel-sim")
    s = Sim(data_dir=base / "sim", port=free_port(), home=base / "home", clusters=1)
    s.start()
    with s.client("wec1") as c:
        r = c.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        assert r.status_code == 201, r.text
    yield s
    s.stop()


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: Sim, no_proxies: None) -> Iterator[ForwardProxy]:
    """tinyproxy as this test process's HTTPS_PROXY, which the simulated cluster is exempt from."""
    require("tinyproxy")
    with ForwardProxy(tmp_path / "tinyproxy") as fp:
        monkeypatch.setenv("HTTPS_PROXY", fp.url)
        monkeypatch.setenv("NO_PROXY", f"127.0.0.1:{sim.port}")
        yield fp


@dataclass
class Linked:
    """A hub in this process and a syncer-side tunnel to it, in this event loop."""

    hub: HubInProcess
    tunnel: Tunnel

    @property
    def relay(self) -> ClusterRelay:
        return self.tunnel.relay

    @property
    def registry(self) -> TunnelRegistry:
        return self.hub.core.syncers.tunnels

    def syncer_streams(self) -> dict[int, Stream]:
        session = self.tunnel.session
        return session.streams if session is not None else {}


@contextlib.asynccontextmanager
async def linked(tmp_path: Path, kubeconfig: Path, target: str = "florin") -> AsyncIterator[Linked]:
    async with hub_in_process(tmp_path / "hub") as hub:
        bootstrap = await hub.register(target)
        cluster = await Cluster.connect(str(kubeconfig))
        connections = HubConnections.open(bootstrap)  # the proxy from the environment, as `syncer run` has it
        tunnel = Tunnel(bootstrap, connections.tunnels, ClusterRelay(cluster.http, target))
        running = asyncio.create_task(tunnel.run())
        try:
            await eventually(lambda: hub.core.syncers.tunnels.connected(target), message="the tunnel to connect")
            yield Linked(hub, tunnel)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await connections.aclose()
            await cluster.close()


def pod(name: str, note: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if note:
        meta["annotations"] = {"note": note}
        meta["labels"] = {"size": "big"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "web", "image": "library/httpd:2.4"}]}}


def create_pods(sim: Sim, *pods: dict[str, Any]) -> None:
    with sim.client("wec1") as c:
        for p in pods:
            r = c.post(f"/api/v1/namespaces/{NS}/pods", json=p)
            assert r.status_code == 201, r.text


async def body_of(response: Any) -> bytes:
    return b"".join([chunk async for chunk in response])


def test_pods_are_read_watched_and_deleted_through_a_tunnel_that_crosses_a_connect_proxy(
        tmp_path: Path, sim: Sim, proxy: ForwardProxy, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="syncer.relay")
    create_pods(sim, pod("reader"))

    async def scenario() -> None:
        async with linked(tmp_path, sim.kubeconfig("wec1")) as link:
            tunnels = link.registry
            response = await tunnels.request("florin", "GET", f"/api/v1/namespaces/{NS}/pods",
                                             headers=[("Accept", "application/json"), ("Authorization", "Bearer x")])
            assert response.status == 200
            assert ("content-type", "application/json") in [(k.lower(), v) for k, v in response.headers]
            listed = orjson.loads(await body_of(response))
            assert [p["metadata"]["name"] for p in listed["items"]] == ["reader"]

            # An error of the cluster's is a response like any other, its Status relayed as it was sent.
            missing = await tunnels.request("florin", "GET", f"/api/v1/namespaces/{NS}/pods/nobody")
            assert missing.status == 404
            assert orjson.loads(await body_of(missing))["reason"] == "NotFound"

            # A watch streams: its first event arrives while the response is still open.
            watch = await tunnels.request("florin", "GET", f"/api/v1/namespaces/{NS}/pods",
                                          query="watch=true&fieldSelector=metadata.name%3Dlate")
            assert watch.status == 200
            chunks = aiter(watch)
            await asyncio.to_thread(create_pods, sim, pod("late"))
            async with asyncio.timeout(20):
                first = await anext(chunks)
            event = orjson.loads(first.splitlines()[0])
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "late")
            assert link.syncer_streams(), "the watch ended instead of staying open"
            await watch.aclose()
            await eventually(lambda: not link.syncer_streams(), message="the syncer to drop the abandoned watch")

            # One pod may be deleted (with its DeleteOptions), as `kubectl delete pod` does.
            options = orjson.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
            deleted = await tunnels.request("florin", "DELETE", f"/api/v1/namespaces/{NS}/pods/late",
                                            headers=[("Content-Type", "application/json")], body=options)
            assert deleted.status == 200, await body_of(deleted)
            await body_of(deleted)

            # Refused on the hub before anything is sent: a Secret, another verb, a path trick.
            opened = link.registry._session("florin").opened
            for method, path in [("GET", f"/api/v1/namespaces/{NS}/secrets/token"),
                                 ("POST", f"/api/v1/namespaces/{NS}/pods"),
                                 ("GET", f"/api/v1/namespaces/{NS}/pods/reader/../../secrets/token"),
                                 ("GET", f"/api/v1/namespaces/{NS}/pods/reader%2F..%2Fsecrets")]:
                with pytest.raises(StatusError) as refused:
                    await tunnels.request("florin", method, path)
                assert refused.value.code == 403, (method, path)
            with pytest.raises(StatusError) as refused:
                await tunnels.request("florin", "GET", f"/api/v1/namespaces/{NS}/pods/reader/log",
                                      query="insecureSkipTLSVerifyBackend=true")
            assert refused.value.code == 403
            assert link.registry._session("florin").opened == opened

            # Refused by the syncer too, when a hub sends what the rules forbid anyway (no secrets in its log).
            session = link.registry._session("florin")
            for path in (f"/api/v1/namespaces/{NS}/secrets/token", f"/api/v1/namespaces/{NS}/pods/reader/proxy"):
                raw = session.open({"method": "GET", "path": path, "query": "labelSelector=s3cr3t-value",
                                    "headers": [], "upgrade": None})
                raw.end()
                with pytest.raises(StreamReset) as reset:
                    await raw.response(10)
                assert reset.value.status["code"] == 403, reset.value.status
            assert "refused a request through the tunnel" in caplog.text
            assert "secrets/token" in caplog.text and "s3cr3t-value" not in caplog.text

            # A token that expired in the syncer's hands is read again from its kubeconfig, and the request made.
            link.relay.http.auth.token = "st-expired"
            again = await tunnels.request("florin", "GET", f"/api/v1/namespaces/{NS}/pods/reader")
            assert again.status == 200 and link.relay.http.auth.token != "st-expired"
            await body_of(again)

            with pytest.raises(StatusError) as unavailable:
                await tunnels.request("guilder", "GET", "/api/v1/pods")
            assert (unavailable.value.code, unavailable.value.message) == (
                503, 'cluster "guilder" has no tunnel connected')

        assert proxy.connects_to(f"127.0.0.1:{link.hub.base_url.rsplit(':', 1)[1]}") >= 1, proxy.connect_log()
        assert proxy.connects_to(f"127.0.0.1:{sim.port}") == 0

    asyncio.run(scenario())
    with sim.client("wec1") as c:
        assert c.get(f"/api/v1/namespaces/{NS}/pods/late").status_code == 404


def test_a_reader_that_stops_reading_holds_its_stream_to_one_window_and_starves_no_other(
        tmp_path: Path, sim: Sim, proxy: ForwardProxy) -> None:
    note = secrets.token_hex(40_000)  # 80 KB a pod: the list is over 3 MB
    create_pods(sim, *(pod(f"big-{i}", note) for i in range(40)))

    async def scenario() -> None:
        async with linked(tmp_path, sim.kubeconfig("wec1")) as link:
            response = await link.registry.request("florin", "GET", f"/api/v1/namespaces/{NS}/pods",
                                                   query="labelSelector=size%3Dbig")
            assert response.status == 200
            chunks = aiter(response)
            first = await anext(chunks)

            def sender_stalled() -> bool:
                streams = list(link.syncer_streams().values())
                return len(streams) == 1 and streams[0].credit < MAX_CHUNK

            # The syncer stops reading from the cluster once the hub holds a window nobody has read,
            await eventually(sender_stalled, message="the syncer to run out of credit")
            assert link.tunnel.session is not None
            relayed = link.tunnel.session.bytes_sent
            await eventually(lambda: link.registry.status("florin")["bytesFromCluster"] == relayed,
                             message="what the syncer sent to arrive")
            assert response.buffered <= WINDOW and relayed <= len(first) + WINDOW
            # and another stream through the same tunnel is served meanwhile,
            async with asyncio.timeout(10):
                other = await link.registry.request("florin", "GET", f"/api/v1/namespaces/{NS}/pods/big-3")
                one = await body_of(other)
            assert orjson.loads(one)["metadata"]["name"] == "big-3"
            # while nothing more arrived for the stalled stream.
            assert sender_stalled() and response.buffered <= WINDOW
            assert link.registry.status("florin")["bytesFromCluster"] == relayed + len(one)

            rest = b"".join([chunk async for chunk in chunks])
            listed = orjson.loads(first + rest)
            assert len(listed["items"]) == 40 and len(first + rest) > 3_000_000

    asyncio.run(scenario())


def running(sim: Sim, name: str) -> bool:
    with sim.client("wec1") as c:
        return bool(c.get(f"/api/v1/namespaces/{NS}/pods/{name}").json().get("status", {}).get("phase") == "Running")


def add_log_lines(sim: Sim, name: str, *lines: str) -> None:
    with sim.client() as c:
        r = c.post(f"/sim/v1/clusters/wec1/namespaces/{NS}/pods/{name}/log", json={"lines": list(lines)})
        assert r.status_code == 200, r.text


def test_a_followed_log_comes_line_by_line_and_exec_and_port_forward_upgrade_through_the_tunnel(
        tmp_path: Path, sim: Sim, proxy: ForwardProxy) -> None:
    create_pods(sim, pod("chatty"))
    wait_for(lambda: running(sim, "chatty"), timeout=30, message="the pod running")
    path = f"/api/v1/namespaces/{NS}/pods/chatty"

    async def scenario() -> None:
        async with linked(tmp_path, sim.kubeconfig("wec1")) as link:
            tunnels = link.registry
            followed = await tunnels.request("florin", "GET", f"{path}/log", query="follow=true")
            assert followed.status == 200
            lines = aiter(followed)
            text = b""
            async with asyncio.timeout(20):
                while b"node:" not in text:  # the container's opening lines
                    text += await anext(lines)
                await asyncio.to_thread(add_log_lines, sim, "chatty", "first line added")
                while b"first line added\n" not in text:  # comes while the log is still open
                    text += await anext(lines)
            assert text.startswith(b"wec1/chatty/web started\n"), text
            await followed.aclose()

            # exec: the channel protocol's messages relayed as they are (stdout on channel 1), then the close.
            socket = await tunnels.websocket("florin", f"{path}/exec", "command=sh&command=-c&command=echo%20hi"
                                             "&stdout=true", SUBPROTOCOLS)
            assert socket.subprotocol == "v5.channel.k8s.io"
            received: list[Message] = []
            async with asyncio.timeout(20):
                while isinstance(message := await socket.receive(), Message):
                    received.append(message)
            assert b"".join(m.data[1:] for m in received if m.data[:1] == b"\x01") == b"hi\n"
            assert any(m.data[:1] == b"\x03" and b"Success" in m.data for m in received)  # the exit status
            assert message.code == 1000

            # port-forward: the SPDY-in-WebSocket subprotocol is offered and chosen as any other.
            forward = await tunnels.websocket("florin", f"{path}/portforward", "ports=80",
                                              ["SPDY/3.1+portforward.k8s.io"])
            assert forward.subprotocol == "SPDY/3.1+portforward.k8s.io"
            await forward.close()
            async with asyncio.timeout(20):
                assert isinstance(await forward.receive(), Closed)
            await eventually(lambda: not link.syncer_streams(), message="every stream to end")

    asyncio.run(scenario())


def test_websockets_are_relayed_message_by_message_with_flow_control_and_close_codes(tmp_path: Path,
                                                                                     no_proxies: None) -> None:
    exec_cluster = ExecCluster(tmp_path / "exec-cluster")
    path = f"/api/v1/namespaces/{NS}/pods/p/exec"
    query = "command=sh&command=-c&command=echo%20hi&stdin=true&stdout=true"

    async def scenario() -> None:
        await exec_cluster.start()
        try:
            kubeconfig = exec_cluster.kubeconfig(tmp_path / "c1.kubeconfig")  # a client certificate, no token
            async with linked(tmp_path, kubeconfig, target="c1") as link:
                tunnels = link.registry
                socket = await tunnels.websocket("c1", path, query, SUBPROTOCOLS)
                assert socket.subprotocol == SUBPROTOCOLS[0]
                assert exec_cluster.clients == ["syncer-of-c1"]
                await socket.send(Message(b"\x00hello"))
                assert await socket.receive() == Message(b"\x00hello")
                await socket.send(Message("h\u00e9".encode(), text=True))
                assert await socket.receive() == Message("h\u00e9".encode(), text=True)
                await socket.send(Message(b"big"))  # bigger than a frame: relayed in pieces, received whole
                assert await socket.receive() == Message(bytes(range(256)) * (BIG_MESSAGE // 256))

                await socket.send(Message(b"flood"))

                def sender_stalled() -> bool:
                    streams = list(link.syncer_streams().values())
                    return len(streams) == 1 and streams[0].credit < MAX_CHUNK

                await eventually(sender_stalled, message="the syncer to run out of credit")
                assert socket.buffered <= WINDOW
                flooded = 0
                while flooded < FLOOD_BYTES:
                    message = await socket.receive()
                    assert isinstance(message, Message), message
                    flooded += len(message.data)
                assert flooded == FLOOD_BYTES

                await socket.send(Message(b"close:4321"))  # the cluster closes: its code comes through
                assert await socket.receive() == Closed(4321, "asked to")
                await eventually(lambda: not link.syncer_streams(), message="the stream to end on both sides")

                second = await tunnels.websocket("c1", path, "stdin=true", SUBPROTOCOLS)
                await second.close(4000, "bye")  # the hub closes with its code; the cluster's answer comes back
                assert await second.receive() == Closed(1000, "")  # aiohttp's servers answer any close so
                assert exec_cluster.closed_with[-1] == 4000
                await eventually(lambda: not link.syncer_streams(), message="the second stream to end")

                with pytest.raises(StatusError) as refused:  # the cluster refuses the upgrade: its code
                    await tunnels.websocket("c1", f"/api/v1/namespaces/{NS}/pods/nobody/exec", "", SUBPROTOCOLS)
                assert refused.value.code == 404
                with pytest.raises(StatusError) as refused:  # the rules: logs are no WebSocket
                    await tunnels.websocket("c1", f"/api/v1/namespaces/{NS}/pods/p/log", "", SUBPROTOCOLS)
                assert refused.value.code == 403
        finally:
            await exec_cluster.stop()

    asyncio.run(scenario())


# --- processes: status, identities, restarts, proxies ------------------------------------------------


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, clusters=2).start()
    yield w
    w.close()


def tunnel_status(world: World, name: str, token: str | None = None) -> httpx.Response:
    with httpx.Client(base_url=world.hub.base_url, verify=world.hub.ssl_context(), timeout=10) as c:
        return c.get(f"/syncer/v1/targets/{name}/tunnel/status",
                     headers={"Authorization": f"Bearer {token or world.hub.token}"})


def connected_since(world: World, name: str) -> str | None:
    status = tunnel_status(world, name).json()
    return status.get("connectedSince") if status.get("connected") else None


def handshake(world: World, name: str, token: str | None, path: str = "") -> httpx.Response:
    """A WebSocket handshake (the tunnel's, or ``path``'s) as a plain HTTP request: a refusal is an HTTP error
    with a Status."""
    headers = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode()}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    with httpx.Client(base_url=world.hub.base_url, verify=world.hub.ssl_context(), timeout=10) as c:
        return c.get(path or f"/syncer/v1/targets/{name}/tunnel", headers=headers)


async def second_tunnel_replaces_the_first(world: World, name: str) -> None:
    url = f"{world.hub.base_url.replace('https', 'wss')}/syncer/v1/targets/{name}/tunnel"
    headers = {"Authorization": f"Bearer {world.token(name)}"}
    async with aiohttp.ClientSession() as http:
        first = await http.ws_connect(url, headers=headers, ssl=world.hub.ssl_context())
        hello = decode((await first.receive(timeout=10)).data)
        assert hello.kind == Kind.HELLO and hello.json() == {"version": 1, "pingInterval": 15.0}
        second = await http.ws_connect(url, headers=headers, ssl=world.hub.ssl_context())
        closed = await first.receive(timeout=10)
        assert (closed.type, closed.data) == (aiohttp.WSMsgType.CLOSE, 4000)
        await second.close()


def test_only_a_clusters_own_syncer_may_open_its_tunnel(world: World) -> None:
    world.register("florin")
    world.register("guilder")
    florin = world.token("florin")
    asyncio.run(second_tunnel_replaces_the_first(world, "florin"))
    for token, code in [(florin, 403), (None, 401), ("st-nonsense", 401), (world.hub.token, 403)]:
        refused = handshake(world, "guilder", token)
        assert refused.status_code == code, (token, refused.text)
        assert refused.json()["code"] == code
    assert handshake(world, "nobody", world.hub.token).status_code == 403
    # Every WebSocket is authenticated as HTTP requests are, wherever it goes.
    assert handshake(world, "", None, "/clusters/root/api/v1/namespaces").status_code == 401
    assert handshake(world, "", florin, "/metrics").status_code == 403

    assert tunnel_status(world, "guilder", florin).status_code == 403
    status = tunnel_status(world, "guilder")
    assert status.status_code == 200 and status.json() == {"syncTarget": "guilder", "connected": False}
    with httpx.Client(base_url=world.hub.base_url, verify=world.hub.ssl_context(), timeout=10) as c:
        plain = c.get("/syncer/v1/targets/florin/tunnel", headers={"Authorization": f"Bearer {florin}"})
    assert plain.status_code == 400 and "WebSocket" in plain.json()["message"]


def test_the_tunnel_status_is_for_whom_the_authorizer_allows_it(world: World, tmp_path: Path) -> None:
    world.register("florin")
    world.hub.create_space("team")
    kubeconfig = tmp_path / "alice.kubeconfig"
    world.hub.spacehub("user", "create", "alice", "--space", "team", "--role", "view", "--out", str(kubeconfig))
    alice = str(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"])
    assert tunnel_status(world, "florin", alice).status_code == 403
    path = "/syncer/v1/targets/florin/tunnel/status"
    world.apply("root", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                         "metadata": {"name": "tunnel-watcher"},
                         "rules": [{"nonResourceURLs": [path], "verbs": ["get"]}]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": "tunnel-watcher"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tunnel-watcher"},
                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]})
    granted = wait_for(lambda: (r := tunnel_status(world, "florin", alice)).status_code == 200 and r, timeout=10,
                       message="alice's grant to apply")
    assert granted.json() == {"syncTarget": "florin", "connected": False}
    assert tunnel_status(world, "guilder", alice).status_code == 403  # the grant names one path


def test_a_syncer_keeps_its_tunnel_through_a_connect_proxy_across_proxy_and_hub_restarts(world: World,
                                                                                          tmp_path: Path) -> None:
    require("tinyproxy")
    with ForwardProxy(tmp_path / "tinyproxy") as proxy:
        florin = world.join("florin", "wec1", {"env": "prod"}, env=proxy_env(world, proxy.url))
        first = wait_for(lambda: connected_since(world, "florin"), timeout=30, message="the tunnel connected")
        status = tunnel_status(world, "florin", world.token("florin")).json()  # its syncer may look too
        assert status["connected"] and status["streamsOpen"] == 0

        proxy.stop()  # the tunnel is the proxy's: it drops with it, and comes back with it
        wait_for(lambda: not tunnel_status(world, "florin").json()["connected"], timeout=30,
                 message="the tunnel to drop with the proxy")
        proxy.start()
        wait_for(lambda: connected_since(world, "florin"), timeout=60, message="the tunnel back through the proxy")

        assert world.hub.proc is not None
        world.hub.proc.send_signal(signal.SIGTERM)  # the tunnel ends with the process, which exits as quickly
        assert world.hub.proc.wait(timeout=STOP_SECONDS) == 0
        world.hub.proc = None
        world.hub.start()
        later = wait_for(lambda: connected_since(world, "florin"), timeout=60,
                         message="the tunnel back after the hub restarted")
        assert later >= first

        world.hub.spacehub("cluster", "delete", "florin")  # the hub ends the tunnel of a deleted cluster
        wait_for(lambda: "the hub refused the tunnel: 401" in florin.log(), timeout=30,
                 message="the syncer to find its tunnel ended and its credential revoked")
        log = florin.log()
        assert log.count("tunnel to ") >= 3 and "Traceback" not in log


def test_the_tunnel_passes_a_tls_terminating_reverse_proxy(world: World, tmp_path: Path) -> None:
    require("nginx")
    pki = world.hub.data_dir / "pki"
    with ReverseProxy(tmp_path / "nginx", world.hub.base_url, pki / "serving.crt", pki / "serving.key",
                      world.hub.ca_file) as lb:
        florin = world.join("florin", "wec1", {"env": "prod"}, hub_url=lb.url)
        wait_for(lambda: connected_since(world, "florin"), timeout=30, message="the tunnel through nginx")
        florin.stop()
        wait_for(lambda: " 101 " in lb.access_log() and lb.requests_to("/syncer/v1/targets/florin/tunnel") >= 1,
                 timeout=30, message=f"the tunnel in nginx's access log: {lb.access_log()}")
        assert not tunnel_status(world, "florin").json()["connected"]
