"""``kubectl autoscale`` against a space: HorizontalPodAutoscalers through kubectl's own requests."""

from __future__ import annotations

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
