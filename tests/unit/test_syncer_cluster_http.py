"""The syncer's cluster client against a real HTTP server (aiohttp's), for what a simulated cluster never sends:
watch events longer than aiohttp's line limit, error answers that are not a ``Status``, a token the server stops
taking, and a hub behind a path prefix."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiohttp import web

from kubeclient.client import GVR, ClusterError
from syncer.cluster import Cluster

CONFIGMAPS = GVR("", "v1", "configmaps")


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, routes: list[web.RouteDef], server_path: str = "") -> AsyncIterator[Cluster]:
    """An HTTP server with ``routes`` (and ``/version/``, which kr8s asks on connect), and a Cluster for it."""

    async def version(_: web.Request) -> web.Response:
        return web.json_response({"gitVersion": "v1.31.0"})

    app = web.Application()
    app.add_routes([web.get(f"{server_path}/version/", version), *routes])
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}{server_path}"}}],
        "users": [{"name": "u", "user": {"token": "t0"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    cluster = await Cluster.connect(str(kubeconfig))
    try:
        yield cluster
    finally:
        await cluster.close()
        await runner.cleanup()


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())


def test_a_watch_event_longer_than_aiohttps_line_limit_arrives_whole(tmp_path: Path) -> None:
    big = {"type": "ADDED", "object": {"kind": "ConfigMap", "metadata": {"name": "big", "resourceVersion": "7"},
                                       "data": {"blob": "x" * 400_000}}}
    small = {"type": "MODIFIED", "object": {"kind": "ConfigMap", "metadata": {"name": "s", "resourceVersion": "8"}}}

    async def watch(request: web.Request) -> web.StreamResponse:
        assert request.query["watch"] == "true" and request.query["resourceVersion"] == "6"
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        wire = orjson.dumps(big) + b"\n" + orjson.dumps(small) + b"\n"
        for start in range(0, len(wire), 65_000):  # lines cut anywhere, as TCP delivers them
            await response.write(wire[start:start + 65_000])
        await response.write_eof()
        return response

    async def test() -> None:
        async with serving(tmp_path, [web.get("/api/v1/namespaces/app/configmaps", watch)]) as cluster:
            events = [e async for e in cluster.watch(CONFIGMAPS, "", "6", namespace="app")]
            assert events == [big, small]
            assert cluster.reach.watching == 0

    run(test)


def test_an_error_that_is_not_a_status_keeps_its_code_and_says_what_came(tmp_path: Path) -> None:
    async def bad_gateway(_: web.Request) -> web.Response:
        return web.Response(status=502, text="<html>upstream unavailable</html>", content_type="text/html")

    async def missing(_: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound",
                                  "message": 'configmaps "gone" not found'}, status=404)

    async def test() -> None:
        routes = [web.patch("/api/v1/namespaces/app/configmaps/cm", bad_gateway),
                  web.get("/api/v1/namespaces/app/configmaps/gone", missing)]
        async with serving(tmp_path, routes) as cluster:
            with pytest.raises(ClusterError) as raised:
                await cluster.apply(CONFIGMAPS, "app", "cm", {"kind": "ConfigMap"})
            assert (raised.value.code, raised.value.reason) == (502, "BadGateway")
            assert "upstream unavailable" in raised.value.message
            assert cluster.reach.reachable is True  # an answer, though an error
            assert await cluster.get(CONFIGMAPS, "app", "gone") is None

    run(test)


def test_a_refused_token_is_read_again_from_the_kubeconfig_and_the_request_made(tmp_path: Path) -> None:
    seen: list[str] = []

    async def apply(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != "Bearer t1":
            return web.json_response({"kind": "Status", "code": 401, "reason": "Unauthorized"}, status=401)
        assert request.query["fieldManager"] == "spacehub-syncer" and request.query["force"] == "true"
        assert request.content_type == "application/apply-patch+yaml"
        return web.json_response({**await request.json(), "applied": True})

    async def test() -> None:
        async with serving(tmp_path, [web.patch("/api/v1/namespaces/app/configmaps/cm", apply)]) as cluster:
            rotated = yaml.safe_load((tmp_path / "kubeconfig").read_text())
            rotated["users"][0]["user"]["token"] = "t1"
            (tmp_path / "kubeconfig").write_text(yaml.safe_dump(rotated))
            answer = await cluster.apply(CONFIGMAPS, "app", "cm", {"kind": "ConfigMap"})
            assert answer == {"kind": "ConfigMap", "applied": True}
            assert seen == ["Bearer t0", "Bearer t1"]

    run(test)


def test_a_child_hubs_clusters_are_asked_beside_its_space_under_its_path_prefix(tmp_path: Path) -> None:
    async def clusters(_: web.Request) -> web.Response:
        return web.json_response({"items": [{"name": "leaf1"}]})

    async def test() -> None:
        routes: list[Any] = [web.get("/prefix/placement/v1/clusters", clusters)]
        async with serving(tmp_path, routes, server_path="/prefix/clusters/team") as cluster:
            assert await cluster.hub_clusters() == [{"name": "leaf1"}]

    run(test)
