"""syncer.syncer in-process: what the syncer does to its cluster for each message of the hub's stream.

The cluster is a simulated one (``sim.app``) served by uvicorn in the test's event loop; the syncer is given
the stream's messages (docs/sync-protocol.md) one by one, and the cluster is read back through its API.
The hub is never reached: these messages need nothing from it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
import yaml

from sim.app import SimSettings, build_app
from sim.faults import Faults
from syncer.bootstrap import Bootstrap
from syncer.cluster import GVR, Cluster
from syncer.held import MANAGED_LABEL
from syncer.hubclient import HubClient, HubConnections
from syncer.state import StateStore
from syncer.syncer import Syncer, SyncerOptions
from tests.harness import free_port
from tests.polling import eventually

CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")
TOKEN = "wec1-token"


@contextlib.asynccontextmanager
async def simulated_cluster(tmp_path: Path, faults: Faults | None = None) -> AsyncIterator[Cluster]:
    """One simulated cluster ``wec1`` over plain HTTP on a free port (with ``faults`` from the start), and a
    Cluster client for it."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app, _core = build_app(SimSettings(db_url=f"sqlite:///{tmp_path / 'sim.db'}", admin_token="sim-admin",
                                       clusters=["wec1"], cluster_tokens={"wec1": TOKEN}, public_url=base,
                                       insecure_http=True, faults={"wec1": faults} if faults else {}))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve())
    kubeconfig = tmp_path / "wec1.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "wec1",
        "clusters": [{"name": "wec1", "cluster": {"server": f"{base}/clusters/wec1"}}],
        "users": [{"name": "wec1", "user": {"token": TOKEN}}],
        "contexts": [{"name": "wec1", "context": {"cluster": "wec1", "user": "wec1"}}]}))
    try:
        await eventually(lambda: server.started or serving.done(), timeout=30, message="the simulator to start")
        if serving.done():
            serving.result()
        cluster = await Cluster.connect(str(kubeconfig))
        try:
            yield cluster
        finally:
            await cluster.close()
    finally:
        server.should_exit = True
        await serving


@contextlib.asynccontextmanager
async def syncer_for(tmp_path: Path, cluster: Cluster, target: str = "florin") -> AsyncIterator[Syncer]:
    # The hub's address is never dialled by the messages these tests send.
    bootstrap = Bootstrap.from_dict({"apiVersion": "spacehub.io/v1alpha1", "kind": "SyncerBootstrap",
                                     "hub": "https://127.0.0.1:1", "syncTarget": target, "token": "st-unused",
                                     "certificateAuthorityData": None}, "test")
    connections = HubConnections.open(bootstrap)
    try:
        yield Syncer(bootstrap, cluster, HubClient(bootstrap, connections), StateStore(tmp_path / "state.db"),
                     SyncerOptions(tunnel=False))
    finally:
        await connections.aclose()


def entry(resource: str, name: str, namespace: str = "", *, space: str = "team", kind: str = "object",
          implicit: bool = False) -> dict[str, Any]:
    return {"space": space, "group": "", "version": "v1", "resource": resource, "namespace": namespace,
            "name": name, "entryKind": kind, **({"implicit": True} if implicit else {})}


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": data}


def upsert(seq: int, e: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": "UPSERT", "seq": seq, "entry": e, "object": obj}


NS_APP = entry("namespaces", "app", kind="namespace", implicit=True)
NS_OBJ = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}


def test_upserts_apply_marked_objects_and_a_delete_removes_only_what_is_ours(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with simulated_cluster(tmp_path) as cluster, syncer_for(tmp_path, cluster) as syncer:
            await syncer._handle(upsert(1, NS_APP, NS_OBJ))
            await syncer._handle(upsert(2, entry("configmaps", "settings", "app"), configmap("settings", "app",
                                                                                             mode="fast")))
            live = await cluster.get(CONFIGMAPS, "app", "settings")
            assert live is not None and live["data"] == {"mode": "fast"}
            assert live["metadata"]["labels"][MANAGED_LABEL] == "true"
            assert syncer.seq() == 2 and syncer.managed() == 2 and syncer.failing() == 0
            # A changed object is applied again.
            await syncer._handle(upsert(3, entry("configmaps", "settings", "app"), configmap("settings", "app",
                                                                                             mode="slow")))
            assert (await cluster.get(CONFIGMAPS, "app", "settings") or {})["data"] == {"mode": "slow"}
            # Somebody else's object of the same name is never deleted: the marks are gone, so it is left.
            await cluster.apply(CONFIGMAPS, "app", "theirs", configmap("theirs", "app", owner="them"))
            await syncer._handle(upsert(4, entry("configmaps", "theirs", "app"), configmap("theirs", "app")))
            await cluster.merge_patch(CONFIGMAPS, "app", "theirs", {"metadata": {"labels": {MANAGED_LABEL: None}}})
            await syncer._handle({"type": "DELETE", "seq": 5, "entry": entry("configmaps", "theirs", "app")})
            assert await cluster.get(CONFIGMAPS, "app", "theirs") is not None
            await syncer._handle({"type": "DELETE", "seq": 6, "entry": entry("configmaps", "settings", "app")})
            assert await cluster.get(CONFIGMAPS, "app", "settings") is None
            assert syncer.seq() == 6
    asyncio.run(scenario())


def test_a_snapshot_prunes_what_it_did_not_name_and_keeps_an_object_another_space_still_wants(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        async with simulated_cluster(tmp_path) as cluster, syncer_for(tmp_path, cluster) as syncer:
            await syncer._handle(upsert(1, NS_APP, NS_OBJ))
            for seq, name in enumerate(("keep", "drop", "shared"), start=2):
                await syncer._handle(upsert(seq, entry("configmaps", name, "app"), configmap(name, "app")))
            other = entry("configmaps", "shared", "app", space="other")
            await syncer._handle(upsert(5, other, configmap("shared", "app")))
            # A full resync naming only "keep" (and its namespace) from team, and "shared" from the other space.
            await syncer._handle({"type": "RESET", "seq": 9})
            await syncer._handle(upsert(9, NS_APP, NS_OBJ))
            await syncer._handle(upsert(9, entry("configmaps", "keep", "app"), configmap("keep", "app")))
            await syncer._handle(upsert(9, other, configmap("shared", "app")))
            # Nothing is deleted before the snapshot is complete.
            assert await cluster.get(CONFIGMAPS, "app", "drop") is not None
            await syncer._handle({"type": "SYNCED", "seq": 9, "epoch": "e1"})
            assert await cluster.get(CONFIGMAPS, "app", "drop") is None
            assert await cluster.get(CONFIGMAPS, "app", "keep") is not None
            assert await cluster.get(CONFIGMAPS, "app", "shared") is not None  # the other space still wants it
            assert await cluster.get(NAMESPACES, "", "app") is not None
            assert syncer.seq() == 9 and syncer.in_sync.is_set()
    asyncio.run(scenario())


def test_what_it_holds_survives_a_restart_and_a_later_delete_still_removes_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with simulated_cluster(tmp_path) as cluster:
            async with syncer_for(tmp_path, cluster) as first:
                await first._handle(upsert(1, NS_APP, NS_OBJ))
                await first._handle(upsert(2, entry("configmaps", "settings", "app"), configmap("settings", "app")))
                await first._handle({"type": "SYNCED", "seq": 2, "epoch": "e1"})
            async with syncer_for(tmp_path, cluster) as second:  # the same state file: a restarted syncer
                assert second.seq() == 2 and second.managed() == 2
                await second._handle({"type": "DELETE", "seq": 3, "entry": entry("configmaps", "settings", "app")})
                assert await cluster.get(CONFIGMAPS, "app", "settings") is None
    asyncio.run(scenario())


def test_an_object_deleted_while_the_retries_are_busy_is_not_deleted_twice(tmp_path: Path) -> None:
    """The retry loop takes the due objects, then works through them one at a time: one the stream deleted
    meanwhile is gone, and the loop goes on (it once deleted it again and stopped on the KeyError)."""
    gvr = {"group": "ate.dev", "version": "v1alpha1", "resource": "workerpools"}  # a kind the cluster does not serve

    def pool(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return ({**entry("workerpools", name, "app"), **gvr},
                {"apiVersion": "ate.dev/v1alpha1", "kind": "WorkerPool", "metadata": {"name": name, "namespace": "app"},
                 "spec": {"replicas": 1}})

    async def scenario() -> None:
        slow = Faults(latency_seconds=0.3)  # every request: a retry of three of them takes about a second
        async with simulated_cluster(tmp_path, slow) as cluster, syncer_for(tmp_path, cluster) as syncer:
            for seq, name in enumerate(("first", "second"), start=1):
                await syncer._handle(upsert(seq, *pool(name)))
            first, second = syncer.held["ate.dev/workerpools/app/first"], syncer.held["ate.dev/workerpools/app/second"]
            assert first.error and second.error and "CRDMissing" in second.error
            loop = asyncio.get_running_loop()
            await eventually(lambda: second.retry_at <= loop.time(), timeout=10, message="both retries due")
            retries = asyncio.create_task(syncer._retry_loop())
            try:
                await eventually(lambda: first.in_flight, timeout=10, message="the first retry under way")
                await syncer._handle({"type": "DELETE", "seq": 3, "entry": pool("second")[0]})
                assert first.in_flight and "ate.dev/workerpools/app/second" not in syncer.held
                errors = syncer.apply_errors
                # The loop lives on: the first pool's retries go on failing (its CRD is still missing).

                def retried_again() -> bool:
                    if retries.done():
                        retries.result()  # what stopped it
                    return syncer.apply_errors > errors + 1
                await eventually(retried_again, timeout=20, message="the first pool retried after the delete")
            finally:
                retries.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await retries
    asyncio.run(scenario())
