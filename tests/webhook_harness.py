"""A real HTTPS admission webhook server for tests: aiohttp on its own event loop in a thread, serving
with a certificate from a CA made for the test (not the hub's), and recording every review it receives.

Endpoints: ``/mutate`` labels the object (JSON patch) and warns; ``/validate`` refuses objects whose
``data`` has a key ``forbidden`` and deletes of those with a key ``undeletable``; ``/annotate`` annotates
the object unless it is annotated already; ``/rename`` patches the object's name; ``/mistype`` patches
``data`` into a list; ``/slow`` answers
after ``SLOW_SECONDS`` (longer than any timeout a test sets); ``/garbage`` answers 200 with a body
that is not an AdmissionReview.

CRD conversion (ConversionReview v1): ``/convert`` converts between ``v1`` (``spec.size``, a string) and
``v2`` (``spec.replicas``, an integer) of any group; ``/convert-rename`` does too but renames the objects;
``/convert-relabel`` labels them (allowed) and changes their ``creationTimestamp`` (which kube puts back).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from apiserver.server.tls import ensure_pki
from tests.harness import free_port

SLOW_SECONDS = 20
MUTATED_LABEL = ("webhook.test/mutated", "yes")


def _allow(review: dict[str, Any], **response: Any) -> web.Response:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True, **response}}
    return web.json_response(body)


def _deny(review: dict[str, Any], message: str) -> web.Response:
    return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
        "uid": review["request"]["uid"], "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": message}}})


def _converted(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """``obj`` in version v1 (spec.size: "3") or v2 (spec.replicas: 3) as ``desired`` names it."""
    spec = dict(obj.get("spec") or {})
    if desired.endswith("/v2") and "size" in spec:
        spec["replicas"] = int(spec.pop("size"))
    elif desired.endswith("/v1") and "replicas" in spec:
        spec["size"] = str(spec.pop("replicas"))
    return {**obj, "apiVersion": desired, "spec": spec}


def _conversion_answer(review: dict[str, Any], objects: list[dict[str, Any]]) -> web.Response:
    return web.json_response({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": {
        "uid": review["request"]["uid"], "convertedObjects": objects, "result": {"status": "Success"}}})


def _json_patch(operations: list[dict[str, Any]]) -> str:
    return base64.b64encode(orjson.dumps(operations)).decode()


@dataclass
class WebhookServer:
    ca_bundle: str  # base64 of the CA's PEM, as a configuration's clientConfig.caBundle holds it
    port: int
    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (endpoint, review request)

    def url(self, endpoint: str) -> str:
        return f"https://127.0.0.1:{self.port}/{endpoint}"

    def seen(self, endpoint: str) -> list[dict[str, Any]]:
        return [req for where, req in list(self.received) if where == endpoint]

    async def _mutate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("mutate", review["request"]))
        obj = review["request"]["object"]
        key, value = MUTATED_LABEL
        if (obj["metadata"].get("labels") or {}).get(key) == value:
            return _allow(review)
        if obj["metadata"].get("labels"):
            ops = [{"op": "add", "path": "/metadata/labels/" + key.replace("/", "~1"), "value": value}]
        else:
            ops = [{"op": "add", "path": "/metadata/labels", "value": {key: value}}]
        return _allow(review, patchType="JSONPatch", patch=_json_patch(ops), warnings=["labelled by the test webhook"],
                      auditAnnotations={"mutated": "true"})

    async def _validate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("validate", review["request"]))
        request = review["request"]
        if "forbidden" in (request["object"] or {}).get("data", {}):
            return _deny(review, "the key 'forbidden' is not allowed")
        if request["operation"] == "DELETE" and "undeletable" in request["oldObject"].get("data", {}):
            return _deny(review, "this object may not be deleted")
        return _allow(review)

    async def _annotate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("annotate", review["request"]))
        if "webhook.test/annotated" in (review["request"]["object"]["metadata"].get("annotations") or {}):
            return _allow(review)
        return _allow(review, patchType="JSONPatch", patch=_json_patch([
            {"op": "add", "path": "/metadata/annotations", "value": {"webhook.test/annotated": "yes"}}]))

    async def _rename(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("rename", review["request"]))
        return _allow(review, patchType="JSONPatch", patch=_json_patch([
            {"op": "replace", "path": "/metadata/name", "value": "renamed"}]))

    async def _mistype(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("mistype", review["request"]))
        return _allow(review, patchType="JSONPatch", patch=_json_patch([
            {"op": "add", "path": "/data", "value": ["not", "a", "map"]}]))

    async def _slow(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("slow", review["request"]))
        await asyncio.sleep(SLOW_SECONDS)
        return _allow(review)

    async def _convert(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("convert", review["request"]))
        desired = review["request"]["desiredAPIVersion"]
        return _conversion_answer(review, [_converted(o, desired) for o in review["request"]["objects"]])

    async def _convert_rename(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("convert-rename", review["request"]))
        desired = review["request"]["desiredAPIVersion"]
        renamed = [{**(c := _converted(o, desired)), "metadata": {**c["metadata"], "name": "renamed"}}
                   for o in review["request"]["objects"]]
        return _conversion_answer(review, renamed)

    async def _convert_relabel(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("convert-relabel", review["request"]))
        desired = review["request"]["desiredAPIVersion"]
        relabelled = []
        for obj in review["request"]["objects"]:
            converted = _converted(obj, desired)
            meta = converted["metadata"]
            relabelled.append({**converted, "metadata": {
                **meta, "labels": {**(meta.get("labels") or {}), "converted": "yes"},
                "creationTimestamp": "2000-01-01T00:00:00Z"}})
        return _conversion_answer(review, relabelled)

    async def _garbage(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.append(("garbage", review["request"]))
        return web.Response(text="<html>this is not an AdmissionReview</html>", content_type="text/html")

    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes([web.post("/mutate", self._mutate), web.post("/validate", self._validate),
                        web.post("/annotate", self._annotate), web.post("/rename", self._rename),
                        web.post("/mistype", self._mistype),
                        web.post("/slow", self._slow), web.post("/garbage", self._garbage),
                        web.post("/convert", self._convert), web.post("/convert-rename", self._convert_rename),
                        web.post("/convert-relabel", self._convert_relabel)])
        return app


async def _shutdown(runner: web.AppRunner) -> None:
    """Stop serving and end the handlers still running (a slow webhook's sleep)."""
    await runner.cleanup()
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


@contextmanager
def webhook_server(pki_dir: Path) -> Iterator[WebhookServer]:
    """Serve the test webhooks over HTTPS on a free port until the block ends."""
    pki = ensure_pki(pki_dir, ["127.0.0.1"])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    server = WebhookServer(base64.b64encode(pki.ca_cert_pem).decode(), free_port())
    loop = asyncio.new_event_loop()
    started = threading.Event()
    runner = web.AppRunner(server.app(), shutdown_timeout=0.1)

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", server.port, ssl_context=context).start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="webhook-server", daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("the webhook server did not start")
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(_shutdown(runner), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
