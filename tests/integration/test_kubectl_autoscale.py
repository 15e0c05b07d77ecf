"""HorizontalPodAutoscalers through kubectl's own requests: ``kubectl autoscale`` (a protobuf autoscaling/v2 body), and
autoscaling/v1 served beside v2 from the same storage."""

from __future__ import annotations

import json

from tests.harness import Hub, kubectl_yaml


def test_kubectl_autoscale_creates_the_hpa_on_its_first_try(hub: Hub, space: str) -> None:
    hub.kubectl("create", "deployment", "web", "--image=nginx", space=space)
    # kubectl sends the autoscaling/v2 HPA as protobuf; -v=1 logs when it has to fall back to autoscaling/v1.
    made = hub.kubectl("-v=1", "autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=80",
                       space=space)
    assert "horizontalpodautoscaler.autoscaling/web autoscaled" in made.stdout
    assert "Falling back" not in made.stderr
    hpa = kubectl_yaml(hub.kubectl("get", "hpa", "web", "-o", "yaml", space=space))
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    table = hub.kubectl("get", "hpa", space=space).stdout.splitlines()
    assert table[0].split()[:3] == ["NAME", "REFERENCE", "TARGETS"]
    assert table[1].split()[:2] == ["web", "Deployment/web"]

    # Quantities and a second metric: still the one protobuf request.
    hub.kubectl("autoscale", "deployment", "web", "--name=web-mem", "--max=10", "--cpu=500m", "--memory=70%",
                space=space)
    metrics = kubectl_yaml(hub.kubectl("get", "hpa", "web-mem", "-o", "yaml", space=space))["spec"]["metrics"]
    assert [m["resource"] for m in metrics] == [
        {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "500m"}},
        {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 70}}]


HPA_V2 = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "api"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
             "minReplicas": 1, "maxReplicas": 4,
             "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                             "type": "Utilization", "averageUtilization": 60}}},
                         {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {
                             "type": "AverageValue", "averageValue": "100"}}}],
             "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                 {"type": "Pods", "value": 1, "periodSeconds": 30}]}}},
}
V1 = "horizontalpodautoscalers.v1.autoscaling"


def test_autoscaling_v1_serves_the_same_hpas_with_the_v2_only_fields_in_annotations(hub: Hub, space: str) -> None:
    assert {"autoscaling/v1", "autoscaling/v2"} <= set(hub.kubectl("api-versions", space=space).stdout.split())
    with hub.client() as c:
        group = c.get(f"/clusters/{space}/apis/autoscaling").json()
    assert group["preferredVersion"]["version"] == "v2"
    explained = hub.kubectl("explain", "--api-version=autoscaling/v1", "hpa.spec", space=space).stdout
    assert "targetCPUUtilizationPercentage" in explained

    hub.kubectl("apply", "-f", "-", space=space, input=json.dumps(HPA_V2))
    # kubectl expands a short name without its version (as against kube): hpa.v1.autoscaling lists the HPAs.
    short = hub.kubectl("get", "hpa.v1.autoscaling", "api", space=space)
    assert short.stdout.split("\n")[1].startswith("api ") and not short.stderr
    v1 = kubectl_yaml(hub.kubectl("get", V1, "api", "-o", "yaml", space=space))
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60 and "metrics" not in v1["spec"]
    annotations = v1["metadata"]["annotations"]
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "100"}}]
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/behavior"])["ScaleDown"][
        "StabilizationWindowSeconds"] == 60

    # A v1 client edits what it knows and writes the whole object back: v2 keeps everything else.
    v1["spec"]["maxReplicas"] = 8
    hub.kubectl("replace", "-f", "-", space=space, input=json.dumps(v1))
    v2 = kubectl_yaml(hub.kubectl("get", "hpa", "api", "-o", "yaml", space=space))
    assert v2["apiVersion"] == "autoscaling/v2" and v2["spec"]["maxReplicas"] == 8
    assert v2["spec"]["metrics"] == [HPA_V2["spec"]["metrics"][1], HPA_V2["spec"]["metrics"][0]]
    assert v2["spec"]["behavior"]["scaleDown"] == HPA_V2["spec"]["behavior"]["scaleDown"]
    assert v2["metadata"]["generation"] == 2
    assert not [k for k in v2["metadata"].get("annotations", {}) if k.startswith("autoscaling.alpha.kubernetes.io/")]


def test_an_hpa_written_through_autoscaling_v1_is_a_v2_hpa(hub: Hub, space: str) -> None:
    hpa = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "old"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "old"},
                    "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}}
    hub.kubectl("create", "-f", "-", space=space, input=json.dumps(hpa))
    v2 = kubectl_yaml(hub.kubectl("get", "hpa", "old", "-o", "yaml", "--show-managed-fields", space=space))
    assert v2["spec"]["minReplicas"] == 1
    # The writer's fields, in the version it wrote (v1's scaleTargetRef is an atomic struct).
    assert [f["fieldsV1"] for f in v2["metadata"]["managedFields"] if f["apiVersion"] == "autoscaling/v1"] == [
        {"f:spec": {"f:maxReplicas": {}, "f:minReplicas": {}, "f:scaleTargetRef": {},
                    "f:targetCPUUtilizationPercentage": {}}}]
    table = hub.kubectl("get", V1, space=space).stdout.splitlines()
    assert table[1].split()[:3] == ["old", "Deployment/old", "cpu:"] and "/50%" in table[1]
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
    # Validated as upstream validates it, with v2's field paths; a v2-only field is unknown to v1.
    bad = {**hpa, "metadata": {"name": "bad"}, "spec": {**hpa["spec"], "minReplicas": 5}}
    refused = hub.kubectl("create", "-f", "-", space=space, input=json.dumps(bad), check=False)
    assert refused.returncode != 0 and "spec.maxReplicas" in refused.stderr
    unknown = {**hpa, "metadata": {"name": "unknown"}, "spec": {**hpa["spec"], "metrics": []}}
    refused = hub.kubectl("create", "-f", "-", space=space, input=json.dumps(unknown), check=False)
    assert refused.returncode != 0 and 'unknown field "spec.metrics"' in refused.stderr


def test_a_watch_through_autoscaling_v1_sees_v2_writes_in_v1s_shape(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    with hub.client() as c:
        rv = c.get(base).json()["metadata"]["resourceVersion"]
        made = c.post(f"/clusters/{space}/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
                      json={**HPA_V2, "metadata": {"name": "watched"}})
        assert made.status_code == 201, made.text
        with c.stream("GET", base, params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "5"}) as r:
            first = json.loads(next(r.iter_lines()))
    assert first["type"] == "ADDED" and first["object"]["apiVersion"] == "autoscaling/v1"
    assert first["object"]["spec"]["targetCPUUtilizationPercentage"] == 60


def test_a_status_write_through_autoscaling_v1_takes_its_annotated_conditions(hub: Hub, space: str) -> None:
    base = f"/clusters/{space}/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    conditions = [{"type": "ScalingActive", "status": "True", "lastTransitionTime": "2026-11-28T09:00:00Z",
                   "reason": "ValidMetricFound", "message": "from a v1 controller"}]
    with hub.client() as c:
        made = c.post(base, json={"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                                  "metadata": {"name": "v1-status"},
                                  "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}})
        assert made.status_code == 201, made.text
        hpa = made.json()
        hpa["metadata"].setdefault("annotations", {})["autoscaling.alpha.kubernetes.io/conditions"] = \
            json.dumps(conditions)
        hpa["status"].update(currentCPUUtilizationPercentage=42, desiredReplicas=2)
        del hpa["metadata"]["resourceVersion"]
        written = c.put(f"{base}/v1-status/status", json=hpa)
    assert written.status_code == 200, written.text
    # The answer is what was stored (the space's fleet autoscaler may write the status again afterwards).
    stored = written.json()
    assert stored["status"]["currentCPUUtilizationPercentage"] == 42
    annotations = stored["metadata"]["annotations"]
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/conditions"]) == conditions
    [metric] = json.loads(annotations["autoscaling.alpha.kubernetes.io/current-metrics"])
    assert (metric["resource"]["name"], metric["resource"]["currentAverageUtilization"]) == ("cpu", 42)
