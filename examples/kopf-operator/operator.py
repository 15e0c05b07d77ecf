"""A small kopf operator: each WebApp (crd.yaml) becomes a Deployment and worker Pods, and its status says how
they are doing.

Plain kopf and the official Python client against whatever the kubeconfig names: it knows nothing of where it
runs. Besides its handlers it uses kopf's admission webhooks (a validating and a mutating one, registered by
kopf itself in the configurations it manages), its peering (leader election between replicas) and its Events.

    kopf run operator.py --namespace webapps --peering webapp-operator --priority 100

Settings from the environment (all optional):

- ``WEBAPP_WEBHOOK_LISTEN``: ``host:port`` the admission webhook listens on and is called at (127.0.0.1:9443).
- ``WEBAPP_WEBHOOK_CERT``, ``WEBAPP_WEBHOOK_KEY``: its self-signed TLS certificate and key (PEM files); kopf
  writes the certificate into the webhook configurations as their CA bundle. Replicas given the same files and address
  serve one webhook (kopf listens with SO_REUSEPORT), so it keeps answering while any replica runs. Without
  them kopf makes a self-signed certificate of its own (that needs ``pip install certbuilder``).
- ``WEBAPP_PEERING_LIFETIME``: seconds after its last keep-alive that a silent replica is taken for dead and
  another takes over (kopf's default, 60).
"""

from __future__ import annotations

import os
from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "demo.example.com", "v1", "webapps"
OWNER_LABEL = "demo.example.com/webapp"  # on every Deployment and Pod made for a WebApp: its name
MAX_REPLICAS = 10


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    kubernetes.config.load_kube_config()  # the same kubeconfig kopf logged in with ($KUBECONFIG)
    host, _, port = os.environ.get("WEBAPP_WEBHOOK_LISTEN", "127.0.0.1:9443").rpartition(":")
    settings.admission.server = kopf.WebhookServer(addr=host, host=host, port=int(port),
                                                   certfile=os.environ.get("WEBAPP_WEBHOOK_CERT"),
                                                   pkeyfile=os.environ.get("WEBAPP_WEBHOOK_KEY"))
    settings.admission.managed = "auto.webapps.demo.example.com"
    settings.peering.lifetime = int(os.environ.get("WEBAPP_PEERING_LIFETIME", "60"))


# --- admission: persistent, so a replica that stops does not take the webhooks away from the others ---------

@kopf.on.validate(GROUP, VERSION, PLURAL, operations=["CREATE", "UPDATE"], persistent=True)
def refuse_too_many_replicas(spec: kopf.Spec, **_: Any) -> None:
    if spec.get("replicas", 0) > MAX_REPLICAS:
        raise kopf.AdmissionError(f"at most {MAX_REPLICAS} replicas, asked for {spec['replicas']}", code=422)


@kopf.on.mutate(GROUP, VERSION, PLURAL, operations=["CREATE"], persistent=True)
def mark_managed(patch: kopf.Patch, labels: kopf.Labels, **_: Any) -> None:
    if "demo.example.com/managed-by" not in labels:
        patch.meta.labels["demo.example.com/managed-by"] = "webapp-operator"


# --- what each WebApp becomes --------------------------------------------------------------------------------

def web_deployment(name: str, spec: kopf.Spec) -> dict[str, Any]:
    labels = {OWNER_LABEL: name, "app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": spec["replicas"], "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "web", "image": spec["image"]}]}}}}


def worker_pod(name: str, index: int, spec: kopf.Spec) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-worker-{index}", "labels": {OWNER_LABEL: name, "role": "worker"}},
            "spec": {"containers": [{"name": "worker", "image": spec["image"]}]}}


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_children(name: str, namespace: str, spec: kopf.Spec, body: kopf.Body, **_: Any) -> dict[str, Any]:
    deployment = web_deployment(name, spec)
    pods = [worker_pod(name, i, spec) for i in range(spec.get("workers", 0))]
    kopf.adopt([deployment, *pods], owner=body)  # namespace and ownerReferences: deleted with the WebApp
    apps, core = kubernetes.client.AppsV1Api(), kubernetes.client.CoreV1Api()
    apps.create_namespaced_deployment(namespace, deployment)
    for pod in pods:
        core.create_namespaced_pod(namespace, pod)
    kopf.info(body, reason="Created", message=f"Deployment {name} and {len(pods)} worker pod(s)")
    return {"deployment": name, "workers": [p["metadata"]["name"] for p in pods]}


@kopf.on.field(GROUP, VERSION, PLURAL, field="spec.replicas")
def scale(name: str, namespace: str, old: Any, new: Any, body: kopf.Body, **_: Any) -> None:
    if old is None:
        return  # the creation, handled above
    kubernetes.client.AppsV1Api().patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": new}})
    kopf.info(body, reason="Scaled", message=f"Deployment {name} from {old} to {new} replicas")


# --- status: the children's state, reported on their WebApp --------------------------------------------------

@kopf.on.event("apps", "v1", "deployments", labels={OWNER_LABEL: kopf.PRESENT})
@kopf.on.event("", "v1", "pods", labels={OWNER_LABEL: kopf.PRESENT, "role": "worker"})
def report(namespace: str, labels: kopf.Labels, **_: Any) -> None:
    webapp = labels[OWNER_LABEL]
    status = observed_status(namespace, webapp)
    try:
        kubernetes.client.CustomObjectsApi().patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, webapp, {"status": status})
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:  # a WebApp deleted meanwhile: its children go with it
            raise


def observed_status(namespace: str, webapp: str) -> dict[str, Any]:
    """Read afresh rather than from the event: events of the Deployment and of each Pod come in any order."""
    apps, core = kubernetes.client.AppsV1Api(), kubernetes.client.CoreV1Api()
    try:
        deployment = apps.read_namespaced_deployment(webapp, namespace)
        wanted, ready = deployment.spec.replicas or 0, deployment.status.ready_replicas or 0
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise
        wanted, ready = 0, 0
    selector = f"{OWNER_LABEL}={webapp},role=worker"
    workers = {p.metadata.name: p.status.phase or "Pending"
               for p in core.list_namespaced_pod(namespace, label_selector=selector).items if owned(p, webapp)}
    running = sum(phase == "Running" for phase in workers.values())
    all_up = wanted > 0 and ready >= wanted and running == len(workers)
    return {"phase": "Running" if all_up else "Progressing", "replicas": wanted, "readyReplicas": ready,
            "workers": workers, "workersRunning": f"{running}/{len(workers)}"}


def owned(pod: kubernetes.client.V1Pod, webapp: str) -> bool:
    """Whether the WebApp created this pod: other pods may carry its labels (copies made from its pods, say)."""
    return any(ref.kind == "WebApp" and ref.name == webapp for ref in pod.metadata.owner_references or [])
