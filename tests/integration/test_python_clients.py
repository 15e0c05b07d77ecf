"""The Python ``kubernetes`` client and ``kr8s`` work against a space unchanged."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import kr8s
import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from tests.harness import Hub


def core_api(hub: Hub, space: str) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(hub.api_client(space))


def space_kubeconfig(hub: Hub, space: str, tmp_path: Path) -> Path:
    out = tmp_path / f"{space}.kubeconfig"
    out.write_text(hub.spacehub("space", "kubeconfig", space).stdout)
    return out


def test_kubernetes_client_lists_watches_from_a_version_and_patches(hub: Hub, space: str) -> None:
    api = core_api(hub, space)
    body = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="py"), data={"k": "v"})
    created = api.create_namespaced_config_map("default", body)
    listed = api.list_namespaced_config_map("default")
    assert [i.metadata.name for i in listed.items] == ["kube-root-ca.crt", "py"]  # the first: every namespace's
    api.patch_namespaced_config_map("py", "default", {"data": {"k": "patched"}})
    assert api.read_namespaced_config_map("py", "default").data == {"k": "patched"}

    seen: list[tuple[str, str]] = []
    w = k8s_watch.Watch()
    for event in w.stream(api.list_namespaced_config_map, "default",
                          resource_version=created.metadata.resource_version, timeout_seconds=10):
        seen.append((event["type"], event["object"].data["k"]))
        if len(seen) == 1:
            w.stop()
    assert seen == [("MODIFIED", "patched")]


def test_kubernetes_client_gets_410_after_compaction(compacting_hub: Hub) -> None:
    api = core_api(compacting_hub, "root")
    first = api.create_namespaced_config_map("default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="c")))
    for i in range(60):
        api.patch_namespaced_config_map("c", "default", {"data": {"i": str(i)}})

    def stream_once() -> None:
        for _ in k8s_watch.Watch().stream(api.list_namespaced_config_map, "default",
                                          resource_version=first.metadata.resource_version, timeout_seconds=5):
            pass

    deadline_hit = True
    for _ in range(100):  # compaction runs every 0.5 s in this hub; poll until it has passed `first`
        try:
            stream_once()
        except ApiException as exc:
            assert exc.status == 410
            deadline_hit = False
            break
    assert not deadline_hit, "no 410 Expired after compaction"


def test_kr8s_lists_watches_and_patches(hub: Hub, space: str, tmp_path: Path) -> None:
    api = kr8s.api(kubeconfig=str(space_kubeconfig(hub, space, tmp_path)))
    cm = kr8s.objects.ConfigMap({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "k8s-lite", "namespace": "default"}, "data": {"a": "1"}},
                                api=api)
    cm.create()
    found = list(api.get("configmaps", namespace="default"))
    assert [o.name for o in found] == ["k8s-lite", "kube-root-ca.crt"]  # the second: every namespace's
    events: list[tuple[str, Any]] = []
    started = threading.Event()

    def watch() -> None:
        started.set()
        for kind, obj in api.watch("configmaps", namespace="default", since=cm.metadata.resourceVersion):
            events.append((kind, obj.raw["data"]))
            break

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    started.wait(5)
    cm.patch({"data": {"a": "2"}})
    t.join(timeout=20)
    assert events == [("MODIFIED", {"a": "2"})]
    cm.refresh()
    assert cm.raw["data"] == {"a": "2"}


@pytest.fixture(autouse=True)
def _isolate_kubeconfig(monkeypatch: pytest.MonkeyPatch, hub: Hub) -> None:
    # kr8s and the kubernetes client must not pick up a developer's own ~/.kube/config.
    monkeypatch.setenv("KUBECONFIG", str(hub.kubeconfig))
