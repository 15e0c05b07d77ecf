"""The placement REST API's HTTP layer, over a real PlacementEngine fed by a small in-test view.

The app is mounted at ``/placement/v1`` inside a Starlette app exactly as the hub mounts it, so the
paths, the OpenAPI ``servers`` entry and the error bodies are the ones clients see.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import schemathesis
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount
from starlette.testclient import TestClient

from apimachinery.errors import StatusError, already_exists, not_found, unauthorized
from inventory.kinds import EDGE_GROUP, EDGE_VERSION
from inventory.taints import merge_taints
from placement.api import build_placement_api
from placement.choices import Choices
from placement.engine import PlacementEngine
from placement.model import ObjectRef, WorkloadObject
from tests.openapi_fuzz import fuzz_operations

INVENTORY = "inventory"
SPACE = "team-a"
API_VERSION = f"{EDGE_GROUP}/{EDGE_VERSION}"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class FakeView:
    """A PlacementView, ClusterView and ClusterRegistry over plain dicts and a real engine (what the hub glue,
    the inventory and registration do with the store)."""

    def __init__(self) -> None:
        self.inventory_space = INVENTORY
        self.engine = PlacementEngine(INVENTORY)
        self._targets: dict[str, dict[str, Any]] = {}
        self._locations: dict[str, dict[str, Any]] = {}
        self._placements: dict[str, dict[str, dict[str, Any]]] = {SPACE: {}}
        self._objects: dict[ObjectRef, WorkloadObject] = {}
        self._uids = 0
        self.choices = Choices(self.engine, self, lambda _key: None)  # type: ignore[arg-type]

    # --- feeding -------------------------------------------------------------------------------

    def _uid(self) -> str:
        self._uids += 1
        return f"00000000-0000-0000-0000-{self._uids:012d}"

    def add_target(self, name: str, labels: dict[str, str], status: dict[str, Any] | None = None) -> None:
        obj = {"apiVersion": API_VERSION, "kind": "SyncTarget",
               "metadata": {"name": name, "uid": self._uid(), "labels": {**labels, "id": name}},
               "status": status or {}}
        self._targets[name] = obj
        self.engine.upsert_sync_target(obj)

    def add_location(self, name: str, labels: dict[str, str], selector: dict[str, Any] | None = None) -> None:
        obj = {"apiVersion": API_VERSION, "kind": "Location",
               "metadata": {"name": name, "uid": self._uid(), "labels": labels},
               "spec": {"resource": {"group": EDGE_GROUP, "version": EDGE_VERSION, "resource": "synctargets"},
                        "instanceSelector": selector if selector is not None else {"matchLabels": {"id": name}}}}
        self._locations[name] = obj
        self.engine.upsert_location(obj)

    def add_cluster(self, name: str, labels: dict[str, str], status: dict[str, Any] | None = None) -> None:
        self.add_target(name, labels, status)
        self.add_location(name, labels)

    def add_placement(self, name: str, spec: dict[str, Any], space: str = SPACE) -> None:
        obj = {"apiVersion": API_VERSION, "kind": "EdgePlacement",
               "metadata": {"name": name, "uid": self._uid(), "generation": 1}, "spec": spec}
        self._placements.setdefault(space, {})[name] = obj
        self.engine.upsert_placement(space, obj)
        self.choices.decide()  # the lease holder's choice, as the hub glue makes it after each change

    def add_object(self, resource: str, namespace: str, name: str, kind: str, api_version: str,
                   labels: dict[str, str] | None = None, space: str = SPACE,
                   defines: tuple[str, str] | None = None) -> ObjectRef:
        ref = ObjectRef(space, resource, namespace, name)
        workload = WorkloadObject(ref, kind, api_version, tuple(sorted((labels or {}).items())),
                                  revision=len(self._objects) + 10, namespaced=bool(namespace), defines=defines)
        self._objects[ref] = workload
        self.engine.upsert_object(workload)
        return ref

    # --- PlacementView, ClusterView, ClusterRegistry ------------------------------------------------

    def sync_targets(self) -> list[dict[str, Any]]:
        return [self._targets[n] for n in sorted(self._targets)]

    def sync_target(self, name: str) -> dict[str, Any] | None:
        return self._targets.get(name)

    def locations(self) -> list[dict[str, Any]]:
        return [self._locations[n] for n in sorted(self._locations)]

    def placements(self, space: str) -> list[dict[str, Any]] | None:
        items = self._placements.get(space)
        return None if items is None else [items[n] for n in sorted(items)]

    def object_info(self, ref: ObjectRef) -> dict[str, Any] | None:
        w = self._objects.get(ref)
        if w is None:
            return None
        return {"kind": w.kind, "apiVersion": w.api_version, "labels": dict(w.labels),
                "resourceVersion": str(w.revision)}

    async def find_object_info(self, ref: ObjectRef) -> dict[str, Any] | None:
        return self.object_info(ref)

    @contextlib.asynccontextmanager
    async def objects_of(self, space: str) -> AsyncIterator[None]:
        yield  # every object is in the engine here

    def content_revision(self, ref: ObjectRef, target: str) -> str | None:
        w = self._objects.get(ref)
        return None if w is None else str(w.revision)

    def copy_error(self, ref: ObjectRef, target: str) -> str | None:
        return None

    def rollout_revision(self, ref: ObjectRef, target: str) -> int | None:
        return None

    def conflicts(self) -> list[Any]:
        return []

    def shares(self, ref: ObjectRef) -> dict[str, int] | None:
        return None

    async def register(self, name: str, labels: dict[str, str]) -> dict[str, Any]:
        if name in self._targets:
            raise already_exists("synctargets", EDGE_GROUP, name)
        self.add_cluster(name, labels)
        return {"name": name, "bootstrap": {"apiVersion": "spacehub.io/v1alpha1", "kind": "SyncerBootstrap",
                                            "syncTarget": name, "token": f"token-{name}"}}

    async def delete(self, name: str) -> None:
        if name not in self._targets:
            raise not_found("synctargets", EDGE_GROUP, name)
        del self._targets[name]
        self.engine.delete_sync_target(name)
        if self._locations.pop(name, None) is not None:
            self.engine.delete_location(name)

    async def rotate_credentials(self, name: str, grace_seconds: float) -> dict[str, Any]:
        if name not in self._targets:
            raise not_found("synctargets", EDGE_GROUP, name)
        return {"name": name, "bootstrap": {"apiVersion": "spacehub.io/v1alpha1", "kind": "SyncerBootstrap",
                                            "syncTarget": name, "token": f"token-{name}-rotated"}}

    async def schedule(self, name: str, *, unschedulable: bool, drain: bool) -> dict[str, Any]:
        if name not in self._targets:
            raise not_found("synctargets", EDGE_GROUP, name)
        target = self._targets[name]
        target["spec"] = {"unschedulable": unschedulable, **({"evictAfter": "2026-11-25T00:00:00Z"} if drain else {})}
        self.engine.upsert_sync_target(target)
        return target

    async def taint(self, name: str, add: list[dict[str, Any]], remove: list[dict[str, Any]]) -> dict[str, Any]:
        if name not in self._targets:
            raise not_found("synctargets", EDGE_GROUP, name)
        target = self._targets[name]
        target["spec"] = {**(target.get("spec") or {}),
                          "taints": merge_taints((target.get("spec") or {}).get("taints"), add, remove, NOW)}
        self.engine.upsert_sync_target(target)
        self.choices.target_changed(name, target)
        self.choices.decide()
        return target

    async def reschedule(self, space: str, name: str) -> dict[str, Any]:
        if name not in self._placements.get(space, {}):
            raise not_found("edgeplacements", EDGE_GROUP, name)
        self.choices.reschedule((space, name))
        self.choices.decide()
        return self._placements[space][name]


HEARTBEAT = "2023-11-20T10:00:00Z"


def populated_view() -> FakeView:
    """Two prod clusters (florin ready, guilder not), one dev cluster, a placement for prod."""
    view = FakeView()
    view.add_cluster("florin", {"env": "prod"}, status={
        "conditions": [{"type": "Ready", "status": "True", "reason": "SyncerConnected", "message": "connected",
                        "lastTransitionTime": HEARTBEAT}],
        "lastSyncerHeartbeatTime": HEARTBEAT, "capacity": {"cpu": 8, "memory": "32Gi"},
        "allocatable": {"cpu": "7500m", "memory": "30Gi"}})
    view.add_cluster("guilder", {"env": "prod"})
    view.add_cluster("ludwig", {"env": "dev"})
    view.add_object("namespaces", "", "commonstuff", "Namespace", "v1")
    view.add_object("configmaps", "commonstuff", "httpd-htdocs", "ConfigMap", "v1", {"app": "httpd"})
    view.add_object("deployments.apps", "commonstuff", "commond", "Deployment", "apps/v1", {"app": "httpd"})
    view.add_object("configmaps", "commonstuff", "unrelated", "ConfigMap", "v1")
    view.add_placement("prod-httpd", {
        "locationSelectors": [{"matchLabels": {"env": "staging"}}, {"matchLabels": {"env": "prod"}}],
        "downsync": [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["commonstuff"],
                      "objectNames": ["httpd-htdocs"]},
                     {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["commonstuff"]},
                     {"apiGroup": "", "resources": ["configmaps"],
                      "labelSelectors": [{"matchLabels": {"app": "httpd"}}]}],
        "wantSingletonReportedState": True})
    view.add_placement("dev-only", {
        "locationSelectors": [{"matchLabels": {"env": "dev"}}],
        "downsync": [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["*"]}],
        "wantSingletonReportedState": True})
    view.engine.drain_dirty()
    return view


async def outer_not_found(_request: Any, _exc: Exception) -> JSONResponse:
    err = StatusError(404, "NotFound", "the server could not find the requested resource")
    return JSONResponse(err.to_status(), status_code=404)


def mounted(view: FakeView) -> Starlette:
    """The API mounted as the hub mounts it. A path the mount cannot match (Starlette's mount pattern does
    not match a newline, which a percent-encoded path may hold) gets the hub's 404 Status."""
    return Starlette(routes=[Mount("/placement/v1", app=build_placement_api(view, view, view))],
                     exception_handlers={404: outer_not_found})


@pytest.fixture
def view() -> FakeView:
    return populated_view()


@pytest.fixture
def client(view: FakeView) -> Iterator[TestClient]:
    with TestClient(mounted(view), base_url="http://hub") as c:
        yield c


def assert_status(response: Any, code: int, reason: str) -> dict[str, Any]:
    body = response.json()
    assert response.status_code == code, body
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure", body
    assert body["code"] == code and body["reason"] == reason, body
    assert body["message"]
    return dict(body)


# --- clusters ------------------------------------------------------------------------------------

def test_list_clusters_shows_readiness_heartbeat_capacity_and_locations(client: TestClient) -> None:
    r = client.get("/placement/v1/clusters")
    assert r.status_code == 200
    clusters = {c["name"]: c for c in r.json()["items"]}
    assert sorted(clusters) == ["florin", "guilder", "ludwig"]
    florin = clusters["florin"]
    assert florin["ready"] is True
    assert florin["readyCondition"]["reason"] == "SyncerConnected"
    assert florin["lastHeartbeat"] == HEARTBEAT
    assert florin["capacity"] == {"cpu": "8", "memory": "32Gi"}
    assert florin["allocatable"] == {"cpu": "7500m", "memory": "30Gi"}
    assert florin["labels"] == {"env": "prod", "id": "florin"}
    assert florin["locations"] == ["florin"]
    guilder = clusters["guilder"]
    assert guilder["ready"] is False and guilder["readyCondition"] is None and guilder["lastHeartbeat"] is None


def test_cluster_reached_by_a_second_location_lists_both(view: FakeView, client: TestClient) -> None:
    view.add_location("all-prod", {"tier": "edge"}, selector={"matchLabels": {"env": "prod"}})
    r = client.get("/placement/v1/clusters/guilder")
    assert r.status_code == 200
    assert r.json()["locations"] == ["all-prod", "guilder"]


def test_get_unknown_cluster_is_a_not_found_status(client: TestClient) -> None:
    body = assert_status(client.get("/placement/v1/clusters/nowhere"), 404, "NotFound")
    assert "nowhere" in body["message"]


def test_register_cluster_returns_201_with_the_bootstrap(client: TestClient) -> None:
    r = client.post("/placement/v1/clusters", json={"name": "haxx", "labels": {"env": "prod", "example.com/zone": "a"}})
    assert r.status_code == 201, r.text
    assert r.json() == {"name": "haxx", "bootstrap": {"apiVersion": "spacehub.io/v1alpha1",
                                                      "kind": "SyncerBootstrap", "syncTarget": "haxx",
                                                      "token": "token-haxx"}}
    listed = client.get("/placement/v1/clusters/haxx").json()
    assert listed["labels"] == {"env": "prod", "example.com/zone": "a", "id": "haxx"}


def test_register_existing_cluster_is_a_conflict_status(client: TestClient) -> None:
    assert_status(client.post("/placement/v1/clusters", json={"name": "florin"}), 409, "AlreadyExists")


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "Not_A_Name"}, "name"),
    ({"name": "x" * 64}, "name"),
    ({}, "name"),
    ({"name": "ok", "labels": {"bad key!": "v"}}, "labels"),
    ({"name": "ok", "labels": {"env": "not a value"}}, "labels"),
    ({"name": "ok", "label": {"env": "prod"}}, "label"),
])
def test_register_with_an_invalid_body_is_an_invalid_status_naming_the_field(
        client: TestClient, body: dict[str, Any], field: str) -> None:
    status = assert_status(client.post("/placement/v1/clusters", json=body), 422, "Invalid")
    assert [c["field"] for c in status["details"]["causes"]] == [field]
    assert field in status["message"]


def test_register_with_a_body_that_is_not_json_is_a_bad_request_status(client: TestClient) -> None:
    r = client.post("/placement/v1/clusters", content=b"{name: florin", headers={"Content-Type": "application/json"})
    assert_status(r, 400, "BadRequest")


def test_delete_cluster_returns_a_success_status_and_removes_it(client: TestClient) -> None:
    r = client.delete("/placement/v1/clusters/ludwig")
    assert r.status_code == 200
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200,
                        "details": {"name": "ludwig", "group": EDGE_GROUP, "kind": "synctargets"}}
    assert_status(client.get("/placement/v1/clusters/ludwig"), 404, "NotFound")
    assert_status(client.delete("/placement/v1/clusters/ludwig"), 404, "NotFound")


# --- desired sets --------------------------------------------------------------------------------

def test_desired_set_lists_namespace_before_objects_with_their_placements(client: TestClient) -> None:
    r = client.get("/placement/v1/clusters/florin/desired")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["cluster"] == "florin" and isinstance(body["seq"], int)
    entries = [(e["entryKind"], e["kind"], e["group"], e["resource"], e["namespace"], e["name"], e["implicit"])
               for e in body["items"]]
    assert entries == [
        ("namespace", "Namespace", "", "namespaces", "", "commonstuff", True),
        ("object", "ConfigMap", "", "configmaps", "commonstuff", "httpd-htdocs", False),
        ("object", "Deployment", "apps", "deployments", "commonstuff", "commond", False),
    ]
    assert all(e["space"] == SPACE and e["placements"] == [{"space": SPACE, "name": "prod-httpd"}]
               for e in body["items"][1:])


def test_desired_set_seq_advances_when_the_set_changes(view: FakeView, client: TestClient) -> None:
    before = client.get("/placement/v1/clusters/florin/desired").json()
    view.add_object("configmaps", "commonstuff", "more", "ConfigMap", "v1", {"app": "httpd"})
    after = client.get("/placement/v1/clusters/florin/desired").json()
    assert after["seq"] > before["seq"]
    assert len(after["items"]) == len(before["items"]) + 1


def test_desired_set_of_a_cluster_nothing_reaches_is_empty(view: FakeView, client: TestClient) -> None:
    view.add_cluster("lonely", {"env": "qa"})
    assert client.get("/placement/v1/clusters/lonely/desired").json()["items"] == []


def test_desired_set_of_an_unknown_cluster_is_a_not_found_status(client: TestClient) -> None:
    assert_status(client.get("/placement/v1/clusters/nowhere/desired"), 404, "NotFound")


# --- placements ----------------------------------------------------------------------------------

def test_list_placements_summarizes_destinations_and_selection(client: TestClient) -> None:
    r = client.get(f"/placement/v1/spaces/{SPACE}/placements")
    assert r.status_code == 200, r.text
    items = {p["name"]: p for p in r.json()["items"]}
    prod = items["prod-httpd"]
    assert sorted((d["location"], d["syncTarget"]) for d in prod["destinations"]) == [
        ("florin", "florin"), ("guilder", "guilder")]
    assert all(d["syncTargetUID"] for d in prod["destinations"])
    assert prod["matchingLocationCount"] == 2
    assert prod["selectedObjectCount"] == 2
    assert prod["missingCRDs"] == []
    assert prod["locationSelectors"][1] == {"matchLabels": {"env": "prod"}, "matchExpressions": []}
    assert prod["wantSingletonReportedState"] is True
    assert items["dev-only"]["destinations"] == [
        {"location": "ludwig", "syncTarget": "ludwig", "syncTargetUID": items["dev-only"]["destinations"][0][
            "syncTargetUID"]}]


def test_list_placements_of_an_unknown_space_is_a_not_found_status(client: TestClient) -> None:
    body = assert_status(client.get("/placement/v1/spaces/nowhere/placements"), 404, "NotFound")
    assert "nowhere" in body["message"]


def test_placement_detail_names_matching_selectors_and_tests(client: TestClient) -> None:
    r = client.get(f"/placement/v1/spaces/{SPACE}/placements/prod-httpd")
    assert r.status_code == 200, r.text
    body = r.json()
    assert {d["location"]: d["selectorIndexes"] for d in body["destinations"]} == {"florin": [1], "guilder": [1]}
    assert {(o["resource"], o["name"]): o["tests"] for o in body["objects"]} == {
        ("configmaps", "httpd-htdocs"): [0, 2], ("deployments", "commond"): [1]}
    assert body["downsync"][0]["apiGroup"] == "" and body["downsync"][1]["apiGroup"] == "apps"
    assert body["missingCRDs"] == [] and body["matchingLocationCount"] == 2


def test_unknown_placement_is_a_not_found_status(client: TestClient) -> None:
    body = assert_status(client.get(f"/placement/v1/spaces/{SPACE}/placements/nope"), 404, "NotFound")
    assert "edgeplacements" in body["message"] and "nope" in body["message"]


def test_missing_crds_are_reported(view: FakeView, client: TestClient) -> None:
    view.add_object("customresourcedefinitions.apiextensions.k8s.io", "", "sprockets.group1.test",
                    "CustomResourceDefinition", "apiextensions.k8s.io/v1", defines=("group1.test", "sprockets"))
    view.add_object("sprockets.group1.test", "commonstuff", "s1", "Sprocket", "group1.test/v1")
    view.add_placement("sprockets", {"locationSelectors": [{"matchLabels": {"env": "prod"}}],
                                     "downsync": [{"apiGroup": "group1.test", "resources": ["sprockets"]}]})
    body = client.get(f"/placement/v1/spaces/{SPACE}/placements/sprockets").json()
    assert body["missingCRDs"] == ["sprockets.group1.test"]
    assert body["unservedResources"] == []


def test_crd_follow_and_unserved_resources_in_the_explanation(view: FakeView, client: TestClient) -> None:
    view.add_object("customresourcedefinitions.apiextensions.k8s.io", "", "sprockets.group1.test",
                    "CustomResourceDefinition", "apiextensions.k8s.io/v1", defines=("group1.test", "sprockets"))
    view.add_object("sprockets.group1.test", "commonstuff", "s1", "Sprocket", "group1.test/v1")
    spec = {"locationSelectors": [{"matchLabels": {"env": "prod"}}], "crdFollow": True,
            "downsync": [{"apiGroup": "group1.test", "resources": ["sprockets", "gears"]}]}
    body = client.post(EXPLAIN, json={"spec": spec}).json()
    assert body["missingCRDs"] == [] and body["unservedResources"] == ["gears.group1.test"]
    assert [(o["resource"], o["tests"], o["followed"]) for o in body["objects"]] == [
        ("customresourcedefinitions", [], True), ("sprockets", [0], False)]
    body = client.post(EXPLAIN, json={"spec": {**spec, "crdFollow": False}}).json()
    assert body["missingCRDs"] == ["sprockets.group1.test"]
    assert [o["resource"] for o in body["objects"]] == ["sprockets"]


# --- objects -------------------------------------------------------------------------------------

def test_namespaced_object_destinations_without_singleton_status_on_two_clusters(client: TestClient) -> None:
    r = client.get(f"/placement/v1/spaces/{SPACE}/namespaces/commonstuff/objects/configmaps/httpd-htdocs")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["destinations"] == ["florin", "guilder"]
    assert body["placements"] == [{"space": SPACE, "name": "prod-httpd"}]
    assert body["kind"] == "ConfigMap" and body["apiVersion"] == "v1" and body["labels"] == {"app": "httpd"}
    assert body["wantSingletonReportedState"] is True and body["singletonStatus"] is False


def test_object_placed_by_two_placements_on_three_clusters_has_no_singleton_status(client: TestClient) -> None:
    body = client.get(f"/placement/v1/spaces/{SPACE}/namespaces/commonstuff/objects/deployments.apps/commond").json()
    assert body["destinations"] == ["florin", "guilder", "ludwig"]
    assert body["placements"] == [{"space": SPACE, "name": "dev-only"}, {"space": SPACE, "name": "prod-httpd"}]
    assert body["singletonStatus"] is False


def test_singleton_status_applies_with_one_destination(view: FakeView, client: TestClient) -> None:
    view.add_object("deployments.apps", "devstuff", "tool", "Deployment", "apps/v1")
    body = client.get(f"/placement/v1/spaces/{SPACE}/namespaces/devstuff/objects/deployments.apps/tool").json()
    assert body["destinations"] == ["ludwig"]
    assert body["placements"] == [{"space": SPACE, "name": "dev-only"}]
    assert body["singletonStatus"] is True


def test_cluster_scoped_object_goes_wherever_objects_in_it_go(client: TestClient) -> None:
    body = client.get(f"/placement/v1/spaces/{SPACE}/objects/namespaces/commonstuff").json()
    assert body["kind"] == "Namespace" and body["namespace"] == "" and body["placements"] == []
    assert body["destinations"] == ["florin", "guilder", "ludwig"]


@pytest.mark.parametrize("path", [
    f"/spaces/{SPACE}/objects/configmaps/nothing",
    f"/spaces/{SPACE}/namespaces/commonstuff/objects/configmaps/nothing",
    "/spaces/nowhere/namespaces/commonstuff/objects/configmaps/httpd-htdocs",
])
def test_unknown_object_is_a_not_found_status(client: TestClient, path: str) -> None:
    assert_status(client.get(f"/placement/v1{path}"), 404, "NotFound")


# --- explain -------------------------------------------------------------------------------------

EXPLAIN = f"/placement/v1/spaces/{SPACE}/placements:explain"
NOTHING_MATCHES = {"locationSelectors": [{"matchLabels": {"env": "mars"}}],
                   "downsync": [{"apiGroup": "", "resources": ["secrets"], "namespaces": ["commonstuff"]}]}


def test_explain_accepts_a_whole_object_and_a_bare_spec_alike(client: TestClient) -> None:
    spec = {"locationSelectors": [{"matchLabels": {"env": "prod"}}],
            "downsync": [{"apiGroup": "", "resources": ["configmaps"], "objectNames": ["httpd-htdocs"]}]}
    whole = {"apiVersion": API_VERSION, "kind": "EdgePlacement", "metadata": {"name": "try"}, "spec": spec}
    a = client.post(EXPLAIN, json=whole)
    b = client.post(EXPLAIN, json=spec)
    assert a.status_code == b.status_code == 200, (a.text, b.text)
    assert a.json() == b.json()
    body = a.json()
    assert sorted(d["syncTarget"] for d in body["destinations"]) == ["florin", "guilder"]
    assert body["matchedLocations"] == [{"location": "florin", "selectorIndexes": [0]},
                                        {"location": "guilder", "selectorIndexes": [0]}]
    assert body["objects"] == [{"group": "", "resource": "configmaps", "namespace": "commonstuff",
                                "name": "httpd-htdocs", "tests": [0], "followed": False,
                                "dependency": False, "because": []}]


def test_explain_of_a_placement_matching_nothing_gives_reasons(client: TestClient) -> None:
    r = client.post(EXPLAIN, json={"spec": NOTHING_MATCHES})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["destinations"] == [] and body["objects"] == [] and body["matchedLocations"] == []
    assert sorted(m["name"] for m in body["locationMismatches"]) == ["florin", "guilder", "ludwig"]
    assert all(m["reasons"] and "env" in " ".join(m["reasons"]) for m in body["locationMismatches"])
    assert len(body["objectMismatches"]) == 4
    assert all(m["reasons"] for m in body["objectMismatches"])
    assert set(body) == {"destinations", "matchedLocations", "locationMismatches", "targetMismatches", "objects",
                         "objectMismatches", "missingCRDs", "unservedResources", "problems"}


def test_explain_reports_problems_of_a_spec_that_discriminates_nothing(client: TestClient) -> None:
    body = client.post(EXPLAIN, json={"locationSelectors": [{}], "downsync": [{}]}).json()
    assert body["objects"] == []
    assert any("downsync[0]" in p for p in body["problems"])


def test_explain_in_an_unknown_space_is_a_not_found_status(client: TestClient) -> None:
    assert_status(client.post("/placement/v1/spaces/nowhere/placements:explain", json=NOTHING_MATCHES), 404,
                  "NotFound")


@pytest.mark.parametrize(("body", "field"), [
    ({"locationSelector": [{"matchLabels": {"env": "prod"}}]}, "locationSelector"),
    ({"spec": {"downsync": [{"apiGroup": "", "resource": ["configmaps"]}]}}, "spec.downsync[0].resource"),
    ({"spec": {"locationSelectors": [{"matchExpressions": [{"key": "env", "operator": "In"}]}]}},
     "spec.locationSelectors[0].matchExpressions[0].values"),
    ({"kind": "Deployment", "spec": {}}, "kind"),
    ({"apiVersion": API_VERSION, "kind": "EdgePlacement"}, "spec"),
    ({"spec": {"downsync": [{"resources": ["deployments"], "retainFields": ["spec..replicas"]}]}},
     "spec.downsync[0].retainFields[0]"),
    ({"spec": {"downsync": [{"resources": ["deployments"], "driftMode": "Sometimes"}]}}, "spec.downsync[0].driftMode"),
])
def test_explain_of_an_invalid_spec_is_an_invalid_status_naming_the_field(
        client: TestClient, body: dict[str, Any], field: str) -> None:
    status = assert_status(client.post(EXPLAIN, json=body), 422, "Invalid")
    assert field in [c["field"] for c in status["details"]["causes"]], status


# --- routing, errors and the document ------------------------------------------------------------

def test_unknown_path_is_a_not_found_status(client: TestClient) -> None:
    assert_status(client.get("/placement/v1/nothing-here"), 404, "NotFound")


def test_wrong_method_is_405_allowing_every_method_of_the_path(client: TestClient) -> None:
    r = client.put("/placement/v1/clusters", json={})
    assert_status(r, 405, "MethodNotAllowed")
    assert r.headers["allow"] == "GET, POST"
    r = client.post("/placement/v1/clusters/florin")
    assert_status(r, 405, "MethodNotAllowed")
    assert r.headers["allow"] == "DELETE, GET"


def test_engine_failure_is_an_internal_error_status(view: FakeView) -> None:
    def broken(_target: str) -> list[Any]:
        raise RuntimeError("boom")

    view.engine.desired = broken  # type: ignore[method-assign]
    with TestClient(mounted(view), base_url="http://hub", raise_server_exceptions=False) as c:
        assert_status(c.get("/placement/v1/clusters/florin/desired"), 500, "InternalError")


def test_openapi_document_is_served_under_the_mount_with_its_server(client: TestClient) -> None:
    doc = client.get("/placement/v1/openapi.json").json()
    assert doc["servers"] == [{"url": "/placement/v1"}]
    assert set(doc["paths"]) == {
        "/clusters", "/clusters/{name}", "/clusters/{name}/desired", "/spaces/{space}/placements",
        "/spaces/{space}/placements/{name}", "/spaces/{space}/placements:explain",
        "/spaces/{space}/objects/{resource}/{name}",
        "/spaces/{space}/namespaces/{namespace}/objects/{resource}/{name}", "/spaces/{space}/upsynced",
        "/conflicts", "/clusters/{name}:cordon", "/clusters/{name}:drain", "/clusters/{name}:uncordon",
        "/clusters/{name}:rotate-credentials", "/clusters/{name}:taint", "/spaces/{space}/placements/{name}/scheduling",
        "/spaces/{space}/placements/{name}:reschedule"}
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    explain = doc["paths"]["/spaces/{space}/placements:explain"]["post"]
    assert set(explain["responses"]) >= {"200", "400", "401", "403", "404", "422"}
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    docs = client.get("/placement/v1/docs")
    assert docs.status_code == 200 and "/placement/v1/openapi.json" in docs.text


def test_openapi_document_is_a_valid_openapi_3_1_document(client: TestClient) -> None:
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(client.get("/placement/v1/openapi.json").json())


# --- the schema, tested against itself -----------------------------------------------------------

TOKEN = "unit-test-token"


def behind_token_auth(app: Starlette) -> Any:
    """The hub's bearer-token check in front of the app (401 Status without the token), as the schema says."""
    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != f"Bearer {TOKEN}".encode():
            await JSONResponse(unauthorized().to_status(), status_code=401)(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded


def test_every_endpoint_conforms_to_the_openapi_document() -> None:
    app = behind_token_auth(mounted(populated_view()))
    schema = schemathesis.openapi.from_asgi("/placement/v1/openapi.json", app,
                                            headers={"Authorization": f"Bearer {TOKEN}"})

    def call(case: Any) -> None:
        case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"})

    failures, operations = fuzz_operations(schema, call, max_examples=10)
    assert operations == 19
    assert not failures, "\n\n".join(failures)


# --- scheduling ------------------------------------------------------------------------------------


def scheduled_view() -> FakeView:
    """Four clusters in two zones, one with more allocatable capacity, and a placement choosing two of them."""
    view = FakeView()
    for name, zone, cpu in [("a1", "z1", "12"), ("a2", "z1", "16"), ("b1", "z2", "8"), ("b2", "z2", "2")]:
        view.add_cluster(name, {"env": "prod", "zone": zone}, status={"allocatable": {"cpu": cpu, "memory": "8Gi"}})
    view.add_cluster("dev1", {"env": "dev", "zone": "z1"})
    view.add_placement("two", {"locationSelectors": [{"matchLabels": {"env": "prod"}}],
                               "downsync": [{"resources": ["configmaps"]}], "numberOfClusters": 2,
                               "spreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}],
                               "prioritizers": [{"type": "Capacity", "weight": 2}]})
    return view


def test_scheduling_explains_scores_and_reasons() -> None:
    view = scheduled_view()
    with TestClient(mounted(view), base_url="http://hub") as c:
        body = c.get(f"/placement/v1/spaces/{SPACE}/placements/two/scheduling").json()
    assert body["scheduled"] and body["wanted"] == 2 and body["chosen"] == ["a2", "b1"]
    rows = {r["cluster"]: r for r in body["candidates"]}
    assert rows["a2"]["scores"] == {"Capacity": 100.0} and rows["a2"]["score"] == 200.0 and rows["a2"]["chosen"]
    assert rows["a1"]["reason"] == "SpreadConstraint" and rows["b2"]["reason"] == "Outscored"
    assert rows["dev1"]["reason"] == "NotSelected"
    assert {d.sync_target_name for d in view.engine.destinations(SPACE, "two")} == {"a2", "b1"}


def test_a_no_execute_taint_moves_the_choice_and_a_no_schedule_one_does_not() -> None:
    view = scheduled_view()
    with TestClient(mounted(view), base_url="http://hub") as c:
        r = c.post("/placement/v1/clusters/b1:taint", json={"add": [{"key": "maint", "effect": "NoSchedule"}]})
        assert r.status_code == 200
        assert view.engine.chosen(SPACE, "two") == {"a2", "b1"}
        c.post("/placement/v1/clusters/b1:taint", json={"add": [{"key": "gone", "effect": "NoExecute"}]})
        assert view.engine.chosen(SPACE, "two") == {"a2", "b2"}
        rows = {r["cluster"]: r for r in c.get(f"/placement/v1/spaces/{SPACE}/placements/two/scheduling")
                .json()["candidates"]}
        assert rows["b1"]["reason"] == "Tainted" and "gone:NoExecute" in rows["b1"]["message"]
        c.post("/placement/v1/clusters/b1:taint", json={"remove": [{"key": "gone"}, {"key": "maint"}]})
        assert view.engine.chosen(SPACE, "two") == {"a2", "b2"}  # kept: b1 is back but Steady
        c.post(f"/placement/v1/spaces/{SPACE}/placements/two:reschedule")
        assert view.engine.chosen(SPACE, "two") == {"a2", "b1"}


def test_bad_taint_requests_are_422_with_field_paths_and_unknown_clusters_404() -> None:
    view = scheduled_view()
    with TestClient(mounted(view), base_url="http://hub") as c:
        r = c.post("/placement/v1/clusters/b1:taint", json={"add": [{"key": "k", "effect": "Sometimes"}]})
        assert_status(r, 422, "Invalid")
        assert [cause["field"] for cause in r.json()["details"]["causes"]] == ["add[0].effect"]
        assert_status(c.post("/placement/v1/clusters/nope:taint", json={}), 404, "NotFound")
        assert_status(c.post(f"/placement/v1/spaces/{SPACE}/placements/nope:reschedule"), 404, "NotFound")


def test_explain_refuses_bad_scheduling_fields_with_their_paths() -> None:
    view = scheduled_view()
    spec = {"locationSelectors": [{"matchLabels": {"env": "prod"}}], "downsync": [{"resources": ["configmaps"]}],
            "prioritizers": [{"type": "CEL", "expression": "cluster.name +"}]}
    with TestClient(mounted(view), base_url="http://hub") as c:
        r = c.post(f"/placement/v1/spaces/{SPACE}/placements:explain", json=spec)
        assert_status(r, 422, "Invalid")
        assert [cause["field"] for cause in r.json()["details"]["causes"]] == ["spec.prioritizers[0].expression"]
        spec["prioritizers"] = [{"type": "Capacity"}]
        assert c.post(f"/placement/v1/spaces/{SPACE}/placements:explain", json=spec).status_code == 200
