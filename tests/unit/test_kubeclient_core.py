"""The client core (``kubeclient``) against a real HTTP server (aiohttp's). The reflector: a dropped watch resumes
from the last resourceVersion seen, bookmarks move that version without reaching the caller, an expired version
(410, as an ERROR event or as the answer) lists again, and a failing server is listed again after the backoff.
The session: a 401 with credentials that cannot be read again is not asked twice (kr8s's are read again:
``test_syncer_cluster_http.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from kubeclient.client import GVR, ClusterError, KubeClient
from kubeclient.reflector import Reflector
from kubeclient.session import StaticCredentials

CONFIGMAPS = GVR("", "v1", "configmaps")
PATH = "/api/v1/configmaps"

# A watch's script: what the open stream carries, or (code, reason, message) answered instead of a stream.
Watch = Callable[[web.Request, web.StreamResponse], Awaitable[None]] | tuple[int, str, str]


def cm(name: str, rv: str) -> dict[str, Any]:
    return {"kind": "ConfigMap", "metadata": {"name": name, "resourceVersion": rv}}


class Server:
    """Answers lists from ``lists`` and watches from ``watches``, in order; records what each asked."""

    def __init__(self, lists: list[int | tuple[str, list[dict[str, Any]]]], watches: list[Watch]) -> None:
        self.lists = lists  # an error's HTTP status, or a list's resourceVersion and items
        self.watches = watches
        self.listed = 0
        self.watched_from: list[str] = []
        self.stopping = asyncio.Event()  # ends the watches held open

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            answer = self.lists[min(self.listed, len(self.lists) - 1)]
            self.listed += 1
            if isinstance(answer, int):
                return web.json_response({"kind": "Status", "code": answer, "reason": "InternalError"}, status=answer)
            rv, items = answer
            return web.json_response({"kind": "ConfigMapList", "metadata": {"resourceVersion": rv}, "items": items})
        assert request.query["allowWatchBookmarks"] == "true"
        self.watched_from.append(request.query["resourceVersion"])
        script = self.watches[min(len(self.watched_from), len(self.watches)) - 1]
        if isinstance(script, tuple):
            code, reason, message = script
            return web.json_response({"kind": "Status", "code": code, "reason": reason, "message": message},
                                     status=code)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await script(request, response)
        return response


SERVER = web.AppKey("server", Server)


async def send(response: web.StreamResponse, *events: dict[str, Any]) -> None:
    for event in events:
        await response.write(orjson.dumps(event) + b"\n")


async def hold(request: web.Request, _: web.StreamResponse) -> None:
    await request.app[SERVER].stopping.wait()  # an open watch with nothing to say, until the test ends


@contextlib.asynccontextmanager
async def reflecting(server: Server, *, retry: bool = True, resume_from: str = "", backoff: float = 0.05
                     ) -> AsyncIterator[tuple[list[list[str]], list[tuple[str, str]], asyncio.Task[None]]]:
    """A reflector of configmaps against ``server``, running; yields what reached its callbacks, and its task."""
    app = web.Application()
    app[SERVER] = server
    app.router.add_get(PATH, server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = KubeClient(StaticCredentials(f"http://127.0.0.1:{port}", None, ssl.create_default_context()), "test",
                        "test")
    listings: list[list[str]] = []
    events: list[tuple[str, str]] = []
    reflector = Reflector(client, CONFIGMAPS, owner="test", retry=retry,
                          on_list=lambda items: listings.append([i["metadata"]["name"] for i in items]),
                          on_event=lambda kind, obj: events.append((kind, obj["metadata"]["name"])))
    reflector.backoff.initial = backoff
    task = asyncio.create_task(reflector.run(resume_from))
    try:
        yield listings, events, task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # what ended it, the test has looked at
        server.stopping.set()
        await client.close()
        await runner.cleanup()


async def until(predicate: Callable[[], bool], what: str, seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def test_a_dropped_watch_resumes_from_the_last_version_a_bookmark_gave_without_listing_again() -> None:
    async def first(_: web.Request, response: web.StreamResponse) -> None:
        await send(response, {"type": "ADDED", "object": cm("b", "11")},
                   {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": "15"}}})
        # and the connection ends: the server's timeout, or something in between dropping it

    async def second(request: web.Request, response: web.StreamResponse) -> None:
        await send(response, {"type": "MODIFIED", "object": cm("a", "16")})
        await hold(request, response)

    server = Server([("10", [cm("a", "10")])], [first, second, hold])

    async def test() -> None:
        async with reflecting(server) as (listings, events, _):
            await until(lambda: len(events) == 2, "the second watch's event")
            assert server.watched_from[:2] == ["10", "15"]
            assert listings == [["a"]] and server.listed == 1
            assert events == [("ADDED", "b"), ("MODIFIED", "a")]  # the bookmark is not an event

    asyncio.run(test())


def test_an_expired_version_lists_again_and_watches_from_the_new_list() -> None:
    async def expired_event(_: web.Request, response: web.StreamResponse) -> None:
        await send(response, {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                                          "message": "too old resource version: 5 (30)"}})

    server = Server([("5", [cm("a", "5")]), ("30", [cm("b", "30")]), ("40", [cm("c", "40")])],
                    [expired_event, (410, "Gone", "too old resource version"), hold])

    async def test() -> None:
        # A backoff of a minute: a 410 taken for a failure would not list again before the test gives up.
        async with reflecting(server, backoff=60.0) as (listings, events, _):
            await until(lambda: len(server.watched_from) == 3, "the third watch")
            assert server.watched_from == ["5", "30", "40"]
            assert listings == [["a"], ["b"], ["c"]]
            assert events == []

    asyncio.run(test())


def test_a_failing_server_is_listed_again_after_the_backoff() -> None:
    server = Server([500, 500, ("3", [cm("a", "3")])], [hold])

    async def test() -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        async with reflecting(server) as (listings, _, _):
            await until(lambda: listings == [["a"]], "the list after two failures")
            assert server.listed == 3
            # Two pauses, the second twice the first (0.05 s, then 0.1 s, each jittered to at least half).
            assert loop.time() - began >= 0.075

    asyncio.run(test())


def test_without_retry_a_reflector_resumed_from_a_callers_list_ends_with_the_servers_error() -> None:
    server = Server([("1", [])], [(403, "Forbidden", "no watching")])

    async def test() -> None:
        async with reflecting(server, retry=False, resume_from="7") as (listings, _, task):
            await until(task.done, "the reflector to end")
            error = task.exception()
            assert isinstance(error, ClusterError) and (error.code, error.message) == (403, "no watching")
            assert server.watched_from == ["7"] and server.listed == 0 and listings == []

    asyncio.run(test())


def test_a_401_with_credentials_that_cannot_be_read_again_is_asked_once_and_raised() -> None:
    asked: list[str] = []

    async def refuse(request: web.Request) -> web.Response:
        asked.append(request.headers.get("Authorization", ""))
        return web.json_response({"kind": "Status", "code": 401, "reason": "Unauthorized", "message": "no"},
                                 status=401)

    async def test() -> None:
        app = web.Application()
        app.router.add_get("/api", refuse)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        client = KubeClient(StaticCredentials(f"http://127.0.0.1:{runner.addresses[0][1]}", "t0",
                                              ssl.create_default_context()), "test", "test")
        try:
            try:
                await client.request_json("GET", "/api")
            except ClusterError as exc:
                assert (exc.code, exc.reason, exc.message) == (401, "Unauthorized", "no")
            else:
                raise AssertionError("a 401 must raise")
            assert asked == ["Bearer t0"]
            assert client.reach.reachable is True  # an answer, though a refusal
        finally:
            await client.close()
            await runner.cleanup()

    asyncio.run(test())
