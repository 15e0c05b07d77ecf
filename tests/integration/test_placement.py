"""Inventory and placement end to end: KubeStellar example1-style spaces resolved into slices and desired sets."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.harness import Hub, wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
EDGE = "edge.kubestellar.io/v2alpha1"


def inventory(name: str, labels: dict[str, str]) -> str:
    return yaml.safe_dump_all([
        {"apiVersion": EDGE, "kind": "SyncTarget", "metadata": {"name": name, "labels": {**labels, "id": name}}},
        {"apiVersion": EDGE, "kind": "Location", "metadata": {"name": name, "labels": labels},
         "spec": {"resource": {"group": "edge.kubestellar.io", "version": "v2alpha1", "resource": "synctargets"},
                  "instanceSelector": {"matchLabels": {"id": name}}}},
    ])


COMMON = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "commonstuff"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "httpd-htdocs", "namespace": "commonstuff"},
     "data": {"index.html": "<h1>common</h1>"}},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "commond", "namespace": "commonstuff"},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "common"}},
              "template": {"metadata": {"labels": {"app": "common"}},
                           "spec": {"containers": [{"name": "httpd", "image": "library/httpd:2.4"}]}}}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-placed", "namespace": "commonstuff"}},
    {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": "edge-placement-c"},
     "spec": {"locationSelectors": [{"matchLabels": {"env": "prod"}}],
              "downsync": [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["commonstuff"],
                            "objectNames": ["httpd-htdocs"]},
                           {"apiGroup": "apps", "resources": ["replicasets"], "namespaces": ["commonstuff"]}]}},
]


def special(widget_image: str) -> list[dict]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "specialstuff", "labels": {"special": "yes"}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "httpd-htdocs", "namespace": "specialstuff"},
         "data": {"index.html": "<h1>special</h1>"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "speciald", "namespace": "specialstuff"},
         "spec": {"selector": {"matchLabels": {"app": "special"}},
                  "template": {"metadata": {"labels": {"app": "special"}},
                               "spec": {"containers": [{"name": "httpd", "image": "library/httpd:2.4"}]}}}},
        {"apiVersion": "example.spacehub.io/v1", "kind": "Widget",
         "metadata": {"name": "special-widget", "namespace": "specialstuff"},
         "spec": {"image": widget_image, "owner": "team-s"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "special-reader"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": "edge-placement-s"},
         "spec": {"locationSelectors": [{"matchLabels": {"env": "prod", "extended": "yes"}}],
                  "wantSingletonReportedState": True,
                  "downsync": [{"namespaceSelectors": [{"matchLabels": {"special": "yes"}}]},
                               {"apiGroup": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"],
                                "namespaces": ["*"], "objectNames": ["widgets.example.spacehub.io"]},
                               {"apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterroles"],
                                "namespaces": ["*"], "objectNames": ["special-reader"]}]}},
    ]


def desired(hub: Hub, target: str) -> set[str]:
    """What the desired-set view shows for a target, as kind/namespace/name strings."""
    with hub.client() as c:
        r = c.get(f"/placement/v1/clusters/{target}/desired")
        assert r.status_code == 200, r.text
        return {f"{e['resource']}{'.' + e['group'] if e['group'] else ''}/{e['namespace']}/{e['name']}"
                for e in r.json()["items"]}


def slice_targets(hub: Hub, space: str, name: str) -> list[str]:
    with hub.client() as c:
        r = c.get(f"/clusters/{space}/apis/edge.kubestellar.io/v2alpha1/singleplacementslices/{name}")
        if r.status_code != 200:
            return []
        return sorted(d["syncTargetName"] for d in r.json()["destinations"])


def setup_example(hub: Hub, tag: str) -> tuple[str, str]:
    c_space, s_space = f"wmw-c-{tag}", f"wmw-s-{tag}"
    hub.create_space(c_space)
    hub.create_space(s_space)
    hub.kubectl("apply", "-f", "-", space=c_space, input=yaml.safe_dump_all(COMMON))
    hub.kubectl("apply", "-f", str(FIXTURES / "widgets.yaml"), space=s_space)
    hub.kubectl("wait", "--for=condition=Established", "crd/widgets.example.spacehub.io", "--timeout=10s",
                space=s_space)
    hub.kubectl("apply", "-f", "-", space=s_space, input=yaml.safe_dump_all(special("r/w@sha256:" + "e" * 64)))
    return c_space, s_space


def test_example1_slices_and_desired_sets(hub: Hub) -> None:
    hub.kubectl("apply", "-f", "-", space="inventory", input=inventory("florin", {"env": "prod"}))
    hub.kubectl("apply", "-f", "-", space="inventory", input=inventory("guilder", {"env": "prod", "extended": "yes"}))
    c_space, s_space = setup_example(hub, "ex1")
    wait_for(lambda: slice_targets(hub, c_space, "edge-placement-c") == ["florin", "guilder"], message="slice c")
    wait_for(lambda: slice_targets(hub, s_space, "edge-placement-s") == ["guilder"], message="slice s")
    common = {"namespaces//commonstuff", "configmaps/commonstuff/httpd-htdocs", "replicasets.apps/commonstuff/commond"}
    specials = {"namespaces//specialstuff", "configmaps/specialstuff/httpd-htdocs",
                "deployments.apps/specialstuff/speciald", "widgets.example.spacehub.io/specialstuff/special-widget",
                "customresourcedefinitions.apiextensions.k8s.io//widgets.example.spacehub.io",
                "clusterroles.rbac.authorization.k8s.io//special-reader"}
    assert wait_for(lambda: desired(hub, "florin") == common and desired(hub, "florin"), message="florin set")
    assert wait_for(lambda: desired(hub, "guilder") == common | specials and desired(hub, "guilder"),
                    message="guilder set")
    # kubectl shows what a cluster will get, as it will get it.
    out = hub.kubectl("--server", f"{hub.base_url}/clusters/inventory/synctargets/guilder", "get",
                      "deployments", "-A", "-o", "yaml")
    deployment = yaml.safe_load(out.stdout)["items"][0]
    assert deployment["metadata"]["name"] == "speciald"
    assert "uid" not in deployment["metadata"] and "status" not in deployment
    locations = hub.kubectl("get", "locations", "florin", "guilder", space="inventory").stdout
    wait_for(lambda: all(line.split()[3] == "1" for line in hub.kubectl(
        "get", "locations", "florin", "guilder", space="inventory").stdout.splitlines()[1:]),
        message="Location instances counted")
    assert locations.splitlines()[0].split()[:4] == ["NAME", "RESOURCE", "INSTANCE", "SELECTOR"]
    status = hub.kubectl("get", "epl", "edge-placement-s", "-o", "yaml", space=s_space)
    placed = yaml.safe_load(status.stdout)["status"]
    assert placed["matchingLocationCount"] == 1 and placed["destinationCount"] == 1


def test_every_deletion_path_affects_exactly_the_right_clusters(hub: Hub) -> None:
    for name, labels in (("del-a", {"env": "stage", "extended": "yes"}), ("del-b", {"env": "stage"})):
        hub.kubectl("apply", "-f", "-", space="inventory", input=inventory(name, labels))
    c_space, s_space = setup_example(hub, "del")
    for space, doc in ((c_space, COMMON[-1]), (s_space, special("x")[-1])):
        doc = yaml.safe_load(yaml.safe_dump(doc))
        for selector in doc["spec"]["locationSelectors"]:
            selector["matchLabels"]["env"] = "stage"
        hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(doc))
    rs = "replicasets.apps/commonstuff/commond"
    cm = "configmaps/commonstuff/httpd-htdocs"
    role = "clusterroles.rbac.authorization.k8s.io//special-reader"
    wait_for(lambda: {rs, cm} <= desired(hub, "del-a") and {rs, cm} <= desired(hub, "del-b")
             and role in desired(hub, "del-a"), message="initial placement")
    assert role not in desired(hub, "del-b")

    # 1. An object deleted in the space leaves both clusters.
    hub.kubectl("delete", "configmap", "httpd-htdocs", "-n", "commonstuff", space=c_space)
    wait_for(lambda: cm not in desired(hub, "del-a") and cm not in desired(hub, "del-b"), message="cm removed")
    assert rs in desired(hub, "del-a") and rs in desired(hub, "del-b")
    # 2. An object that stops matching (relabelled out of a namespace selector) leaves only where it was.
    hub.kubectl("label", "namespace", "specialstuff", "special=no", "--overwrite", space=s_space)
    wait_for(lambda: "deployments.apps/specialstuff/speciald" not in desired(hub, "del-a"),
             message="namespace relabel")
    assert role in desired(hub, "del-a")  # still selected by name
    assert rs in desired(hub, "del-a")  # other placement unaffected
    # 3. A cluster whose labels stop matching loses exactly that placement's objects.
    hub.kubectl("label", "synctarget", "del-a", "extended-", space="inventory")
    hub.kubectl("label", "location", "del-a", "extended-", space="inventory")
    wait_for(lambda: role not in desired(hub, "del-a"), message="relabel cluster")
    assert rs in desired(hub, "del-a")
    # ... and relabelling it back brings them back.
    hub.kubectl("label", "location", "del-a", "extended=yes", space="inventory")
    wait_for(lambda: role in desired(hub, "del-a"), message="relabel cluster back")
    # 4. A placement edited to select less removes what it no longer selects.
    patch = '{"spec":{"downsync":[{"apiGroup":"","resources":["configmaps"],"namespaces":["commonstuff"]}]}}'
    hub.kubectl("patch", "epl", "edge-placement-c", "--type=merge", "-p", patch, space=c_space)
    wait_for(lambda: rs not in desired(hub, "del-a") and rs not in desired(hub, "del-b"), message="edit")
    # 5. A deleted placement removes its objects (and its slices, by owner reference).
    hub.kubectl("delete", "epl", "edge-placement-c", space=c_space)
    wait_for(lambda: not any(e.startswith("configmaps/commonstuff") for e in desired(hub, "del-b")),
             message="placement deleted")
    wait_for(lambda: slice_targets(hub, c_space, "edge-placement-c") == [], message="slice collected")
    # The implicit namespace goes with the last object that needed it.
    assert "namespaces//commonstuff" not in desired(hub, "del-b")


def test_a_new_matching_cluster_gets_everything_at_once(hub: Hub) -> None:
    c_space, _ = setup_example(hub, "new")
    doc = yaml.safe_load(yaml.safe_dump(COMMON[-1]))
    doc["spec"]["locationSelectors"] = [{"matchLabels": {"env": "fresh"}}]
    hub.kubectl("apply", "-f", "-", space=c_space, input=yaml.safe_dump(doc))
    hub.kubectl("apply", "-f", "-", space="inventory", input=inventory("late", {"env": "fresh"}))
    expected = {"namespaces//commonstuff", "configmaps/commonstuff/httpd-htdocs",
                "replicasets.apps/commonstuff/commond"}
    wait_for(lambda: desired(hub, "late") == expected, message="late cluster gets the set")


def test_syncer_credentials_reach_only_their_own_target(hub: Hub, tmp_path: Path) -> None:
    out = hub.spacehub("cluster", "register", "scoped", "--label", "env=scoped", "--bootstrap-out",
                       str(tmp_path / "boot.yaml"))
    assert out.returncode == 0
    token = yaml.safe_load((tmp_path / "boot.yaml").read_text())["token"]
    hub.spacehub("cluster", "register", "other-scoped", "--label", "env=scoped")
    import httpx

    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(),
                      headers={"Authorization": f"Bearer {token}"}) as c:
        assert c.get("/placement/v1/clusters/scoped/desired").status_code == 200
        assert c.get("/placement/v1/clusters/other-scoped/desired").status_code == 403
        assert c.get("/clusters/inventory/synctargets/other-scoped/api/v1/configmaps").status_code == 403
        assert c.get("/clusters/root/api/v1/namespaces").status_code == 403
        assert c.get("/clusters/inventory/synctargets/scoped/api/v1/configmaps").status_code == 200
