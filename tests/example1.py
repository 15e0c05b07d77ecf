"""KubeStellar example1's workloads, written for these tests (``../shared/notes/kubestellar-semantics.md`` §6A).

Space ``common`` holds what every ``env=prod`` cluster runs: Namespace ``commonstuff``, the web site's
ConfigMap naming the Location it runs in, a Customizer and the Deployment ``commond`` it customizes. Space
``special`` holds what only ``extended=yes`` clusters run: Namespace ``specialstuff`` (``special=yes``), a
site and the Deployment ``speciald``, the CronTab CRD and one CronTab, and the APIService ``v1090.example.my``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.syncer_harness import World, configmap, deployment, namespace, placement

EDGE = "edge.kubestellar.io/v2alpha1"
COMMOND = "/apis/apps/v1/namespaces/commonstuff/deployments/commond"
SPECIALD = "/apis/apps/v1/namespaces/specialstuff/deployments/speciald"
CRONTAB_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com"
CRONTAB = "/apis/stable.example.com/v1/namespaces/specialstuff/crontabs/my-new-cron-object"
APISERVICE = "/apis/apiregistration.k8s.io/v1/apiservices/v1090.example.my"


@contextmanager
def example1_world(base: Path, *spaces: str) -> Iterator[World]:
    """A hub and two simulated clusters, wec1 joined as florin (``env=prod``) and wec2 as guilder
    (``env=prod, extended=yes``), each with its syncer process, and the workload spaces created."""
    w = World(base, clusters=2).start()
    try:
        w.join("florin", "wec1", {"env": "prod", "loc-name": "florin"})
        w.join("guilder", "wec2", {"env": "prod", "extended": "yes", "loc-name": "guilder"})
        for space in spaces:
            w.hub.create_space(space)
        yield w
    finally:
        w.close()


def site(namespace_name: str = "commonstuff", kind: str = "common") -> dict[str, Any]:
    doc = configmap("httpd-htdocs", namespace_name, **{"index.html": f"This is a {kind} web site. Running in "
                                                                       "%(loc-name), 100%% customized."})
    doc["metadata"]["annotations"] = {"edge.kubestellar.io/expand-parameters": "true"}
    return doc


def commond() -> dict[str, Any]:
    doc = deployment("commond", "commonstuff", replicas=1)
    doc["metadata"]["annotations"] = {"edge.kubestellar.io/customizer": "example-customizer"}
    doc["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "EXAMPLE_VAR", "value": "example value"}]
    return doc


def customizer(path: str = "$.spec.template.spec.containers.0.env.0.value", value: str = '"env is %(env)"') \
        -> dict[str, Any]:
    return {"apiVersion": EDGE, "kind": "Customizer",
            "metadata": {"name": "example-customizer", "namespace": "commonstuff",
                         "annotations": {"edge.kubestellar.io/expand-parameters": "true"}},
            "replacements": [{"path": path, "value": value}]}


def common_placement() -> dict[str, Any]:
    return placement("edge-placement-c", {"env": "prod"},
                     [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["commonstuff"]},
                      {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["commonstuff"]}])


def env_value(obj: dict[str, Any]) -> str:
    return str(obj["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"])


def text(obj: dict[str, Any]) -> str:
    return str(obj["data"]["index.html"])


def common_workload() -> list[dict[str, Any]]:
    return [namespace("commonstuff"), customizer(), site(), commond(), common_placement()]


def crontab_crd() -> dict[str, Any]:
    spec_schema = {"type": "object", "properties": {"cronSpec": {"type": "string"}, "image": {"type": "string"},
                                                    "replicas": {"type": "integer"}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                     "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "properties": {"spec": spec_schema}}}}]}}


def crontab() -> dict[str, Any]:
    return {"apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "my-new-cron-object", "namespace": "specialstuff"},
            "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}}


def api_service() -> dict[str, Any]:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1090.example.my"},
            "spec": {"group": "example.my", "version": "v1090", "groupPriorityMinimum": 360, "versionPriority": 42,
                     "service": {"namespace": "my-namespace", "name": "my-service"}}}


def special_placement(*, crd_follow: bool = True) -> dict[str, Any]:
    doc = placement("edge-placement-s", {"env": "prod", "extended": "yes"}, [
        {"namespaceSelectors": [{"matchLabels": {"special": "yes"}}]},
        {"apiGroup": "apiregistration.k8s.io", "resources": ["apiservices"], "objectNames": ["v1090.example.my"]},
        {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["specialstuff"]},
    ], singleton=True)
    doc["spec"]["crdFollow"] = crd_follow
    return doc


def special_workload() -> list[dict[str, Any]]:
    ns = namespace("specialstuff")
    ns["metadata"]["labels"] = {"special": "yes"}
    ns["metadata"]["annotations"] = {"just-for": "fun"}
    return [ns, crontab_crd(), site("specialstuff", "special"), deployment("speciald", "specialstuff", replicas=1),
            api_service(), special_placement()]
