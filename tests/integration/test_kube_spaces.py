"""Kube spaces (``Space.spec.provider: kube``) through real kubectl: a hub, a simulated cluster as the space's
API server (its own ``spacehub sim serve``, no syncer), and another simulated cluster with a syncer to place
onto. The space is listed, written, watched and server-side applied at ``/clusters/root:<space>``, an
EdgePlacement in it delivers a ConfigMap, and an API server that stops is reported on the Space while the
placed ConfigMap stays, even through a restart of the hub and the syncer's full resync with it."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import KUBECTL, free_port, wait_for
from tests.integration.test_access_control import cluster_role_grant, make_user
from tests.sim_harness import Sim
from tests.syncer_harness import World, cm_path, configmap, namespace, placement

LABELS = {"env": "kube-space"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("kube-spaces"), clusters=1)
    w.start()
    try:
        w.join("dest", "wec1", LABELS)
        yield w
    finally:
        w.close()


@pytest.fixture(scope="module")
def provider(world: World) -> Iterator[Sim]:
    """The kube space's API server: cluster wec1 of a second simulator."""
    sim = Sim(data_dir=world.base / "provider", port=free_port(), home=world.base / "provider-home", clusters=1)
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


def _space(name: str, **spec: Any) -> str:
    return json.dumps({"apiVersion": "spacehub.io/v1alpha1", "kind": "Space", "metadata": {"name": name},
                       "spec": spec})


def _ref(secret: str) -> dict[str, str]:
    return {"namespace": "default", "name": secret, "key": "kubeconfig"}


def _condition(world: World, name: str) -> dict[str, Any]:
    space = world.hub.kubectl("get", "space", name, "-o", "json")
    found = [c for c in (json.loads(space.stdout).get("status") or {}).get("conditions") or []
             if c["type"] == "ProviderReachable"]
    return found[0] if found else {}


def _wait_condition(world: World, name: str, status: str, timeout: float = 30) -> dict[str, Any]:
    return wait_for(lambda: (c := _condition(world, name)).get("status") == status and c, timeout=timeout,
                    message=f"space {name} ProviderReachable={status}")


@pytest.fixture(scope="module")
def kube_space(world: World, provider: Sim) -> str:
    """A kube space at root:<name>, backed by ``provider``'s wec1; its name."""
    name = f"kube-{uuid.uuid4().hex[:6]}"
    world.hub.kubectl("create", "secret", "generic", f"{name}-kubeconfig", "-n", "default",
                      f"--from-file=kubeconfig={provider.kubeconfig('wec1')}")
    created = world.hub.kubectl("create", "-f", "-", input=_space(name, provider="kube",
                                                                    kubeconfigSecretRef=_ref(f"{name}-kubeconfig")))
    assert created.stdout == f"space.spacehub.io/{name} created\n"
    reachable = _wait_condition(world, name, "True")
    assert reachable["reason"] == "Reachable" and provider.base_url in reachable["message"]
    return name


def _kubectl(world: World, space: str, *args: str, check: bool = True, input: str | None = None
             ) -> subprocess.CompletedProcess[str]:
    return world.hub.kubectl(*args, space=f"root:{space}", check=check, input=input)


def _assert_unavailable(world: World, space: str, why: str) -> None:
    with world.hub.client() as c:
        r = c.get(f"/clusters/root:{space}/api/v1/configmaps")
    status = r.json()
    assert (r.status_code, status["reason"]) == (503, "ServiceUnavailable"), status
    assert status["message"].startswith(f'the API server of space "root:{space}" is not available: '), status
    assert why in status["message"], status


def test_the_provider_fields_are_validated(world: World) -> None:
    name = f"bad-{uuid.uuid4().hex[:6]}"
    missing = world.hub.kubectl("create", "-f", "-", input=_space(name, provider="kube"), check=False)
    assert missing.returncode == 1
    assert "spec.kubeconfigSecretRef: Required value" in missing.stderr
    forbidden = world.hub.kubectl("create", "-f", "-", check=False,
                                  input=_space(name, provider="builtin", kubeconfigSecretRef=_ref("x")))
    assert 'spec.kubeconfigSecretRef: Forbidden: may only be set when spec.provider is "kube"' in forbidden.stderr
    unknown = world.hub.kubectl("create", "-f", "-", input=_space(name, provider="vcluster"), check=False)
    assert 'spec.provider: Unsupported value: "vcluster"' in unknown.stderr

    # A kube space whose Secret does not exist is created, and says so.
    world.hub.kubectl("create", "-f", "-", input=_space(name, provider="kube", kubeconfigSecretRef=_ref(name)))
    try:
        missing_secret = _wait_condition(world, name, "False")
        assert missing_secret["reason"] == "SecretNotFound"
        assert f'Secret "{name}" in namespace "default" of space "root" does not exist' in missing_secret["message"]
        served = _kubectl(world, name, "get", "configmaps", check=False)
        assert served.returncode == 1 and "Error from server (ServiceUnavailable)" in served.stderr
        _assert_unavailable(world, name, "does not exist")
        changed = world.hub.kubectl("patch", "space", name, "--type", "merge", "-p",
                                    '{"spec":{"provider":"builtin","kubeconfigSecretRef":null}}', check=False)
        assert changed.returncode == 1 and "spec.provider: Invalid value: \"builtin\": field is immutable" in \
            changed.stderr
    finally:
        world.hub.kubectl("delete", "space", name)


def _watch(world: World, space: str, *args: str) -> tuple[subprocess.Popen[str], queue.Queue[str]]:
    """``kubectl get … -w`` in the background; its output lines arrive on the queue."""
    assert KUBECTL
    proc = subprocess.Popen([KUBECTL, "--server", f"{world.hub.base_url}/clusters/root:{space}", "get", *args, "-w"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=world.hub.env)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def _seen(lines: queue.Queue[str], seen: list[str], wanted: str) -> bool:
    while not lines.empty():
        seen.append(lines.get())
    return any(wanted in line for line in seen)


def test_a_kube_space_is_listed_written_watched_and_applied_with_kubectl(world: World, provider: Sim,
                                                                          kube_space: str) -> None:
    # Listed: the API server's own namespaces, through the hub.
    names = _kubectl(world, kube_space, "get", "namespaces", "-o", "name").stdout.split()
    assert {"namespace/default", "namespace/kube-system"} <= set(names)
    _kubectl(world, kube_space, "create", "namespace", "app")
    _kubectl(world, kube_space, "create", "configmap", "first", "-n", "app", "--from-literal=k=1")
    # Written: the object is on the API server.
    assert provider.get("wec1", "configmap", "first", "-n", "app")["data"] == {"k": "1"}

    proc, lines = _watch(world, kube_space, "configmaps", "-n", "app", "-o", "name")
    seen: list[str] = []
    try:
        wait_for(lambda: _seen(lines, seen, "configmap/first"), timeout=20, message="the watch's initial list")
        provider.kubectl("wec1", "create", "configmap", "second", "-n", "app", "--from-literal=k=2")
        wait_for(lambda: _seen(lines, seen, "configmap/second"), timeout=20, message="the watch to see a new object")
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    # Server-side apply is the API server's: its field conflict comes back as it answered it.
    document = yaml.safe_dump(configmap("first", "app", k="3", extra="x"))
    conflict = _kubectl(world, kube_space, "apply", "--server-side", "-f", "-", input=document, check=False)
    assert conflict.returncode == 1 and 'conflict with "kubectl-create" using v1: .data.k' in conflict.stderr
    applied = _kubectl(world, kube_space, "apply", "--server-side", "--force-conflicts", "-f", "-", input=document)
    assert applied.stdout == "configmap/first serverside-applied\n"
    first = provider.get("wec1", "configmap", "first", "-n", "app", "--show-managed-fields")
    assert first["data"] == {"k": "3", "extra": "x"}
    assert "kubectl" in [m["manager"] for m in first["metadata"]["managedFields"]]
    # Discovery and OpenAPI come from the API server: explain works through the hub.
    assert "ConfigMap holds configuration data" in _kubectl(world, kube_space, "explain", "configmap").stdout
    _kubectl(world, kube_space, "delete", "configmap", "second", "-n", "app")
    assert provider.kubectl("wec1", "get", "configmap", "second", "-n", "app", check=False).returncode == 1
    # The hub stores nothing of a kube space: its own store has no default namespace for it.
    with world.hub.client() as c:
        assert c.get(f"/placement/v1/spaces/{kube_space}/placements").status_code == 200


def test_a_nested_kube_space_is_authorized_by_rbac_in_its_parent(world: World, provider: Sim,
                                                                   tmp_path: Path) -> None:
    org = f"org-{uuid.uuid4().hex[:6]}"
    world.hub.create_space(org)
    world.hub.kubectl("create", "secret", "generic", "wec1", "-n", "default",
                      f"--from-file=kubeconfig={provider.kubeconfig('wec1')}", space=f"root:{org}")
    world.hub.kubectl("create", "-f", "-", space=f"root:{org}",
                      input=_space("kube", provider="kube", kubeconfigSecretRef=_ref("wec1")))
    url = f"{world.hub.base_url}/clusters/root:{org}:kube"
    wait_for(lambda: world.hub.kubectl("--server", url, "get", "namespace", "default", check=False).returncode == 0,
             timeout=30, message=f"root:{org}:kube served")

    # A viewer of root:org may not enter the kube space until given access to it there, as for any space.
    viewer = make_user(world.hub, tmp_path, f"viewer-{uuid.uuid4().hex[:4]}", org, "view")
    refused = viewer.kubectl("--server", url, "get", "namespaces")
    assert refused.returncode == 1 and "Forbidden" in refused.stderr, refused.stderr
    world.hub.kubectl("apply", "-f", "-", space=f"root:{org}", input=yaml.safe_dump_all(cluster_role_grant(
        "enter-kube", {"apiGroups": ["spacehub.io"], "resources": ["spaces/content"], "resourceNames": ["kube"],
                       "verbs": ["access"]}, {"kind": "User", "name": viewer.name})))
    # Now the parent's view role decides: reads pass, writes do not.
    listed = wait_for(lambda: (r := viewer.kubectl("--server", url, "get", "namespaces", "-o", "name")).returncode
                      == 0 and r.stdout, timeout=10, message="the viewer to enter the kube space")
    assert "namespace/default" in listed
    denied = viewer.kubectl("--server", url, "create", "configmap", "nope", "-n", "default")
    assert denied.returncode == 1
    assert 'cannot create resource "configmaps"' in denied.stderr
    assert f'authorized by RBAC in its parent space "root:{org}"' in denied.stderr
    world.hub.kubectl("delete", "space", org)


def _place_configmap(world: World, kube_space: str, namespace_name: str, name: str, color: str) -> str:
    """A Namespace and ConfigMap written in the kube space and an EdgePlacement there sending both to ``dest``;
    returns the ConfigMap's path once ``dest`` has it."""
    _kubectl(world, kube_space, "apply", "-f", "-", input=yaml.safe_dump_all([
        namespace(namespace_name), configmap(name, namespace_name, color=color)]))
    # The hub put the EdgePlacement CRD on the API server when it became reachable.
    wait_for(lambda: _kubectl(world, kube_space, "get", "edgeplacements", check=False).returncode == 0,
             timeout=30, message="EdgePlacements served in the kube space")
    _kubectl(world, kube_space, "apply", "-f", "-", input=yaml.safe_dump(placement(f"{name}-to-dest", LABELS, [
        {"apiGroup": "", "resources": ["namespaces"], "objectNames": [namespace_name]},
        {"apiGroup": "", "resources": ["configmaps"], "namespaces": [namespace_name]}])))
    path = cm_path(namespace_name, name)
    world.wait_present("dest", path, check=lambda cm: cm.get("data") == {"color": color})
    return path


def test_a_placement_in_a_kube_space_delivers_and_outlives_its_api_server(world: World, provider: Sim,
                                                                          kube_space: str) -> None:
    path = _place_configmap(world, kube_space, "placed", "settings", "blue")

    provider.stop()
    try:
        down = _wait_condition(world, kube_space, "False")
        assert down["reason"] == "Unreachable" and provider.base_url in down["message"]
        _assert_unavailable(world, kube_space, provider.base_url.removeprefix("https://"))
        # Nothing placed is taken back: the desired set still holds it, and the cluster keeps it.
        view = world.placement_view(kube_space, "placed", "configmaps", "settings")
        assert view["destinations"] == ["dest"], view
        assert (world.get("dest", path) or {}).get("data") == {"color": "blue"}
    finally:
        provider.start()
    _wait_condition(world, kube_space, "True")
    # The mirror is back: a change on the API server reaches the cluster.
    _changes_flow_again(world, kube_space, path, "settings", "placed")


def _changes_flow_again(world: World, kube_space: str, path: str, name: str, ns: str) -> None:
    """A change of the ConfigMap on the API server reaches the cluster, and so does its deletion."""
    _kubectl(world, kube_space, "apply", "-f", "-", input=yaml.safe_dump(configmap(name, ns, color="changed")))
    world.wait_present("dest", path, check=lambda cm: cm.get("data") == {"color": "changed"})
    _kubectl(world, kube_space, "delete", "configmap", name, "-n", ns)
    world.wait_absent("dest", path)


def _full_resyncs(world: World) -> int:
    """How many full resyncs (RESET, then SYNCED and the prune of what the snapshot lacked) the syncer finished."""
    return world.syncers["dest"].log().count("after a full resync")


def test_a_hub_restarted_while_the_api_server_is_down_keeps_what_it_placed(world: World, provider: Sim,
                                                                           kube_space: str) -> None:
    path = _place_configmap(world, kube_space, "kept", "kept", "green")
    resyncs = _full_resyncs(world)

    provider.stop()
    try:
        _wait_condition(world, kube_space, "False")
        world.hub.stop()
        world.hub.start()
        # The restarted hub is a new epoch: the syncer resyncs in full and removes whatever the snapshot lacks.
        wait_for(lambda: _full_resyncs(world) > resyncs, timeout=60,
                 message="the syncer's full resync with the restarted hub")
        wait_for(lambda: world.ready("dest").get("status") == "True", timeout=30, message="dest Ready")
        assert _condition(world, kube_space)["reason"] == "Unreachable"  # the hub never heard from the server
        # What was placed came back from the hub's records: the snapshot held it, and the cluster keeps it.
        assert (world.get("dest", path) or {}).get("data") == {"color": "green"}
        assert world.get("dest", "/api/v1/namespaces/kept") is not None
        view = world.placement_view(kube_space, "kept", "configmaps", "kept")
        assert view["destinations"] == ["dest"], view
    finally:
        provider.start()
    _wait_condition(world, kube_space, "True")
    # The server's first complete list takes over from the records: changes and deletions flow again.
    _changes_flow_again(world, kube_space, path, "kept", "kept")
    with world.hub.client() as c:
        assert c.get(f"/placement/v1/spaces/{kube_space}/namespaces/kept/objects/configmaps/kept").status_code == 404
