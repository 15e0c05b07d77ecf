"""The Kubernetes manifest that runs a cluster's syncer inside that cluster (``cluster register -o manifest``).

Owns building the objects (Namespace, ServiceAccount, ClusterRole and its binding, the Secret holding the
syncer bootstrap, the Deployment) from a bootstrap returned by ``POST /placement/v1/clusters`` and rendering
them as one multi-document YAML stream for ``kubectl apply -f -``. Pure: no hub, no files, no printing.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import yaml

from apimachinery.names import is_dns1123_label

DEFAULT_NAMESPACE = "spacehub-syncer"
NAME = "spacehub-syncer"  # the ServiceAccount and Deployment, and the prefix of the ClusterRole(Binding)
SECRET_NAME = "spacehub-syncer-bootstrap"
SECRET_KEY = "bootstrap.yaml"
BOOTSTRAP_DIR = "/etc/spacehub-syncer"
STATE_DIR = "/var/lib/spacehub-syncer"
IMAGE_REPOSITORY = "ghcr.io/spacehub/spacehub"


def default_image() -> str:
    """The image of the installed spacehub version (the syncer should speak the hub's protocol version)."""
    try:
        version = importlib.metadata.version("spacehub")
    except importlib.metadata.PackageNotFoundError:
        version = "latest"
    return f"{IMAGE_REPOSITORY}:{version}"


def check_namespace(namespace: str) -> None:
    """Raise ``ValueError`` saying why ``namespace`` cannot name a Namespace (it must be a DNS-1123 label)."""
    errors = is_dns1123_label(namespace)
    if errors:
        raise ValueError(f'invalid syncer namespace "{namespace}": {"; ".join(errors)}')


def bootstrap_yaml(bootstrap: dict[str, Any]) -> str:
    """The bootstrap as the YAML text ``spacehub syncer run --bootstrap FILE`` reads."""
    return yaml.safe_dump(bootstrap, sort_keys=False, default_flow_style=False)


def syncer_manifest(bootstrap: dict[str, Any], *, namespace: str, image: str) -> list[dict[str, Any]]:
    """The objects, in apply order, that run the syncer of ``bootstrap["syncTarget"]`` in its cluster."""
    check_namespace(namespace)
    target = str(bootstrap.get("syncTarget") or "")
    if not target:
        raise ValueError("the bootstrap names no syncTarget")
    role = f"{NAME}-{target}"
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": target}

    def meta(name: str, *, namespaced: bool = True) -> dict[str, Any]:
        return {"name": name, **({"namespace": namespace} if namespaced else {}), "labels": dict(labels)}

    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(namespace, namespaced=False)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(NAME)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": meta(role, namespaced=False),
            # As broad as KubeStellar's syncer: placed objects may be of any kind (Namespaces, CRDs and the
            # custom resources they define included), not known when the cluster is registered. The syncer
            # server-side applies, deletes and watches them, and reads Nodes for the capacity it reports.
            # "*" covers subresources too: the pod tunnel's pods/log (get) and pods/exec, attach and
            # portforward (get, or create where the API server authorizes WebSocket upgrades as create).
            "rules": [{"apiGroups": ["*"], "resources": ["*"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": meta(role, namespaced=False),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
        {
            "apiVersion": "v1", "kind": "Secret", "metadata": meta(SECRET_NAME), "type": "Opaque",
            "stringData": {SECRET_KEY: bootstrap_yaml(bootstrap)},
        },
        {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(NAME),
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},  # one syncer per cluster at a time, never two during a rollout
                "selector": {"matchLabels": dict(labels)},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "serviceAccountName": NAME,
                        "containers": [{
                            "name": "syncer",
                            "image": image,
                            # No --kubeconfig: in a pod the syncer uses its ServiceAccount (in-cluster config).
                            "command": ["spacehub"],
                            "args": ["syncer", "run", "--bootstrap", f"{BOOTSTRAP_DIR}/{SECRET_KEY}",
                                     "--state", f"{STATE_DIR}/state.db"],
                            "volumeMounts": [
                                {"name": "bootstrap", "mountPath": BOOTSTRAP_DIR, "readOnly": True},
                                {"name": "state", "mountPath": STATE_DIR},
                            ],
                            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                                          "limits": {"memory": "128Mi"}},
                            "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True,
                                                "allowPrivilegeEscalation": False,
                                                "capabilities": {"drop": ["ALL"]}},
                        }],
                        "volumes": [
                            {"name": "bootstrap", "secret": {"secretName": SECRET_NAME}},
                            {"name": "state", "emptyDir": {}},
                        ],
                    },
                },
            },
        },
    ]


class _Dumper(yaml.SafeDumper):
    """``yaml.safe_dump``'s dumper, writing multi-line strings (the bootstrap in the Secret) as ``|`` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted scalar by itself when a string cannot be a block (e.g. trailing spaces).
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _str)


def render(objects: list[dict[str, Any]]) -> str:
    """The objects as one multi-document YAML stream, fields in the order they were built.

    ``yaml.safe_dump_all`` with a ``SafeDumper`` subclass whose only change is block style for
    multi-line strings, so that the bootstrap in the Secret reads as it does in its own file.
    """
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False)
