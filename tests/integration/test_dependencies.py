"""``dependencies: Follow``, end to end: a real hub, ``spacehub sim serve --with-syncers`` (two clusters, each with
its syncer talking to the hub over HTTP), kubectl against the space and against the simulated clusters.

A placement selecting only Deployments brings what they reference (ConfigMap, Secret, ServiceAccount, PVC) and the
Service selecting their pods to both clusters; a ConfigMap created after the Deployment naming it follows when it
appears; editing the Deployment's references away takes them back from the clusters while the space keeps them; a
ConfigMap two Deployments use stays while either does; the REST placement view says why each is sent; a bad value
of ``spec.dependencies`` is refused naming the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.harness import wait_for
from tests.syncer_harness import World, namespace

SPACE = "deps"
NS = "app"
CLUSTERS = ("wec1", "wec2")
DEPENDENCIES = ("configmap/web-conf", "secret/web-secret", "serviceaccount/web-sa", "persistentvolumeclaim/web-data",
                "service/web")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("dependencies"), clusters=len(CLUSTERS))
    w.sim.extra_args = ("--hub", w.hub.base_url, "--hub-kubeconfig", str(w.hub.kubeconfig), "--with-syncers",
                        "--cluster-label", "env=edge", "--processes", "1")
    w.start()
    w.hub.create_space(SPACE)
    yield w
    w.close()


def edge_placement(name: str = "web", dependencies: Any = "Follow") -> dict[str, Any]:
    return {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": [{"matchLabels": {"env": "edge"}}], "dependencies": dependencies,
                     "downsync": [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": [NS]}]}}


def deployment(name: str, *, config: str | None = "web-conf", secret: bool = True, account: bool = True,
               claim: bool = True, labels: dict[str, str] | None = None,
               extra_config: str | None = None) -> dict[str, Any]:
    """A Deployment whose pods use the given ConfigMaps, Secret, ServiceAccount and PVC."""
    labels = labels or {"app": name}
    volumes = [{"name": f"conf-{c}", "configMap": {"name": c}} for c in (config, extra_config) if c]
    if claim:
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}})
    container: dict[str, Any] = {"name": "web", "image": "library/httpd:2.4"}
    if secret:
        container["envFrom"] = [{"secretRef": {"name": "web-secret"}}]
    pod: dict[str, Any] = {"containers": [container], "volumes": volumes}
    if account:
        pod["serviceAccountName"] = "web-sa"
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


def referenced_objects() -> list[dict[str, Any]]:
    meta = {"namespace": NS}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-conf", **meta}, "data": {"a": "1"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unused", **meta}, "data": {"b": "2"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "web-secret", **meta},
         "stringData": {"password": "x"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web-sa", **meta}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "web-data", **meta},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", **meta},
         "spec": {"selector": {"app": "web", "tier": "front"}, "ports": [{"port": 80}]}},
    ]


def in_cluster(world: World, cluster: str) -> set[str]:
    """What the simulated cluster has in the namespace, by kubectl (``kind/name``)."""
    proc = world.sim.kubectl(cluster, "get", "configmaps,secrets,serviceaccounts,persistentvolumeclaims,services,"
                             "deployments", "-n", NS, "-o", "name", check=False)
    if proc.returncode != 0:
        return set()  # the namespace is not there yet
    return {line.replace(".apps/", "/") for line in proc.stdout.split()}


def everywhere(world: World, wanted: set[str], unwanted: set[str]) -> bool:
    return all(wanted <= (have := in_cluster(world, c)) and not unwanted & have for c in CLUSTERS)


def test_a_bad_dependencies_value_is_refused_naming_the_field(world: World) -> None:
    proc = world.hub.kubectl("apply", "-f", "-", space=SPACE, input=yaml.safe_dump(edge_placement("bad", "Always")),
                             check=False)
    assert proc.returncode != 0 and "spec.dependencies" in proc.stderr and "is invalid" in proc.stderr, proc.stderr
    assert world.hub_get(SPACE, "/apis/edge.kubestellar.io/v2alpha1/edgeplacements/bad") is None


def test_follow_sends_what_deployments_reference_and_takes_it_back_when_no_longer_referenced(world: World) -> None:
    web = deployment("web", labels={"app": "web", "tier": "front"}, extra_config="later-conf")
    world.apply(SPACE, namespace(NS), *referenced_objects(), web, deployment("api", secret=False, account=False,
                                                                             claim=False), edge_placement())
    wanted = {"deployment/web", "deployment/api", *DEPENDENCIES}
    wait_for(lambda: everywhere(world, wanted, {"configmap/unused"}), timeout=60,
             message="the Deployments and what they reference in both clusters")

    with world.hub.client() as c:
        r = c.get(f"/placement/v1/spaces/{SPACE}/placements/web")
    assert r.status_code == 200, r.text
    rows = {f"{o['resource']}/{o['name']}": o for o in r.json()["objects"]}
    assert rows["configmaps/web-conf"]["dependency"] and rows["configmaps/web-conf"]["tests"] == []
    assert rows["configmaps/web-conf"]["because"] == [f"sent because deployments.apps {NS}/api mounts it",
                                                      f"sent because deployments.apps {NS}/web mounts it"]
    assert rows["services/web"]["because"] == [f"sent because deployments.apps {NS}/web is exposed by it"]
    assert not rows["deployments/web"]["dependency"] and rows["deployments/web"]["tests"] == [0]
    spec_file = world.base / "web-placement.yaml"
    spec_file.write_text(yaml.safe_dump(edge_placement()))
    explained = world.hub.spacehub("placement", "explain", "-f", str(spec_file), "--space", SPACE).stdout
    assert "SENT-BECAUSE" in explained and f"sent because deployments.apps {NS}/web claims it" in explained

    # A ConfigMap named before it exists follows when it is created.
    world.apply(SPACE, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later-conf", "namespace": NS}})
    wait_for(lambda: everywhere(world, {"configmap/later-conf"}, set()), timeout=30, message="later-conf followed")

    # web stops using all of it (and its pods' labels no longer match the Service): gone from the clusters, except
    # web-conf, which api still mounts.
    world.apply(SPACE, deployment("web", config=None, secret=False, account=False, claim=False))
    gone = {"secret/web-secret", "serviceaccount/web-sa", "persistentvolumeclaim/web-data", "service/web",
            "configmap/later-conf"}
    wait_for(lambda: everywhere(world, {"deployment/web", "deployment/api", "configmap/web-conf"}, gone),
             timeout=60, message="web's former dependencies gone, the shared ConfigMap kept")

    # The last user lets go of the shared ConfigMap.
    world.apply(SPACE, deployment("api", config=None, secret=False, account=False, claim=False))
    wait_for(lambda: everywhere(world, {"deployment/web", "deployment/api"}, {"configmap/web-conf"}), timeout=60,
             message="web-conf gone once no Deployment mounts it")

    # The space keeps every object: only their copies left the clusters.
    names = set(world.hub.kubectl("get", "configmaps,secrets,serviceaccounts,persistentvolumeclaims,services",
                                  "-n", NS, "-o", "name", space=SPACE).stdout.split())
    assert {"configmap/web-conf", "configmap/later-conf", "secret/web-secret", "serviceaccount/web-sa",
            "persistentvolumeclaim/web-data", "service/web"} <= names
