"""The built-in kinds catalogue: names, schemas, tables, defaults and validation as upstream has them."""

from __future__ import annotations

import base64
import copy
import ipaddress
from typing import Any

import pytest

from apimachinery.errors import Cause, invalid
from apimachinery.names import validate_annotations, validate_labels, validate_object_name
from apiserver.builtin.kinds import builtin_types
from apiserver.builtin.strategies import SERVICE_CIDR, cron_schedule_error, parse_quantity
from apiserver.definitions import load_definitions
from spaces.kind import SpaceStrategy, space_definitions, space_types
from tests.builtin_objects import UID, api_service, causes, create, deployment, job, rtype, statefulset, update_causes

# --- the catalogue is consistent ---------------------------------------------------------------------------


def test_every_schema_name_resolves_to_an_upstream_or_spacehub_definition() -> None:
    definitions = {**load_definitions(), **space_definitions()}
    for t in (*builtin_types(), *space_types()):
        assert t.schema_name in definitions, t.kind


def test_schema_group_version_kind_tags_match_each_type() -> None:
    definitions = {**load_definitions(), **space_definitions()}
    for t in (*builtin_types(), *space_types()):
        tags = definitions[t.schema_name]["x-kubernetes-group-version-kind"]
        assert {"group": t.group, "version": t.version, "kind": t.kind} in tags, t.kind


def test_spacehub_definitions_only_reference_definitions_that_exist() -> None:
    definitions = {**load_definitions(), **space_definitions()}

    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            found = [node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else []
            return found + [r for v in node.values() for r in refs(v)]
        if isinstance(node, list):
            return [r for v in node for r in refs(v)]
        return []

    for name in refs(space_definitions()):
        assert name in definitions, name


def test_short_names_are_unique_and_never_shadow_a_plural() -> None:
    # A kind served from another's storage (events.k8s.io Events) has that kind's names, as upstream.
    views = [t for t in builtin_types() if t.conversion is not None]
    for view in views:
        stored = next(t for t in builtin_types() if t.group_resource == view.storage_resource)
        assert (view.plural, view.kind, view.short_names) == (stored.plural, stored.kind, stored.short_names)
    types = tuple(t for t in (*builtin_types(), *space_types()) if t.conversion is None)
    short = [s for t in types for s in t.short_names]
    assert len(short) == len(set(short))
    assert not set(short) & {t.plural for t in types}
    assert len({t.plural for t in types}) == len(types)


def test_kubectl_short_names_and_categories_are_upstreams() -> None:
    assert rtype("Deployment").short_names == ("deploy",)
    assert rtype("CustomResourceDefinition").short_names == ("crd", "crds")
    assert rtype("HorizontalPodAutoscaler").version == "v2"
    in_all = {t.kind for t in builtin_types() if "all" in t.categories}
    assert in_all == {"Service", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob",
                      "HorizontalPodAutoscaler", "ReplicationController"}
    assert rtype("ReplicationController").short_names == ("rc",)


def test_only_custom_resource_definitions_refuse_strategic_merge_patch() -> None:
    refusing = {t.kind for t in builtin_types() if not t.strategic_merge}
    assert refusing == {"CustomResourceDefinition"}


def test_scale_subresource_only_on_scalable_workloads() -> None:
    scalable = {t.kind for t in builtin_types() if "scale" in t.subresources}
    assert scalable == {"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"}
    assert rtype("ConfigMap").subresources == ()
    assert rtype("NetworkPolicy").subresources == ()


def test_generation_is_tracked_where_upstream_sets_it() -> None:
    tracked = {t.kind for t in builtin_types() if t.tracks_generation}
    assert {"Deployment", "Job", "CronJob", "Ingress", "NetworkPolicy", "PodDisruptionBudget",
            "HorizontalPodAutoscaler", "CustomResourceDefinition"} <= tracked
    assert not {"ConfigMap", "Secret", "Service", "Namespace", "Role"} & tracked


def test_catalogue_is_built_once() -> None:
    assert builtin_types() is builtin_types()
    assert space_types() is space_types()


def test_space_kind_is_cluster_scoped_with_status_and_short_name() -> None:
    space = rtype("Space")
    assert (space.group, space.version, space.plural, space.singular) == ("spacehub.io", "v1alpha1", "spaces",
                                                                          "space")
    assert not space.namespaced
    assert space.short_names == ("sp",)
    assert space.subresources == ("status",)
    assert space.schema_name == "io.spacehub.v1alpha1.Space"
    assert [(c.name, c.priority) for c in space.columns] == [("Name", 0), ("Phase", 0), ("URL", 1),
                                                              ("Age", 0)]
    assert space not in builtin_types()


# --- names, labels, annotations -------------------------------------------------------------------------


def test_name_errors_are_worded_exactly_like_apimachinery() -> None:
    assert validate_object_name("My_Name", "dns1123-label") == [
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
        "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
    assert validate_object_name("a.b", "dns1123-label") == ["must not contain dots"]
    assert validate_object_name("-x", "dns1123-subdomain") == [
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
        "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
    assert validate_object_name("x" * 64, "dns1123-label")[0] == "must be no more than 63 characters"
    assert validate_object_name("a/b", "path-segment") == ["may not contain '/'"]
    assert validate_object_name("..", "path-segment") == ["may not be '..'"]
    assert validate_object_name("system:admin", "path-segment") == []
    assert validate_object_name("my-app.v2", "dns1123-subdomain") == []


def test_name_rules_follow_each_kinds_upstream_validation() -> None:
    assert rtype("Namespace").strategy.name_rule == "dns1123-label"
    assert rtype("Service").strategy.name_rule == "dns1035-label"
    assert rtype("ClusterRole").strategy.name_rule == "path-segment"
    assert rtype("RoleBinding").strategy.name_rule == "path-segment"
    assert rtype("Deployment").strategy.name_rule == "dns1123-subdomain"
    assert rtype("Space").strategy.name_rule == "dns1123-label"
    assert validate_object_name("1web", rtype("Service").strategy.name_rule)[0].startswith("a DNS-1035 label")


def test_space_names_must_be_dns_labels() -> None:
    assert validate_object_name("team.a", rtype("Space").strategy.name_rule) == ["must not contain dots"]
    assert validate_object_name("team-a", rtype("Space").strategy.name_rule) == []


def test_bad_labels_are_reported_against_the_labels_map() -> None:
    found = validate_labels({"app": "-web", "a/b/c": "x", "ok": "x" * 64})
    assert {c.field for c in found} == {"metadata.labels"}
    assert all(c.type == "FieldValueInvalid" for c in found)
    messages = [c.message for c in found]
    assert any(m.startswith('Invalid value: "-web": a valid label must be an empty string') for m in messages)
    assert any(m.startswith('Invalid value: "a/b/c": a valid label key must consist of') for m in messages)
    assert any(m.endswith("must be no more than 63 bytes") for m in messages)
    assert validate_labels({"example.com/app": "web", "app": ""}) == []


def test_annotations_allow_upper_case_keys_but_not_unbounded_size() -> None:
    assert validate_annotations({"Example.com/Owner": "x"}) == []
    too_big = validate_annotations({"k": "x" * (256 * 1024)})
    assert [(c.type, c.field, c.message) for c in too_big] == [
        ("FieldValueTooLong", "metadata.annotations", "Too long: may not be more than 262144 bytes")]


# --- server-owned status ----------------------------------------------------------------------------------


def test_create_resets_status_to_the_kinds_initial_status() -> None:
    ns = create("Namespace", {"metadata": {"name": "dev"}, "status": {"phase": "Terminating"}})
    assert ns["status"] == {"phase": "Active"}
    d = create("Deployment", {**deployment(), "status": {"readyReplicas": 9}})
    assert d["status"] == {}
    pvc = create("PersistentVolumeClaim", {"metadata": {"name": "data"}, "spec": {},
                                           "status": {"phase": "Bound"}})
    assert pvc["status"] == {"phase": "Pending"}


def test_update_keeps_the_stored_status() -> None:
    old = create("Deployment", deployment())
    old["status"] = {"readyReplicas": 2}
    new = copy.deepcopy(old)
    new["status"] = {"readyReplicas": 99}
    update_causes("Deployment", new, old)
    assert new["status"] == {"readyReplicas": 2}


# --- namespaces ------------------------------------------------------------------------------------------


def test_namespace_gets_kubernetes_finalizer_and_name_label() -> None:
    ns = create("Namespace", {"metadata": {"name": "dev"}})
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "dev"}


def test_namespace_update_cannot_drop_the_finalizer() -> None:
    old = create("Namespace", {"metadata": {"name": "dev"}})
    new = copy.deepcopy(old)
    new["spec"]["finalizers"] = []
    assert update_causes("Namespace", new, old) == []
    assert new["spec"]["finalizers"] == ["kubernetes"]


# --- services --------------------------------------------------------------------------------------------


def test_service_defaults_and_allocates_a_cluster_ip_in_the_service_cidr() -> None:
    svc = create("Service", {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"},
                                                                    "ports": [{"port": 80}]}})
    spec = svc["spec"]
    assert spec["type"] == "ClusterIP"
    assert ipaddress.ip_address(spec["clusterIP"]) in SERVICE_CIDR
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert (spec["sessionAffinity"], spec["internalTrafficPolicy"]) == ("None", "Cluster")
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert svc["status"] == {"loadBalancer": {}}
    assert causes("Service", svc) == []
    # The address follows from the uid, so a retried create gets the same one.
    assert create("Service", svc)["spec"]["clusterIP"] == spec["clusterIP"]


def test_update_that_omits_the_cluster_ip_keeps_it() -> None:
    old = create("Service", {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    new = {"metadata": copy.deepcopy(old["metadata"]), "spec": {"ports": [{"port": 8080}]}}
    assert update_causes("Service", new, old) == []
    assert new["spec"]["clusterIP"] == old["spec"]["clusterIP"]


def test_cluster_ip_cannot_change_once_set() -> None:
    old = create("Service", {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = new["spec"]["clusterIPs"][0] = "10.96.0.99"
    assert ("spec.clusterIPs[0]", 'Invalid value: ["10.96.0.99"]: may not change once set') in \
        update_causes("Service", new, old)


def test_node_ports_are_allocated_in_range_and_kept_across_updates() -> None:
    svc = create("Service", {"metadata": {"name": "web"},
                             "spec": {"type": "NodePort", "ports": [{"name": "a", "port": 80},
                                                                    {"name": "b", "port": 443}]}})
    ports = [p["nodePort"] for p in svc["spec"]["ports"]]
    assert all(30000 <= p <= 32767 for p in ports) and len(set(ports)) == 2
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"
    new = {"metadata": copy.deepcopy(svc["metadata"]),
           "spec": {"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 443}]}}
    update_causes("Service", new, svc)
    assert [p["nodePort"] for p in new["spec"]["ports"]] == ports


def test_service_rejects_out_of_range_node_port_and_unnamed_multi_ports() -> None:
    svc = create("Service", {"metadata": {"name": "web"},
                             "spec": {"type": "NodePort",
                                      "ports": [{"port": 80, "nodePort": 80}, {"port": 81}]}})
    found = causes("Service", svc)
    assert ("spec.ports[0].nodePort", "Invalid value: 80: provided port is not in the valid range. The range "
                                      "of valid ports is 30000-32767") in found
    assert ("spec.ports[0].name", "Required value") in found


def test_switching_to_external_name_releases_the_cluster_ip() -> None:
    old = create("Service", {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    new = copy.deepcopy(old)
    new["spec"].update(type="ExternalName", externalName="db.example.com")
    assert update_causes("Service", new, old) == []
    assert not {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"} & set(new["spec"])


def test_headless_service_keeps_none_as_its_cluster_ip() -> None:
    svc = create("Service", {"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "selector": {"a": "b"},
                                                                   "ports": [{"port": 5432}]}})
    assert svc["spec"]["clusterIPs"] == ["None"]
    assert causes("Service", svc) == []


# --- workloads -----------------------------------------------------------------------------------------


def test_deployment_defaults_match_a_real_server() -> None:
    d = create("Deployment", deployment(replicas=None))
    spec = d["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                           "maxSurge": "25%"}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod = spec["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["schedulerName"]) == ("Always", "ClusterFirst",
                                                                              "default-scheduler")
    assert (pod["terminationGracePeriodSeconds"], pod["securityContext"]) == (30, {})
    container = pod["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert (container["terminationMessagePath"], container["terminationMessagePolicy"]) == (
        "/dev/termination-log", "File")
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert causes("Deployment", d) == []


@pytest.mark.parametrize(("image", "policy"), [("nginx", "Always"), ("nginx:latest", "Always"),
                                               ("nginx:1.27", "IfNotPresent"),
                                               ("registry:5000/team/app", "Always"),
                                               ("nginx@sha256:abc", "IfNotPresent")])
def test_image_pull_policy_defaults_by_tag(image: str, policy: str) -> None:
    d = create("Deployment", deployment(template={"metadata": {"labels": {"app": "web"}},
                                                  "spec": {"containers": [{"name": "c", "image": image}]}}))
    assert d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_negative_replicas_are_invalid_with_upstreams_message() -> None:
    d = create("Deployment", deployment(replicas=-1))
    found = causes("Deployment", d)
    assert found == [("spec.replicas", "Invalid value: -1: must be greater than or equal to 0")]
    error = invalid("Deployment", "apps", "web", rtype("Deployment").strategy.validate(d))
    assert error.code == 422
    assert error.message == ('Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: '
                             "must be greater than or equal to 0")


def test_deployment_requires_a_selector_matching_the_template() -> None:
    found = causes("Deployment", create("Deployment", deployment(selector={"matchLabels": {"app": "api"}})))
    assert found == [("spec.template.metadata.labels",
                      'Invalid value: {"app":"web"}: `selector` does not match template `labels`')]
    obj = deployment()
    del obj["spec"]["selector"]
    assert ("spec.selector", "Required value") in causes("Deployment", create("Deployment", obj))
    empty = causes("Deployment", create("Deployment", deployment(selector={})))
    assert ("spec.selector", "Invalid value: {}: empty selector is invalid for deployment") in empty


def test_pod_template_containers_are_checked() -> None:
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "Web", "image": "a"}, {"name": "side"}, {"name": "side",
                                                                                        "image": "b"}]}}
    found = causes("Deployment", create("Deployment", deployment(template=template)))
    fields = [f for f, _ in found]
    assert "spec.template.spec.containers[0].name" in fields
    assert ("spec.template.spec.containers[1].image", "Required value") in found
    assert ("spec.template.spec.containers[2].name", 'Duplicate value: "side"') in found
    no_containers = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}
    assert ("spec.template.spec.containers", "Required value") in causes(
        "Deployment", create("Deployment", deployment(template=no_containers)))


def test_resource_requests_may_not_exceed_limits() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
        {"name": "web", "image": "a", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "500m"}}}]}}
    found = causes("Deployment", create("Deployment", deployment(template=template)))
    assert found == [("spec.template.spec.containers[0].resources.requests",
                      'Invalid value: "2": must be less than or equal to cpu limit of 500m')]
    assert parse_quantity("1Gi") == 2**30 and parse_quantity("250m") * 4 == 1


def test_workload_selector_is_immutable_on_update() -> None:
    old = create("Deployment", deployment())
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "v": "2"}}
    new["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    assert update_causes("Deployment", new, old) == [
        ("spec.selector", 'Invalid value: {"matchLabels":{"app":"web","v":"2"}}: field is immutable')]


def test_reapplying_an_unchanged_deployment_is_valid() -> None:
    old = create("Deployment", deployment())
    new = copy.deepcopy(deployment())
    new["metadata"] = copy.deepcopy(old["metadata"])
    assert update_causes("Deployment", new, old) == []
    assert new["spec"] == old["spec"]


def test_statefulset_and_daemonset_defaults() -> None:
    sts = create("StatefulSet", statefulset())
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain",
                                                                   "whenScaled": "Retain"}
    assert causes("StatefulSet", sts) == []
    spec = deployment()["spec"]
    del spec["replicas"]
    ds = create("DaemonSet", {"metadata": {"name": "agent"}, "spec": spec})
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert causes("DaemonSet", ds) == []


def test_statefulset_update_may_not_change_service_name() -> None:
    old = create("StatefulSet", statefulset())
    new = copy.deepcopy(old)
    new["spec"]["serviceName"] = "other"
    found = update_causes("StatefulSet", new, old)
    assert [f for f, _ in found] == ["spec"]
    assert found[0][1].startswith("Forbidden: updates to statefulset spec for fields other than 'replicas'")


# --- jobs and cron jobs -----------------------------------------------------------------------------------


def test_job_selector_and_labels_are_generated_from_its_uid() -> None:
    j = create("Job", job())
    assert j["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    labels = j["spec"]["template"]["metadata"]["labels"]
    assert labels == {"batch.kubernetes.io/controller-uid": UID, "controller-uid": UID,
                      "batch.kubernetes.io/job-name": "pi", "job-name": "pi"}
    assert j["metadata"]["labels"] == labels
    assert (j["spec"]["completions"], j["spec"]["parallelism"], j["spec"]["backoffLimit"]) == (1, 1, 6)
    assert (j["spec"]["completionMode"], j["spec"]["suspend"]) == ("NonIndexed", False)
    assert causes("Job", j) == []


def test_job_with_template_labels_keeps_them_as_its_own_labels() -> None:
    j = create("Job", job(template={"metadata": {"labels": {"app": "pi"}},
                                    "spec": {"restartPolicy": "Never",
                                             "containers": [{"name": "p", "image": "x"}]}}))
    assert j["metadata"]["labels"] == {"app": "pi"}
    assert j["spec"]["template"]["metadata"]["labels"]["job-name"] == "pi"


def test_job_template_is_immutable_once_running() -> None:
    old = create("Job", job())
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:5.40"
    assert [f for f, _ in update_causes("Job", new, old)] == ["spec.template"]


def test_job_pods_must_not_restart_always() -> None:
    j = create("Job", job(template={"spec": {"containers": [{"name": "pi", "image": "perl"}]}}))
    assert causes("Job", j) == [("spec.template.spec.restartPolicy",
                                 'Unsupported value: "Always": supported values: "OnFailure", "Never"')]


def test_job_with_a_foreign_selector_is_refused_unless_manual() -> None:
    j = create("Job", job(selector={"matchLabels": {"app": "pi"}},
                          template={"metadata": {"labels": {"app": "pi"}},
                                    "spec": {"restartPolicy": "Never",
                                             "containers": [{"name": "p", "image": "x"}]}}))
    assert ("spec.selector", "`selector` not auto-generated") in [(f, m.rsplit(": ", 1)[-1])
                                                                  for f, m in causes("Job", j)]


def test_cronjob_defaults_and_schedule_validation() -> None:
    cj = {"metadata": {"name": "nightly"},
          "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": job()["spec"]}}}
    made = create("CronJob", cj)
    assert (made["spec"]["concurrencyPolicy"], made["spec"]["suspend"]) == ("Allow", False)
    assert (made["spec"]["successfulJobsHistoryLimit"], made["spec"]["failedJobsHistoryLimit"]) == (3, 1)
    assert causes("CronJob", made) == []
    missing = create("CronJob", {**cj, "spec": {**cj["spec"], "schedule": ""}})
    assert ("spec.schedule", "Required value") in causes("CronJob", missing)
    bad = create("CronJob", {**cj, "spec": {**cj["spec"], "schedule": "0 25 * * *"}})
    assert causes("CronJob", bad) == [
        ("spec.schedule", 'Invalid value: "0 25 * * *": end of range (25) above maximum (23): 25')]


@pytest.mark.parametrize(("schedule", "error"), [
    ("*/5 * * * *", None), ("@hourly", None), ("0 0 1 jan-mar mon-fri", None),
    ("* * *", "expected exactly 5 fields, found 3: [* * *]"), ("@often", "unrecognized descriptor: @often"),
])
def test_cron_schedules_parse_like_robfig_cron(schedule: str, error: str | None) -> None:
    assert cron_schedule_error(schedule) == error


# --- config maps and secrets --------------------------------------------------------------------------------


def test_config_map_keys_must_be_valid_file_names() -> None:
    cm = create("ConfigMap", {"metadata": {"name": "c"}, "data": {"ok.key": "1", "bad key": "2"}})
    found = causes("ConfigMap", cm)
    assert [f for f, _ in found] == ["data[bad key]"]
    assert found[0][1].startswith('Invalid value: "bad key": a valid config key must consist of alphanumeric')


def test_immutable_config_map_data_cannot_change() -> None:
    old = create("ConfigMap", {"metadata": {"name": "c"}, "immutable": True, "data": {"a": "1"}})
    new = copy.deepcopy(old)
    new["data"]["a"] = "2"
    assert update_causes("ConfigMap", new, old) == [
        ("data", "Forbidden: field is immutable when `immutable` is set")]


def test_secret_string_data_is_encoded_into_data_and_type_defaults_to_opaque() -> None:
    s = create("Secret", {"metadata": {"name": "s"}, "data": {"a": base64.b64encode(b"old").decode()},
                          "stringData": {"a": "new", "b": "x"}})
    assert "stringData" not in s
    assert s["type"] == "Opaque"
    assert {k: base64.b64decode(v).decode() for k, v in s["data"].items()} == {"a": "new", "b": "x"}
    assert causes("Secret", s) == []


def test_secret_type_is_immutable_and_tls_needs_its_keys() -> None:
    tls = create("Secret", {"metadata": {"name": "t"}, "type": "kubernetes.io/tls", "data": {}})
    assert causes("Secret", tls) == [("data[tls.crt]", "Required value"), ("data[tls.key]", "Required value")]
    old = create("Secret", {"metadata": {"name": "s"}})
    new = {**copy.deepcopy(old), "type": "kubernetes.io/basic-auth", "data": {"username": "YQ=="}}
    assert update_causes("Secret", new, old) == [
        ("type", 'Invalid value: "kubernetes.io/basic-auth": field is immutable')]


# --- rbac -------------------------------------------------------------------------------------------------


def test_role_rules_need_verbs_groups_and_resources() -> None:
    role = create("Role", {"metadata": {"name": "r"}, "rules": [{"resources": ["pods"]}]})
    assert causes("Role", role) == [
        ("rules[0].verbs", "Required value: verbs must contain at least one value"),
        ("rules[0].apiGroups", "Required value: resource rules must supply at least one api group")]
    urls = create("ClusterRole", {"metadata": {"name": "r"},
                                  "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]})
    assert causes("ClusterRole", urls) == []


def test_role_binding_needs_a_role_ref_which_cannot_change() -> None:
    rb = create("RoleBinding", {"metadata": {"name": "rb"}, "subjects": [{"kind": "User", "name": "alice"}]})
    assert rb["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    assert causes("RoleBinding", rb) == [
        ("roleRef.kind", 'Unsupported value: null: supported values: "Role", "ClusterRole"'),
        ("roleRef.name", "Required value")]
    old = create("RoleBinding", {"metadata": {"name": "rb"}, "roleRef": {"kind": "Role", "name": "view"}})
    new = copy.deepcopy(old)
    new["roleRef"]["name"] = "admin"
    assert [f for f, _ in update_causes("RoleBinding", new, old)] == ["roleRef"]


def test_cluster_role_binding_service_accounts_need_a_namespace() -> None:
    crb = create("ClusterRoleBinding", {"metadata": {"name": "x"},
                                        "roleRef": {"kind": "ClusterRole", "name": "view"},
                                        "subjects": [{"kind": "ServiceAccount", "name": "default"}]})
    assert causes("ClusterRoleBinding", crb) == [("subjects[0].namespace", "Required value")]


def test_events_must_share_their_objects_namespace() -> None:
    event = {"metadata": {"name": "e", "namespace": "dev"}, "reason": "Started",
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "prod"}}
    assert causes("Event", event) == [("involvedObject.namespace",
                                       'Invalid value: "prod": does not match event.namespace')]
    event["involvedObject"]["namespace"] = "dev"
    assert causes("Event", event) == []


def test_namespace_finalizers_must_be_standard_or_qualified() -> None:
    ns = create("Namespace", {"metadata": {"name": "dev"},
                              "spec": {"finalizers": ["example.com/cleanup", "x"]}})
    assert causes("Namespace", ns) == [
        ("spec.finalizers", 'Invalid value: "x": name is neither a standard finalizer name nor is it fully '
                            "qualified")]


# --- the remaining kinds ------------------------------------------------------------------------------------


def test_priority_class_value_is_required_and_immutable() -> None:
    pc = create("PriorityClass", {"metadata": {"name": "high"}})
    assert causes("PriorityClass", pc) == [("value", "Required value")]
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"
    old = create("PriorityClass", {"metadata": {"name": "high"}, "value": 1000})
    new = {**copy.deepcopy(old), "value": 2000}
    assert update_causes("PriorityClass", new, old) == [
        ("value", "Forbidden: may not be changed in an update.")]


def test_storage_class_needs_a_provisioner_and_defaults_its_policies() -> None:
    sc = create("StorageClass", {"metadata": {"name": "fast"}})
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    assert causes("StorageClass", sc) == [("provisioner", "Required value")]


def test_pvc_needs_access_modes_and_a_storage_request() -> None:
    pvc = create("PersistentVolumeClaim", {"metadata": {"name": "data"}, "spec": {}})
    assert pvc["spec"]["volumeMode"] == "Filesystem"
    assert causes("PersistentVolumeClaim", pvc) == [
        ("spec.accessModes", "Required value: at least 1 access mode is required"),
        ("spec.resources[storage]", "Required value")]


def test_pdb_may_not_set_both_bounds() -> None:
    pdb = create("PodDisruptionBudget", {"metadata": {"name": "p"},
                                         "spec": {"minAvailable": 1, "maxUnavailable": "10%"}})
    assert [f for f, m in causes("PodDisruptionBudget", pdb) if "cannot be both set" in m] == ["spec"]
    assert pdb["status"]["disruptionsAllowed"] == 0


def test_hpa_defaults_cpu_target_and_checks_replica_bounds() -> None:
    hpa = create("HorizontalPodAutoscaler", {"metadata": {"name": "h"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 5, "maxReplicas": 2}})
    target = hpa["spec"]["metrics"][0]["resource"]["target"]
    assert target == {"type": "Utilization", "averageUtilization": 80}
    assert causes("HorizontalPodAutoscaler", hpa) == [
        ("spec.maxReplicas", "Invalid value: 2: must be greater than or equal to `minReplicas`")]


def test_ingress_paths_need_a_path_type_and_a_backend() -> None:
    ing = create("Ingress", {"metadata": {"name": "i"}, "spec": {"rules": [{"host": "example.com", "http": {
        "paths": [{"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
    assert causes("Ingress", ing) == [("spec.rules[0].http.paths[0].pathType",
                                       "Required value: pathType must be specified")]


def test_network_policy_defaults_policy_types_and_port_protocols() -> None:
    np = create("NetworkPolicy", {"metadata": {"name": "n"}, "spec": {
        "podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}})
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert np["spec"]["egress"][0]["ports"][0]["protocol"] == "TCP"
    assert causes("NetworkPolicy", np) == []


def test_crd_needs_names_and_scope_and_a_matching_name() -> None:
    crd = create("CustomResourceDefinition", {"metadata": {"name": "widgets.example.com"}, "spec": {
        "group": "example.com", "names": {"plural": "gadgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True}]}})
    assert crd["spec"]["names"]["listKind"] == "WidgetList"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert causes("CustomResourceDefinition", crd) == [
        ("spec.scope", "Required value"),
        ("metadata.name", 'Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group')]


def test_root_space_cannot_be_created_or_deleted() -> None:
    strategy = rtype("Space").strategy
    assert isinstance(strategy, SpaceStrategy)
    root = create("Space", {"metadata": {"name": "root"}})
    assert [c.type for c in strategy.validate(root)] == ["FieldValueForbidden"]
    assert [c.type for c in strategy.validate_delete(root)] == ["FieldValueForbidden"]
    team = create("Space", {"metadata": {"name": "team-a"}})
    assert strategy.validate(team) == []
    assert team["status"] == {"phase": "Pending"}


def test_causes_are_status_causes() -> None:
    found = rtype("ConfigMap").strategy.validate({"data": {"a b": "x"}})
    assert len(found) == 1 and isinstance(found[0], Cause)
    assert found[0].to_dict()["field"] == "data[a b]"
    assert found[0].to_dict()["reason"] == "FieldValueInvalid"


def test_api_service_is_stored_with_kube_aggregators_defaults_and_checks() -> None:
    t = rtype("APIService")
    assert (t.group, t.plural, t.namespaced, t.subresources) == ("apiregistration.k8s.io", "apiservices", False,
                                                                 ("status",))
    created = create("APIService", api_service())
    assert created["spec"]["service"]["port"] == 443 and created["status"] == {}
    assert causes("APIService", created) == []
    wrong_name = api_service()
    wrong_name["metadata"]["name"] = "example.my"
    assert causes("APIService", create("APIService", wrong_name)) == [
        ("metadata.name", 'Invalid value: "example.my": must be `spec.version+"."+spec.group`: "v1090.example.my"')]
    assert causes("APIService", create("APIService", api_service(groupPriorityMinimum=0, versionPriority=1001))) == [
        ("spec.groupPriorityMinimum", "Invalid value: 0: must be positive and less than 20000"),
        ("spec.versionPriority", "Invalid value: 1001: must be positive and less than 1000")]
    assert causes("APIService", create("APIService", api_service(service=None, insecureSkipTLSVerify=True))) == [
        ("spec.insecureSkipTLSVerify", "Invalid value: true: local APIServices may not have insecureSkipTLSVerify")]
    assert causes("APIService", create("APIService", api_service(service={"namespace": "ns", "port": 70000}))) == [
        ("spec.service.name", "Required value"),
        ("spec.service.port", "Invalid value: 70000: must be between 1 and 65535, inclusive")]
    assert t.strategy.name_rule == "path-segment"
