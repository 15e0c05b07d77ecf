"""A hub, simulated clusters and real ``spacehub syncer run`` processes, wired together for end-to-end tests.

:class:`World` owns one hub and one ``spacehub sim serve`` (both subprocesses, on free ports, in the
test's temporary directory); :meth:`World.join` registers a hub cluster for a simulated cluster and
starts its syncer process. Clusters are read over HTTP with each cluster's own token; waits poll with
a deadline.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.harness import BIN, Hub, free_port, wait_for
from tests.processes import ChildProcess
from tests.sim_harness import Sim

EDGE = "edge.kubestellar.io/v2alpha1"
COUNT = "kubestellar.io/executing-count"


@dataclass
class SyncerProcess(ChildProcess):
    name: str  # the hub's cluster (SyncTarget) name
    bootstrap: Path
    kubeconfig: Path
    state: Path
    log_path: Path
    hub_url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    extra_args: Sequence[str] = ()
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        cmd = [str(BIN / "spacehub"), "syncer", "run", "--bootstrap", str(self.bootstrap), "--kubeconfig",
               str(self.kubeconfig), "--state", str(self.state)]
        if self.hub_url:
            cmd += ["--hub-url", self.hub_url]
        cmd += list(self.extra_args)
        self.launch(cmd, env=self.env)


@dataclass
class World:
    base: Path
    clusters: int = 2
    hub_args: tuple[str, ...] = ()
    sim_args: tuple[str, ...] = ()
    hub: Hub = field(init=False)
    sim: Sim = field(init=False)
    syncers: dict[str, SyncerProcess] = field(default_factory=dict)
    cluster_of: dict[str, str] = field(default_factory=dict)  # hub cluster name -> sim cluster name

    def __post_init__(self) -> None:
        self.hub = Hub(data_dir=self.base / "hub", port=free_port(), home=self.base / "home",
                       extra_args=self.hub_args)
        self.sim = Sim(data_dir=self.base / "sim", port=free_port(), home=self.base / "simhome",
                       clusters=self.clusters, extra_args=self.sim_args)

    def start(self) -> World:
        self.hub.start()
        self.sim.start()
        return self

    def close(self) -> None:
        for syncer in self.syncers.values():
            syncer.stop()
        self.sim.stop()
        self.hub.stop()

    def syncer_env(self, **extra: str) -> dict[str, str]:
        env = self.sim.env()
        env.pop("KUBECONFIG", None)
        env.update(extra)
        return env

    def register(self, name: str, **labels: str) -> Path:
        out = self.base / f"{name}-bootstrap.yaml"
        args = [arg for k, v in labels.items() for arg in ("--label", f"{k}={v}")]
        self.hub.spacehub("cluster", "register", name, *args, "--bootstrap-out", str(out))
        return out

    def token(self, name: str) -> str:
        return str(yaml.safe_load((self.base / f"{name}-bootstrap.yaml").read_text())["token"])

    def join(self, name: str, sim_cluster: str, labels: dict[str, str], *, start: bool = True,
             hub_url: str | None = None, env: dict[str, str] | None = None,
             extra_args: Sequence[str] = ()) -> SyncerProcess:
        """Register hub cluster ``name`` and run its syncer against simulated cluster ``sim_cluster``."""
        bootstrap = self.register(name, **labels)
        syncer = SyncerProcess(name=name, bootstrap=bootstrap, kubeconfig=self.sim.kubeconfig(sim_cluster),
                               state=self.base / "syncer-state" / f"{name}.db",
                               log_path=self.base / f"syncer-{name}.log", hub_url=hub_url,
                               env=env if env is not None else self.syncer_env(), extra_args=extra_args)
        self.syncers[name] = syncer
        self.cluster_of[name] = sim_cluster
        if start:
            syncer.start()
        return syncer

    # --- the hub's side ---------------------------------------------------------------------------

    def apply(self, space: str, *docs: dict[str, Any]) -> None:
        self.hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump_all(docs))

    def hub_get(self, space: str, path: str) -> dict[str, Any] | None:
        with self.hub.client() as c:
            r = c.get(f"/clusters/{space}{path}")
        if r.status_code == 404:
            return None
        assert r.status_code == 200, r.text
        return dict(r.json())

    def ready(self, target: str) -> dict[str, Any]:
        """The SyncTarget's ``Ready`` condition at the hub ({} while it has none)."""
        found = self.hub_get("inventory", f"/apis/edge.kubestellar.io/v2alpha1/synctargets/{target}") or {}
        return next((c for c in (found.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), {})

    def placement_view(self, space: str, namespace: str, resource: str, name: str) -> dict[str, Any]:
        with self.hub.client() as c:
            r = c.get(f"/placement/v1/spaces/{space}/namespaces/{namespace}/objects/{resource}/{name}")
        assert r.status_code == 200, r.text
        return dict(r.json())

    # --- the clusters' side -----------------------------------------------------------------------

    def get(self, cluster: str, path: str) -> dict[str, Any] | None:
        """GET ``path`` (e.g. ``/api/v1/namespaces/x/configmaps/y``) in hub cluster ``cluster``'s sim cluster."""
        with self.sim.client(self.cluster_of.get(cluster, cluster)) as c:
            r = c.get(path)
        if r.status_code == 404:
            return None
        assert r.status_code == 200, r.text
        return dict(r.json())

    def wait_present(self, cluster: str, path: str, timeout: float = 30.0,
                     check: Any = None) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            obj = self.get(cluster, path)
            return obj if obj is not None and (check is None or check(obj)) else None
        return wait_for(found, timeout=timeout, message=f"{path} in {cluster}", retry_on=(httpx.TransportError,))

    def wait_absent(self, cluster: str, path: str, timeout: float = 30.0) -> None:
        wait_for(lambda: self.get(cluster, path) is None, timeout=timeout, message=f"{path} gone from {cluster}",
                 retry_on=(httpx.TransportError,))


class ReadySampler:
    """Samples one placed object's PlacementStatus every ``interval`` seconds (100 ms) in a thread, from the start
    of a ``with`` block to its end: ``min_ready`` is the fewest clusters it showed Ready (leaving copies that are
    still Ready count) from the first sample showing one on, what a move must never bring to 0. ``samples``
    keeps (seconds since start, ``summary.ready``, each cluster's phase) for the failure message and for checks
    on the order of phases.

    ``summary`` is the PlacementStatus's name (``deployments.apps.web``: plural, group or ``core``, name)."""

    def __init__(self, world: World, space: str, namespace: str, summary: str, interval: float = 0.1) -> None:
        self.path = (f"/clusters/{space}/apis/status.spacehub.io/v1alpha1/namespaces/{namespace}"
                     f"/placementstatuses/{summary}")
        self.world = world
        self.interval = interval
        self.samples: list[tuple[float, int, dict[str, str]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ReadySampler:
        self._thread.start()
        wait_for(lambda: self.samples, timeout=10, message=f"a first sample of {self.path}")
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        started = time.monotonic()
        with self.world.hub.client() as c:
            while not self._stop.is_set():
                tick = time.monotonic()
                r = c.get(self.path)
                body = r.json() if r.status_code == 200 else {}
                phases = {str(e.get("name")): str(e.get("phase")) for e in body.get("clusters") or []}
                self.samples.append((tick - started, int((body.get("summary") or {}).get("ready") or 0), phases))
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - tick)))

    @property
    def min_ready(self) -> int:
        readies = [ready for _, ready, _ in self.samples]
        first = next((i for i, ready in enumerate(readies) if ready), len(readies) - 1)
        return min(readies[first:])

    def saw(self, cluster: str, phase: str) -> bool:
        """Whether some sample showed ``cluster`` in ``phase``."""
        return any(phases.get(cluster) == phase for _, _, phases in self.samples)

    def describe(self) -> str:
        return "\n".join(f"{t:6.2f}s ready={ready} {phases}" for t, ready, phases in self.samples)


def placement(name: str, location_labels: dict[str, str], downsync: list[dict[str, Any]], *,
              singleton: bool = False) -> dict[str, Any]:
    return {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": [{"matchLabels": location_labels}], "downsync": downsync,
                     "wantSingletonReportedState": singleton}}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def configmap(name: str, ns: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


def deployment(name: str, ns: str, replicas: int = 2) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "web", "image": "library/httpd:2.4"}]}}}}


def replicaset(name: str, ns: str, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"rs": name}},
                     "template": {"metadata": {"labels": {"rs": name}},
                                  "spec": {"containers": [{"name": "web", "image": "library/httpd:2.4"}]}}}}


def cm_path(ns: str, name: str) -> str:
    return f"/api/v1/namespaces/{ns}/configmaps/{name}"


def place_configmaps(world: World, space: str, *names: str, labels: dict[str, str] | None = None) -> None:
    world.hub.create_space(space)
    world.apply(space, namespace("app"), *(configmap(n, "app", v="1") for n in names),
                placement("p", labels or {"env": "prod"},
                          [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}]))


def uids(world: World, cluster: str, *names: str) -> dict[str, tuple[str, str]]:
    """uid and resourceVersion of each ConfigMap: equal later means neither re-created nor re-written."""
    result = {}
    for name in names:
        obj = world.get(cluster, cm_path("app", name))
        assert obj is not None, f"{name} missing from {cluster}"
        result[name] = (obj["metadata"]["uid"], obj["metadata"]["resourceVersion"])
    return result


def proxy_env(world: World, proxy_url: str) -> dict[str, str]:
    """A syncer environment whose hub traffic goes through ``proxy_url`` and whose cluster traffic does not."""
    env = world.syncer_env()
    for key in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY",
                "all_proxy"):
        env.pop(key, None)
    env["HTTPS_PROXY"] = proxy_url
    env["NO_PROXY"] = world.sim.base_url  # httpx: a URL in NO_PROXY exempts exactly that scheme://host:port
    return env


def status_post(world: World, token: str, target: str, body: dict[str, Any], path: str = "status") -> httpx.Response:
    with httpx.Client(base_url=world.hub.base_url, verify=world.hub.ssl_context(), timeout=30) as c:
        return c.post(f"/syncer/v1/targets/{target}/{path}", json=body, headers={"Authorization": f"Bearer {token}"})


def environ_without_proxies() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
