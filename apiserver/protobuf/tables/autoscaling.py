"""Field tables of the ``autoscaling/v2`` HorizontalPodAutoscaler messages (``k8s.io/api/autoscaling/v2``, v0.37
struct tags): what ``kubectl autoscale`` sends."""

from __future__ import annotations

from apiserver.protobuf.schema import INT32, INT64, KEEP, LIST, PTR, QUANTITY, STRING, TIME, Table, table

MESSAGES: dict[str, Table] = {
    "autoscaling.HorizontalPodAutoscaler": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "autoscaling.HorizontalPodAutoscalerSpec"),
        (3, "status", "autoscaling.HorizontalPodAutoscalerStatus"),
    ),
    "autoscaling.HorizontalPodAutoscalerSpec": table(
        (1, "scaleTargetRef", "autoscaling.CrossVersionObjectReference"),
        (2, "minReplicas", INT32, PTR),
        (3, "maxReplicas", INT32, KEEP),
        (4, "metrics", "autoscaling.MetricSpec", LIST),
        (5, "behavior", "autoscaling.HorizontalPodAutoscalerBehavior", PTR),
    ),
    "autoscaling.CrossVersionObjectReference": table(
        (1, "kind", STRING, KEEP),
        (2, "name", STRING, KEEP),
        (3, "apiVersion", STRING),
    ),
    "autoscaling.MetricSpec": table(
        (1, "type", STRING, KEEP),
        (2, "object", "autoscaling.ObjectMetricSource", PTR),
        (3, "pods", "autoscaling.PodsMetricSource", PTR),
        (4, "resource", "autoscaling.ResourceMetricSource", PTR),
        (7, "containerResource", "autoscaling.ContainerResourceMetricSource", PTR),
        (5, "external", "autoscaling.ExternalMetricSource", PTR),
    ),
    "autoscaling.ObjectMetricSource": table(
        (1, "describedObject", "autoscaling.CrossVersionObjectReference"),
        (2, "target", "autoscaling.MetricTarget"),
        (3, "metric", "autoscaling.MetricIdentifier"),
    ),
    "autoscaling.PodsMetricSource": table(
        (1, "metric", "autoscaling.MetricIdentifier"),
        (2, "target", "autoscaling.MetricTarget"),
    ),
    "autoscaling.ResourceMetricSource": table(
        (1, "name", STRING, KEEP),
        (2, "target", "autoscaling.MetricTarget"),
    ),
    "autoscaling.ContainerResourceMetricSource": table(
        (1, "name", STRING, KEEP),
        (2, "target", "autoscaling.MetricTarget"),
        (3, "container", STRING, KEEP),
    ),
    "autoscaling.ExternalMetricSource": table(
        (1, "metric", "autoscaling.MetricIdentifier"),
        (2, "target", "autoscaling.MetricTarget"),
    ),
    "autoscaling.MetricIdentifier": table(
        (1, "name", STRING, KEEP),
        (2, "selector", "meta.LabelSelector", PTR),
    ),
    "autoscaling.MetricTarget": table(
        (1, "type", STRING, KEEP),
        (2, "value", QUANTITY, PTR),
        (3, "averageValue", QUANTITY, PTR),
        (4, "averageUtilization", INT32, PTR),
    ),
    "autoscaling.HorizontalPodAutoscalerBehavior": table(
        (1, "scaleUp", "autoscaling.HPAScalingRules", PTR),
        (2, "scaleDown", "autoscaling.HPAScalingRules", PTR),
    ),
    "autoscaling.HPAScalingRules": table(
        (3, "stabilizationWindowSeconds", INT32, PTR),
        (1, "selectPolicy", STRING, PTR),
        (2, "policies", "autoscaling.HPAScalingPolicy", LIST),
        (4, "tolerance", QUANTITY, PTR),
    ),
    "autoscaling.HPAScalingPolicy": table(
        (1, "type", STRING, KEEP),
        (2, "value", INT32, KEEP),
        (3, "periodSeconds", INT32, KEEP),
    ),
    "autoscaling.HorizontalPodAutoscalerStatus": table(
        (1, "observedGeneration", INT64, PTR),
        (2, "lastScaleTime", TIME, PTR),
        (3, "currentReplicas", INT32),
        (4, "desiredReplicas", INT32, KEEP),
        (5, "currentMetrics", "autoscaling.MetricStatus", LIST | KEEP),
        (6, "conditions", "autoscaling.HorizontalPodAutoscalerCondition", LIST),
    ),
    "autoscaling.MetricStatus": table(
        (1, "type", STRING, KEEP),
        (2, "object", "autoscaling.ObjectMetricStatus", PTR),
        (3, "pods", "autoscaling.PodsMetricStatus", PTR),
        (4, "resource", "autoscaling.ResourceMetricStatus", PTR),
        (7, "containerResource", "autoscaling.ContainerResourceMetricStatus", PTR),
        (5, "external", "autoscaling.ExternalMetricStatus", PTR),
    ),
    "autoscaling.ObjectMetricStatus": table(
        (1, "metric", "autoscaling.MetricIdentifier"),
        (2, "current", "autoscaling.MetricValueStatus"),
        (3, "describedObject", "autoscaling.CrossVersionObjectReference"),
    ),
    "autoscaling.PodsMetricStatus": table(
        (1, "metric", "autoscaling.MetricIdentifier"),
        (2, "current", "autoscaling.MetricValueStatus"),
    ),
    "autoscaling.ResourceMetricStatus": table(
        (1, "name", STRING, KEEP),
        (2, "current", "autoscaling.MetricValueStatus"),
    ),
    "autoscaling.ContainerResourceMetricStatus": table(
        (1, "name", STRING, KEEP),
        (2, "current", "autoscaling.MetricValueStatus"),
        (3, "container", STRING, KEEP),
    ),
    "autoscaling.ExternalMetricStatus": table(
        (1, "metric", "autoscaling.MetricIdentifier"),
        (2, "current", "autoscaling.MetricValueStatus"),
    ),
    "autoscaling.MetricValueStatus": table(
        (1, "value", QUANTITY, PTR),
        (2, "averageValue", QUANTITY, PTR),
        (3, "averageUtilization", INT32, PTR),
    ),
    "autoscaling.HorizontalPodAutoscalerCondition": table(
        (1, "type", STRING, KEEP),
        (2, "status", STRING, KEEP),
        (3, "lastTransitionTime", TIME),
        (4, "reason", STRING),
        (5, "message", STRING),
        (6, "observedGeneration", INT64, PTR),
    ),
}
