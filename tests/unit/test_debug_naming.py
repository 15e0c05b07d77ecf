"""Which cluster pods a space shows (their workload's placement) and the names they are shown by."""

from __future__ import annotations

from typing import Any

from debug.naming import CLUSTER_LABEL, owned, present, real_names, resolve
from debug.routes import claims
from placement.model import ObjectRef

SPACE = "team"


def pod(name: str, kind: str = "", owner: str = "", api_version: str = "apps/v1", ns: str = "shop",
        controller: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": {"app": "x"}}
    if kind:
        meta["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": owner, "controller": controller}]
    return {"metadata": meta, "spec": {"nodeName": "n1"}}


def placed(*refs: tuple[str, str, str]) -> Any:
    """An is_destination placing ``(resource, name, cluster)`` in namespace shop of SPACE."""
    wanted = {(ObjectRef(SPACE, r, "shop", n), c) for r, n, c in refs}
    return lambda ref, cluster: (ref, cluster) in wanted


def test_a_pod_is_shown_when_the_space_placed_its_workload_on_that_cluster() -> None:
    deployment = placed(("deployments.apps", "api", "wec1"))
    rs_pod = pod("api-5d4f8-x2x9z", "ReplicaSet", "api-5d4f8")
    assert owned(SPACE, "wec1", rs_pod, deployment)
    assert not owned(SPACE, "wec2", rs_pod, deployment)  # not placed there
    assert not owned("other", "wec1", rs_pod, deployment)
    assert owned(SPACE, "wec1", rs_pod, placed(("replicasets.apps", "api-5d4f8", "wec1")))
    assert owned(SPACE, "wec1", pod("web-0", "StatefulSet", "web"), placed(("statefulsets.apps", "web", "wec1")))
    assert owned(SPACE, "wec1", pod("agent-abcde", "DaemonSet", "agent"), placed(("daemonsets.apps", "agent", "wec1")))
    job_pod = pod("backup-28911-k2k", "Job", "backup-28911", api_version="batch/v1")
    assert owned(SPACE, "wec1", job_pod, placed(("jobs.batch", "backup-28911", "wec1")))
    assert owned(SPACE, "wec1", job_pod, placed(("cronjobs.batch", "backup", "wec1")))
    # A Deployment is not a StatefulSet, and a name without a suffix names no maker.
    assert not owned(SPACE, "wec1", pod("web-0", "StatefulSet", "web"), placed(("deployments.apps", "web", "wec1")))
    assert not owned(SPACE, "wec1", pod("p", "ReplicaSet", "solo"), placed(("deployments.apps", "", "wec1")))
    # Other controllers (a custom operator, a ReplicaSet of another group) and mere owners are not followed.
    assert not owned(SPACE, "wec1", pod("db-0", "Cluster", "db", api_version="pg.example/v1"),
                     placed(("clusters.pg.example", "db", "wec1")))
    assert not owned(SPACE, "wec1", pod("p-1", "ReplicaSet", "p", api_version="extensions/v1beta1"),
                     placed(("replicasets.apps", "p", "wec1")))
    bare = placed(("pods", "debugger", "wec1"))
    assert owned(SPACE, "wec1", pod("debugger"), bare)
    assert owned(SPACE, "wec1", pod("debugger", "ReplicaSet", "x", controller=False), bare)
    assert not owned(SPACE, "wec1", {"metadata": "junk"}, bare) and not owned(SPACE, "wec1", None, bare)


def test_a_name_in_several_clusters_is_kept_by_the_first_and_suffixed_in_the_others() -> None:
    shown = present([("wec2", pod("web-0")), ("wec1", pod("web-0")), ("wec3", pod("web-0")),
                     ("wec2", pod("api-1")), ("wec1", pod("web-0", ns="other"))])
    assert [(p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["labels"][CLUSTER_LABEL])
            for p in shown] == [("other", "web-0", "wec1"), ("shop", "api-1", "wec2"), ("shop", "web-0", "wec1"),
                                ("shop", "web-0.wec2", "wec2"), ("shop", "web-0.wec3", "wec3")]
    assert shown[2]["metadata"]["labels"]["app"] == "x"
    original = pod("web-0")
    present([("wec1", original)])
    assert original["metadata"] == pod("web-0")["metadata"]  # the clusters' answers are not changed


def test_a_shown_name_resolves_to_its_cluster_and_real_name() -> None:
    clusters = ["wec1", "wec2", "wec3"]
    assert real_names("web-0", clusters) == ["web-0"]
    assert real_names("web-0.wec2", clusters) == ["web-0.wec2", "web-0"]
    assert real_names("web-0.example", clusters) == ["web-0.example"]
    both = {"web-0": ["wec2", "wec1"]}
    assert resolve("web-0", both) == ("wec1", "web-0")
    assert resolve("web-0.wec2", both) == ("wec2", "web-0")
    assert resolve("web-0.wec1", both) is None  # wec1's keeps its name
    assert resolve("web-0.wec3", both) is None
    assert resolve("web-0.wec2", {"web-0": ["wec2"]}) is None  # alone: it is shown as web-0
    assert resolve("web-0.wec2", {"web-0.wec2": ["wec3"], "web-0": ["wec1", "wec2"]}) == ("wec3", "web-0.wec2")
    assert resolve("nobody", {}) is None


def test_a_stored_pod_keeps_its_name_and_every_clusters_pod_of_that_name_is_suffixed() -> None:
    stored = {("shop", "solo")}
    shown = present([("wec1", pod("solo")), ("wec2", pod("solo")), ("wec1", pod("solo", ns="other"))], stored)
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in shown] == [
        ("other", "solo"), ("shop", "solo.wec1"), ("shop", "solo.wec2")]
    one = {"solo": ["wec1"]}
    assert resolve("solo.wec1", one, {"solo"}) == ("wec1", "solo")  # alone, yet suffixed: the stored one is solo
    assert resolve("solo", one, {"solo"}) is None  # the plain name is the stored Pod's
    assert resolve("solo.wec2", {"solo": ["wec1", "wec2"]}, {"solo"}) == ("wec2", "solo")
    assert resolve("solo.wec3", one, {"solo"}) is None


def test_the_hub_claims_only_pod_paths_from_the_space_api() -> None:
    for rest in ("api/v1/pods", "api/v1/namespaces/shop/pods", "api/v1/namespaces/shop/pods/web-0",
                 "api/v1/namespaces/shop/pods/web-0/log", "api/v1/namespaces/shop/pods/web-0/exec"):
        assert claims(rest), rest
    for rest in ("api/v1/namespaces", "api/v1/namespaces/pods", "api/v1/namespaces/shop/configmaps/pods",
                 "apis/apps/v1/namespaces/shop/pods", "api/v1/podtemplates", "api/v1/pods2", "api"):
        assert not claims(rest), rest
