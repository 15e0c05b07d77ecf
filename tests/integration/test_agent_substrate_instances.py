"""Two Agent Substrate instances on one cluster, each from its own space (README "Two Agent Substrate instances on
one cluster", examples/agent-substrate-two-instances/), end to end.

Real processes: the hub and ``spacehub sim serve --with-syncers`` (cluster wec1 and its syncer, registered at the
hub with ``cluster=wec1``); kubectl against both spaces and against the cluster. Spaces red and blue each get the
real Agent Substrate CRDs and the corpus's control plane and demos (read in place from ../shared/corpus), their
namespaces labelled with the part they play, and the example's EdgePlacement unchanged: namespaces selected by
label, mapped to ``<space>-<namespace>``. The simulated cluster plays the substrate controller with a status rule
(a WorkerPool's ``status.replicas`` follows its ``spec.replicas``). The tests share one world and run in file order:
each starts from what the earlier ones left (blue's pool scaled down); the last takes blue's instance away.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.agent_substrate import CORPUS, CRDS, crd_files, documents, load, needs_corpus
from tests.harness import wait_for
from tests.integration.test_placement import desired
from tests.syncer_harness import EDGE, World, namespace, placement

pytestmark = needs_corpus

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent-substrate-two-instances"
CLUSTER = "wec1"
SPACES = ("red", "blue")
PART = "substrate.spacehub.io/part"
# The corpus's namespaces and the example's, and the part each plays; ate-demo-counter (counter.yaml) has no label
# and stays home.
PARTS = {"ate-system": "control-plane", "ate-demo-multi-template-pool": "worker-pools",
         "ate-demo-multi-template-counter": "actor-templates", "ate-demo-multi-template-fspersist": "actor-templates",
         "ate-demo-secret-agent-v2": "actor-templates", "pools": "worker-pools", "agents": "actor-templates"}
CORPUS_FILES = ("ate-api-server-manifest.yaml", "multi-template.yaml", "agent-secret.yaml", "counter.yaml",
                "sandboxconfig-gvisor-default.yaml")
# (namespace, name) of the placed ate.dev objects of each space.
POOLS = {("ate-demo-multi-template-pool", "shared-pool"), ("ate-demo-secret-agent-v2", "agent-secret"),
         ("pools", "general")}
TEMPLATES = {("ate-demo-multi-template-counter", "counter"), ("ate-demo-multi-template-fspersist", "fspersist"),
             ("ate-demo-secret-agent-v2", "agent-secret"), ("agents", "echo")}
SANDBOX_CONFIGS = {("", "gvisor-default"), ("", "gvisor-example")}
STATUS_RULES = [{"group": "ate.dev", "kind": "WorkerPool", "delaySeconds": 0,
                 "set": {".status.replicas": ".spec.replicas"}}]


def labelled(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc``, a Namespace of :data:`PARTS` labelled with its part."""
    doc = copy.deepcopy(doc)
    name = doc["metadata"]["name"]
    if doc["kind"] == "Namespace" and name in PARTS:
        doc["metadata"].setdefault("labels", {})[PART] = PARTS[name]
    return doc


def install(world: World, space: str) -> None:
    """What an operator applies in an instance's space: the CRDs, the corpus's objects, the example's own instance
    (which adds the ConfigMap the corpus's API server reads its settings from) and placement."""
    for crd in crd_files():
        world.hub.kubectl("apply", "-f", str(crd), space=space)
    for crd in CRDS:
        world.hub.kubectl("wait", "--for=condition=Established", f"crd/{crd}.ate.dev", "--timeout=30s", space=space)
    objects = [labelled(namespace("ate-system"))]
    objects += [labelled(doc) for name in CORPUS_FILES for doc in documents(name)]
    objects.sort(key=lambda doc: doc["kind"] != "Namespace")  # namespaces first, as upstream's install does
    world.apply(space, *objects)
    for manifest in ("instance.yaml", "placement.yaml"):
        world.hub.kubectl("apply", "-f", str(EXAMPLE / manifest), space=space)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("substrate")
    rules = base / "status-rules.yaml"
    rules.write_text(yaml.safe_dump(STATUS_RULES))
    w = World(base, clusters=1)
    w.sim.extra_args = ("--hub", w.hub.base_url, "--hub-kubeconfig", str(w.hub.kubeconfig), "--with-syncers",
                        "--cluster-label", f"cluster={CLUSTER}", "--status-rules", str(rules),
                        "--ready-delay", "0.2")
    w.start()
    for space in SPACES:
        w.hub.create_space(space)
        install(w, space)
    yield w
    w.close()


def cluster_objects(world: World, resource: str) -> set[tuple[str, str]]:
    """(namespace, name) of every ``resource`` in the cluster, read with kubectl."""
    listed = json.loads(world.sim.kubectl(CLUSTER, "get", resource, "-A", "-o", "json").stdout)
    return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in listed["items"]}


def mapped(space: str, objects: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {(f"{space}-{ns}", name) for ns, name in objects}


def space_get(world: World, space: str, *args: str) -> Any:
    return json.loads(world.hub.kubectl("get", *args, "-o", "json", space=space).stdout)


def test_both_instances_run_side_by_side_with_the_crds_once(world: World) -> None:
    want_pools = mapped("red", POOLS) | mapped("blue", POOLS)
    wait_for(lambda: cluster_objects(world, "workerpools.ate.dev") == want_pools, timeout=120,
             message="both spaces' WorkerPools in the cluster")
    wait_for(lambda: cluster_objects(world, "actortemplates.ate.dev") == mapped("red", TEMPLATES)
             | mapped("blue", TEMPLATES), timeout=60, message="both spaces' ActorTemplates in the cluster")

    for space in SPACES:
        for ns, part in PARTS.items():
            got = world.wait_present(CLUSTER, f"/api/v1/namespaces/{space}-{ns}", timeout=60)
            assert got["metadata"]["labels"][PART] == part
        control = f"{space}-ate-system"
        world.wait_present(CLUSTER, f"/apis/apps/v1/namespaces/{control}/deployments/ate-api-server-deployment")
        world.wait_present(CLUSTER, f"/api/v1/namespaces/{control}/serviceaccounts/ate-api-server")
        world.wait_present(CLUSTER, f"/api/v1/namespaces/{control}/services/api")
        world.wait_present(CLUSTER, f"/api/v1/namespaces/{control}/configmaps/ate-api-server-envvars")
        # The demo's grant names its own instance's API server.
        binding = world.wait_present(CLUSTER, f"/apis/rbac.authorization.k8s.io/v1/namespaces/"
                                              f"{space}-ate-demo-secret-agent-v2/rolebindings/ate-api-server-env-sources")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ate-api-server", "namespace": control}]

    # The real CRDs, once: both spaces place the same ones. The SandboxConfigs likewise.
    crds = {name for _, name in cluster_objects(world, "customresourcedefinitions")}
    assert {f"{crd}.ate.dev" for crd in CRDS} <= crds
    upstream = load(CORPUS / "crds" / "ate.dev_workerpools.yaml")[0]
    placed = json.loads(world.sim.kubectl(CLUSTER, "get", "crd", "workerpools.ate.dev", "-o", "json").stdout)
    assert placed["spec"]["versions"][0]["schema"] == upstream["spec"]["versions"][0]["schema"]
    assert cluster_objects(world, "sandboxconfigs.ate.dev") == SANDBOX_CONFIGS

    # What the cluster is sent is the instances' own kinds, nothing of the hub's (no PlacementStatus, say).
    kinds = {entry.split("/")[0] for entry in desired(world.hub, CLUSTER)}
    assert kinds == {"namespaces", "customresourcedefinitions.apiextensions.k8s.io", "sandboxconfigs.ate.dev",
                     "serviceaccounts", "services", "configmaps", "deployments.apps", "roles.rbac.authorization.k8s.io",
                     "rolebindings.rbac.authorization.k8s.io", "workerpools.ate.dev", "actortemplates.ate.dev"}

    # Neither space's namespaces land unmapped, and the unlabelled demo stays in its space.
    names = {name for _, name in cluster_objects(world, "namespaces")}
    assert not names & {*PARTS, "ate-demo-counter", "red-ate-demo-counter", "blue-ate-demo-counter"}
    with world.hub.client() as c:
        assert c.get("/placement/v1/conflicts").json()["items"] == []
    for space in SPACES:
        status = space_get(world, space, "edgeplacement", "agent-substrate")["status"]
        assert not [c for c in status.get("conditions") or [] if c["type"] == "Conflict"], status


def test_each_space_sees_only_its_own_status(world: World) -> None:
    pool = ("workerpool", "shared-pool", "-n", "ate-demo-multi-template-pool")
    world.hub.kubectl("scale", *pool, "--replicas=1", space="blue")

    want = {"red": 3, "blue": 1}  # the corpus's 3 replicas, and blue's scaled pool
    for space, replicas in want.items():
        wait_for(lambda s=space, r=replicas: (space_get(world, s, *pool).get("status") or {}).get("replicas") == r,
                 timeout=60, message=f"{space}'s shared-pool reporting {replicas} replicas")
        header, row = world.hub.kubectl("get", *pool, space=space).stdout.splitlines()
        assert dict(zip(header.split(), row.split(), strict=True))["REPLICAS"] == str(replicas)  # printer column
        cluster = world.get(CLUSTER, f"/apis/ate.dev/v1alpha1/namespaces/{space}-ate-demo-multi-template-pool"
                                     "/workerpools/shared-pool")
        assert cluster is not None and cluster["spec"]["replicas"] == replicas

    deploy = ("deployment", "ate-api-server-deployment", "-n", "ate-system")
    for space in SPACES:
        wait_for(lambda s=space: (space_get(world, s, *deploy).get("status") or {}).get("readyReplicas") == 1,
                 timeout=60, message=f"{space}'s API server Ready")
        # kubectl get pods in the space: its own API server's pod, shown in its own ate-system.
        on_cluster = wait_for(lambda s=space: cluster_pods(world, f"{s}-ate-system"), timeout=60,
                              message=f"{space}'s API server pod in the cluster")
        shown = wait_for(lambda s=space: space_get(world, s, "pods", "-n", "ate-system")["items"], timeout=30,
                         message=f"pods shown in {space}")
        assert {p["metadata"]["uid"] for p in shown} == on_cluster
        assert {p["metadata"]["namespace"] for p in shown} == {"ate-system"}


def cluster_pods(world: World, ns: str) -> set[str]:
    return {p["metadata"]["uid"] for p in (world.get(CLUSTER, f"/api/v1/namespaces/{ns}/pods") or {}).get("items", [])}


def conflicts(world: World) -> list[dict[str, Any]]:
    with world.hub.client() as c:
        return list(c.get("/placement/v1/conflicts").json()["items"])


def test_a_shared_sandbox_config_that_differs_is_a_reported_conflict_and_the_first_is_kept(world: World) -> None:
    """The gVisor default is one object per cluster: when blue's differs from red's, red's (created first) stays
    and both spaces are told; when blue's is the same again, so is everything."""
    runsc = "/spec/assets/amd64/runsc/url"
    original = world.get(CLUSTER, "/apis/ate.dev/v1alpha1/sandboxconfigs/gvisor-default")
    assert original is not None
    world.hub.kubectl("patch", "sandboxconfig", "gvisor-default", "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": runsc, "value": "gs://blue/runsc"}]), space="blue")

    listed = wait_for(lambda: conflicts(world), timeout=60, message="the SandboxConfig conflict")
    fields = [item.pop("fields") for item in listed]
    assert listed == [{"cluster": CLUSTER, "group": "ate.dev", "resource": "sandboxconfigs", "namespace": "",
                       "name": "gvisor-default", "winner": "red", "loser": "blue"}]
    assert fields[0] and all("spec.assets.amd64.runsc.url".startswith(f) for f in fields[0]), fields
    for space in SPACES:
        wait_for(lambda s=space: [c for c in space_get(world, s, "edgeplacement", "agent-substrate")["status"]
                                  .get("conditions") or [] if c["type"] == "Conflict" and c["status"] == "True"],
                 timeout=30, message=f"the Conflict condition in {space}")
    kept = world.get(CLUSTER, "/apis/ate.dev/v1alpha1/sandboxconfigs/gvisor-default")
    assert kept is not None and kept["spec"] == original["spec"]
    assert kept["metadata"]["uid"] == original["metadata"]["uid"]

    world.apply("blue", next(d for d in documents("sandboxconfig-gvisor-default.yaml")))
    wait_for(lambda: conflicts(world) == [], timeout=60, message="the conflict cleared")


def test_upstreams_cluster_role_binding_from_both_spaces_is_a_conflict_and_red_keeps_its_binding(
        world: World) -> None:
    """Upstream binds its API server with ClusterRoleBinding ate-api-server-binding, naming ate-system: mapped, each
    space's names its own control plane, so the one cluster object would differ (its ClusterRole does not)."""
    rbac = placement("api-server-rbac", {"cluster": CLUSTER}, [
        {"apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterroles"],
         "objectNames": ["ate-api-server-role"]},
        {"apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterrolebindings"],
         "objectNames": ["ate-api-server-binding"]}])
    for space in SPACES:
        world.apply(space, rbac)
    binding_path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/ate-api-server-binding"
    listed = wait_for(lambda: conflicts(world), timeout=60, message="the ClusterRoleBinding conflict")
    assert [(c["resource"], c["name"], c["winner"], c["loser"], c["fields"]) for c in listed] == [
        ("clusterrolebindings", "ate-api-server-binding", "red", "blue", ["subjects"])]
    binding = world.wait_present(CLUSTER, binding_path)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ate-api-server", "namespace": "red-ate-system"}]
    world.wait_present(CLUSTER, "/apis/rbac.authorization.k8s.io/v1/clusterroles/ate-api-server-role")

    for space in SPACES:
        world.hub.kubectl("delete", "edgeplacement", "api-server-rbac", space=space)
    world.wait_absent(CLUSTER, binding_path, timeout=60)
    wait_for(lambda: conflicts(world) == [], timeout=60, message="the conflict gone with the placements")


def test_one_instance_leaving_keeps_the_shared_crds_and_the_other_instance(world: World) -> None:
    def uid(path: str) -> str:
        found = world.get(CLUSTER, path)
        assert found is not None, path
        return str(found["metadata"]["uid"])

    red_pool = "/apis/ate.dev/v1alpha1/namespaces/red-ate-demo-multi-template-pool/workerpools/shared-pool"
    kept = [red_pool, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workerpools.ate.dev",
            "/apis/ate.dev/v1alpha1/sandboxconfigs/gvisor-default"]
    before = {path: uid(path) for path in kept}

    world.hub.kubectl("delete", "edgeplacement", "agent-substrate", space="blue")
    for ns in PARTS:
        world.wait_absent(CLUSTER, f"/api/v1/namespaces/blue-{ns}", timeout=60)
    assert {path: uid(path) for path in kept} == before
    assert cluster_objects(world, "workerpools.ate.dev") == mapped("red", POOLS)
    assert world.hub_get("red", f"/apis/{EDGE}/edgeplacements/agent-substrate") is not None
