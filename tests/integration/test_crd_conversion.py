"""CRD conversion webhooks, called over real HTTPS: a CRD with v1 (``spec.size: "3"``) stored and v2
(``spec.replicas: 3``) served through the test's webhook for get, list and watch (kubectl and the Python
``kubernetes`` client) and for writes in v2, kube's 500 when the webhook is down (the hub answering
everything else meanwhile), the error for a webhook that renames the objects it converts, and the metadata a
webhook may change (labels, annotations) and may not (the rest, which is put back)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from tests.harness import KUBECTL, Hub, free_port, kubectl_yaml
from tests.polling import wait_for
from tests.webhook_harness import SLOW_SECONDS, WebhookServer, webhook_server

GROUP = "conv.example.com"
KIND = "Gadget"
V1 = f"gadgets.v1.{GROUP}"
V2 = f"gadgets.v2.{GROUP}"


@pytest.fixture(scope="module")
def webhooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    with webhook_server(tmp_path_factory.mktemp("conversion-pki")) as server:
        yield server


def crd(url: str, ca_bundle: str) -> str:
    def version(name: str, storage: bool, spec: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}}}

    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": KIND, "listKind": "GadgetList"},
                 "versions": [version("v1", True, {"size": {"type": "string"}}),
                              version("v2", False, {"replicas": {"type": "integer"}})],
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "clientConfig": {"url": url, "caBundle": ca_bundle}, "conversionReviewVersions": ["v1"]}}}})


def install(hub: Hub, space: str, url: str, ca_bundle: str) -> None:
    hub.kubectl("apply", "-f", "-", space=space, input=crd(url, ca_bundle))
    hub.kubectl("wait", "--for=condition=Established", f"crd/gadgets.{GROUP}", "--timeout=10s", space=space)
    wait_for(lambda: hub.kubectl("get", V1, "-n", "default", space=space, check=False).returncode == 0,
             timeout=10, message="gadgets served")


def gadget(name: str, version: str, **spec: Any) -> str:
    return yaml.safe_dump({"apiVersion": f"{GROUP}/{version}", "kind": KIND,
                           "metadata": {"name": name, "namespace": "default", "labels": {"app": "gadgets"}},
                           "spec": spec})


def test_objects_stored_as_v1_are_read_as_v2_and_v2_writes_are_stored_as_v1(hub: Hub, space: str,
                                                                              webhooks: WebhookServer) -> None:
    install(hub, space, webhooks.url("convert"), webhooks.ca_bundle)
    hub.kubectl("create", "-f", "-", space=space, input=gadget("a", "v1", size="3"))
    got = kubectl_yaml(hub.kubectl("get", V2, "a", "-n", "default", "-o", "yaml", space=space))
    assert got["apiVersion"] == f"{GROUP}/v2" and got["spec"] == {"replicas": 3}
    assert got["metadata"]["labels"] == {"app": "gadgets"} and got["metadata"]["uid"]
    review = webhooks.seen("convert")[-1]
    assert review["desiredAPIVersion"] == f"{GROUP}/v2" and [o["spec"] for o in review["objects"]] == [{"size": "3"}]

    # A write in v2 is converted to the storage version before it is stored: read as v1 without a webhook call.
    hub.kubectl("create", "-f", "-", space=space, input=gadget("b", "v2", replicas=5))
    assert webhooks.seen("convert")[-1]["desiredAPIVersion"] == f"{GROUP}/v1"
    calls = len(webhooks.seen("convert"))
    stored = kubectl_yaml(hub.kubectl("get", V1, "b", "-n", "default", "-o", "yaml", space=space))
    assert stored["spec"] == {"size": "5"} and len(webhooks.seen("convert")) == calls
    hub.kubectl("patch", V2, "b", "-n", "default", "--type=merge", "-p", '{"spec": {"replicas": 7}}', space=space)
    assert kubectl_yaml(hub.kubectl("get", V1, "b", "-n", "default", "-o", "yaml", space=space))["spec"] == {
        "size": "7"}

    # A list's objects go to the webhook in one ConversionReview.
    listed = kubectl_yaml(hub.kubectl("get", V2, "-n", "default", "-o", "yaml", space=space))
    assert [(i["metadata"]["name"], i["spec"]) for i in listed["items"]] == [("a", {"replicas": 3}),
                                                                            ("b", {"replicas": 7})]
    assert [o["metadata"]["name"] for o in webhooks.seen("convert")[-1]["objects"]] == ["a", "b"]
    table = hub.kubectl("get", V2, "-n", "default", space=space).stdout
    assert [line.split()[0] for line in table.splitlines()[1:]] == ["a", "b"]

    # The Python client reads, lists and watches v2.
    api = k8s.CustomObjectsApi(hub.api_client(space))
    assert api.get_namespaced_custom_object(GROUP, "v2", "default", "gadgets", "a")["spec"] == {"replicas": 3}
    page = api.list_namespaced_custom_object(GROUP, "v2", "default", "gadgets")
    assert [i["spec"] for i in page["items"]] == [{"replicas": 3}, {"replicas": 7}]
    events: list[tuple[str, Any]] = []
    watching = k8s_watch.Watch()

    def follow() -> None:
        for event in watching.stream(api.list_namespaced_custom_object, GROUP, "v2", "default", "gadgets",
                                     resource_version=page["metadata"]["resourceVersion"], timeout_seconds=20):
            events.append((event["type"], event["object"]["apiVersion"], event["object"]["spec"]))
            watching.stop()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    # kubectl watches v2 too (its initial list, then the change), one line per event.
    assert KUBECTL
    kubectl_watch = subprocess.Popen(
        [KUBECTL, "--server", f"{hub.base_url}/clusters/{space}", "get", V2, "-n", "default", "--watch",
         "-o", "custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas", "--no-headers"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=hub.env)
    assert kubectl_watch.stdout is not None
    watch_out = kubectl_watch.stdout
    lines: list[str] = []

    def read() -> None:
        for line in watch_out:
            lines.append("=".join(line.split()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: {"a=3", "b=7"} <= set(lines), timeout=15, message="kubectl's initial watch events")
        hub.kubectl("apply", "-f", "-", space=space, input=gadget("a", "v1", size="4"))
        wait_for(lambda: "a=4" in lines, timeout=15, message=f"kubectl's watch event in v2 {lines} {events}")
    finally:
        kubectl_watch.terminate()
        kubectl_watch.wait(10)
    follower.join(20)
    assert events == [("MODIFIED", f"{GROUP}/v2", {"replicas": 4})]


def test_a_webhook_that_is_down_is_kubes_500_and_the_hub_keeps_serving(hub: Hub, space: str,
                                                                        webhooks: WebhookServer) -> None:
    port = free_port()
    down = f"https://127.0.0.1:{port}/convert"
    install(hub, space, down, webhooks.ca_bundle)
    hub.kubectl("create", "-f", "-", space=space, input=gadget("stuck", "v1", size="1"))
    prefix = (f"conversion webhook for {GROUP}/v1, Kind={KIND} failed: Post \"{down}\": dial tcp 127.0.0.1:{port}: "
              "connect: connection refused")
    for args in (("get", V2, "stuck"), ("get", V2)):
        out = hub.kubectl(*args, "-n", "default", space=space, check=False)
        assert out.returncode != 0 and f"Error from server: {prefix}" in out.stderr, out.stderr
    with hub.client() as c:
        answer = c.get(f"/clusters/{space}/apis/{GROUP}/v2/namespaces/default/gadgets/stuck")
        assert answer.status_code == 500 and answer.json()["message"].startswith(prefix)
        created = c.post(f"/clusters/{space}/apis/{GROUP}/v2/namespaces/default/gadgets",
                         json=yaml.safe_load(gadget("new", "v2", replicas=2)))
        assert created.status_code == 500 and created.json()["message"].startswith(
            f"conversion webhook for {GROUP}/v2, Kind={KIND} failed: ")
        # A watch of v2 gets the failure as an ERROR event when a change needs converting.
        since = c.get(f"/clusters/{space}/apis/{GROUP}/v1/namespaces/default/gadgets").json()["metadata"][
            "resourceVersion"]
        with c.stream("GET", f"/clusters/{space}/apis/{GROUP}/v2/namespaces/default/gadgets",
                      params={"watch": "1", "resourceVersion": since, "timeoutSeconds": "20"}) as watch:
            hub.kubectl("create", "-f", "-", space=space, input=gadget("later", "v1", size="2"))
            event = json.loads(next(watch.iter_lines()))
        assert event["type"] == "ERROR" and event["object"]["code"] == 500
        assert event["object"]["message"].startswith(prefix)
    # A dry run converts to the storage version too, as kube's dry-run storage does.
    dry = hub.kubectl("create", "--dry-run=server", "-f", "-", space=space, check=False,
                      input=gadget("dry", "v2", replicas=1))
    assert dry.returncode != 0 and f"conversion webhook for {GROUP}/v2, Kind={KIND} failed" in dry.stderr
    # The storage version needs no webhook, and the hub serves everything else.
    assert kubectl_yaml(hub.kubectl("get", V1, "stuck", "-n", "default", "-o", "yaml", space=space))["spec"] == {
        "size": "1"}
    assert hub.kubectl("get", V1, "new", "-n", "default", space=space, check=False).returncode != 0
    hub.kubectl("create", "configmap", "still-served", "-n", "default", space=space)


def test_a_hanging_webhook_holds_only_the_request_that_called_it(hub: Hub, space: str,
                                                                 webhooks: WebhookServer) -> None:
    install(hub, space, webhooks.url("slow"), webhooks.ca_bundle)
    hub.kubectl("create", "-f", "-", space=space, input=gadget("waiting", "v1", size="1"))
    assert KUBECTL
    started = time.monotonic()
    held = subprocess.Popen([KUBECTL, "--server", f"{hub.base_url}/clusters/{space}", "get", V2, "waiting", "-n",
                             "default"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=hub.env)
    try:
        wait_for(lambda: any(r["objects"][0]["metadata"]["name"] == "waiting" for r in webhooks.seen("slow")
                             if "objects" in r), timeout=15, message="the conversion request at the webhook")
        hub.kubectl("get", V1, "waiting", "-n", "default", space=space)
        hub.kubectl("create", "configmap", "answered", "-n", "default", space=space)
        assert held.poll() is None and time.monotonic() - started < SLOW_SECONDS
        _out, err = held.communicate(timeout=SLOW_SECONDS + 30)
    finally:
        if held.poll() is None:
            held.kill()
            held.wait(10)
    # The slow endpoint answers an AdmissionReview: not what a conversion webhook must answer.
    assert held.returncode != 0 and (f"conversion webhook for {GROUP}/v1, Kind={KIND} failed: expected webhook "
                                     "response of apiextensions.k8s.io/v1, Kind=ConversionReview, got "
                                     "admission.k8s.io/v1, Kind=AdmissionReview") in err


def test_a_webhook_that_changes_the_name_is_refused(hub: Hub, space: str, webhooks: WebhookServer) -> None:
    install(hub, space, webhooks.url("convert-rename"), webhooks.ca_bundle)
    hub.kubectl("create", "-f", "-", space=space, input=gadget("named", "v1", size="2"))
    out = hub.kubectl("get", V2, "named", "-n", "default", space=space, check=False)
    assert out.returncode != 0
    assert (f"Error from server: conversion webhook for {GROUP}/v1, Kind={KIND} returned invalid converted object "
            "at index 0: must have the same name: named != renamed") in out.stderr
    assert webhooks.seen("convert-rename")


def test_a_webhook_may_change_labels_but_not_other_metadata(hub: Hub, space: str, webhooks: WebhookServer) -> None:
    install(hub, space, webhooks.url("convert-relabel"), webhooks.ca_bundle)
    hub.kubectl("create", "-f", "-", space=space, input=gadget("kept", "v1", size="6"))
    stored = kubectl_yaml(hub.kubectl("get", V1, "kept", "-n", "default", "-o", "yaml", space=space))
    served = kubectl_yaml(hub.kubectl("get", V2, "kept", "-n", "default", "-o", "yaml", space=space))
    assert served["spec"] == {"replicas": 6}
    assert served["metadata"]["labels"] == {"app": "gadgets", "converted": "yes"}
    assert served["metadata"]["creationTimestamp"] == stored["metadata"]["creationTimestamp"] != "2000-01-01T00:00:00Z"
    # Deleting the CRD deletes its objects in the storage version: no webhook call needed.
    calls = len(webhooks.seen("convert-relabel"))
    hub.kubectl("delete", "crd", f"gadgets.{GROUP}", "--timeout=20s", space=space)
    assert len(webhooks.seen("convert-relabel")) == calls
