"""Protobuf request bodies: decoded into exactly the JSON object kubectl would have sent.

The reference is kubectl itself. For every generator subcommand, the fixtures under
``tests/fixtures/protobuf`` hold the body kubectl 1.37 POSTed (``<name>.pb``, captured by a throwaway HTTP
server that records it) and what ``--dry-run=client -o json`` printed for the same command
(``<name>.json``, the JSON encoding of the same typed object). Decoding the first must give the second.
When kubectl is installed the same comparison also runs live; ``python -m tests.unit.test_protobuf``
re-captures the fixtures.

Hand-built bodies (a tiny encoder below) cover what kubectl never sends: malformed bytes, unknown fields,
packed repeated scalars, merged message fields, timestamps and managed fields.
"""

from __future__ import annotations

import datetime
import http.server
import json
import os
import struct
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from apimachinery.errors import StatusError
from apiserver.protobuf import decode_protobuf_body, supports, wire
from apiserver.protobuf.schema import Kind, MapOf
from apiserver.protobuf.tables import KINDS, MESSAGES
from apiserver.resourcetypes import ResourceType
from tests.harness import KUBECTL

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "protobuf"


def rtype(api_version: str, kind: str, plural: str, namespaced: bool = True) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(group=group, version=version, kind=kind, plural=plural, singular=kind.lower(),
                        namespaced=namespaced)


TYPES = {t.kind: t for t in (
    rtype("v1", "Namespace", "namespaces", namespaced=False),
    rtype("v1", "ConfigMap", "configmaps"),
    rtype("v1", "Secret", "secrets"),
    rtype("v1", "ServiceAccount", "serviceaccounts"),
    rtype("v1", "Service", "services"),
    rtype("v1", "ResourceQuota", "resourcequotas"),
    rtype("v1", "Pod", "pods"),
    rtype("apps/v1", "Deployment", "deployments"),
    rtype("batch/v1", "Job", "jobs"),
    rtype("batch/v1", "CronJob", "cronjobs"),
    rtype("rbac.authorization.k8s.io/v1", "Role", "roles"),
    rtype("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False),
    rtype("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
    rtype("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
    rtype("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", namespaced=False),
    rtype("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
    rtype("networking.k8s.io/v1", "Ingress", "ingresses"),
    rtype("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
)}
# Resource (URL plural) -> kind, to tell which type a captured POST was for.
BY_PLURAL = {t.plural: t for t in TYPES.values()}

# --- the generator commands and their captures ---------------------------------------------------

# name -> kubectl arguments; "{dir}" is a scratch directory holding the files some commands read.
COMMANDS: dict[str, list[str]] = {
    "namespace": ["create", "namespace", "demo"],
    "configmap": ["create", "configmap", "cfg", "--from-literal=a=1", "--from-literal=greeting=hello world",
                  "--from-file=blob={dir}/blob.bin", "--from-file={dir}/app.properties"],
    "configmap-hash": ["create", "configmap", "hashed", "--from-literal=k=v", "--append-hash"],
    "secret-generic": ["create", "secret", "generic", "creds", "--from-literal=user=admin",
                       "--from-literal=password=s3cr3t!", "--from-file=blob={dir}/blob.bin", "--type=Opaque"],
    "secret-tls": ["create", "secret", "tls", "cert", "--cert={dir}/tls.crt", "--key={dir}/tls.key"],
    "secret-docker-registry": ["create", "secret", "docker-registry", "pull", "--docker-server=registry.example.com",
                               "--docker-username=robot", "--docker-password=hunter2",
                               "--docker-email=robot@example.com"],
    "serviceaccount": ["create", "serviceaccount", "bot"],
    "service-clusterip": ["create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443:https"],
    "service-headless": ["create", "service", "clusterip", "headless", "--clusterip=None"],
    "service-nodeport": ["create", "service", "nodeport", "np", "--tcp=80:8080", "--node-port=30080"],
    "service-loadbalancer": ["create", "service", "loadbalancer", "lb", "--tcp=5678:8080"],
    "service-externalname": ["create", "service", "externalname", "ext", "--external-name=db.example.com",
                             "--tcp=5432"],
    "deployment": ["create", "deployment", "web", "--image=nginx:1.27", "--port=8080", "--replicas=3"],
    "deployment-command": ["create", "deployment", "sleeper", "--image=busybox", "--", "sleep", "3600"],
    "job": ["create", "job", "once", "--image=busybox", "--", "echo", "hi"],
    "job-from-cronjob": ["create", "job", "manual", "--from=cronjob/nightly"],
    "cronjob": ["create", "cronjob", "nightly", "--image=busybox", "--schedule=*/5 * * * *", "--restart=OnFailure",
                "--", "date"],
    "role": ["create", "role", "reader", "--verb=get,list,watch", "--resource=pods,deployments.apps",
             "--resource-name=a", "--resource-name=b"],
    "clusterrole": ["create", "clusterrole", "viewer", "--verb=get,post", "--resource=nodes",
                    "--non-resource-url=/healthz", "--non-resource-url=/metrics"],
    "clusterrole-aggregate": ["create", "clusterrole", "monitoring",
                              "--aggregation-rule=rbac.example.com/aggregate-to-monitoring=true"],
    "rolebinding": ["create", "rolebinding", "readers", "--role=reader", "--user=alice", "--group=devs",
                    "--serviceaccount=default:bot"],
    "clusterrolebinding": ["create", "clusterrolebinding", "viewers", "--clusterrole=viewer", "--user=bob"],
    "quota": ["create", "quota", "compute", "--hard=cpu=2,memory=1Gi,pods=10,requests.cpu=500m",
              "--scopes=BestEffort,NotTerminating"],
    "priorityclass": ["create", "priorityclass", "high", "--value=1000", "--description=important pods",
                      "--preemption-policy=Never"],
    "priorityclass-default": ["create", "priorityclass", "fallback", "--value=-5", "--global-default=true"],
    "pdb-min": ["create", "poddisruptionbudget", "web-pdb", "--selector=app=web", "--min-available=50%"],
    "pdb-max": ["create", "poddisruptionbudget", "api-pdb", "--selector=app=api,tier in (a,b)",
                "--max-unavailable=1"],
    "ingress": ["create", "ingress", "site", "--class=nginx", "--rule=foo.example.com/bar=svc:8080",
                "--rule=foo.example.com/static*=static:http,tls=site-cert", "--default-backend=fallback:80",
                "--annotation=example.com/owner=web"],
    # One POST each: kubectl falls back to autoscaling/v1 only with --cpu set and no --memory.
    "autoscale": ["autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=80"],
    "autoscale-quantities": ["autoscale", "deployment", "web", "--name=web-mem", "--max=10", "--cpu=500m",
                             "--memory=70%"],
}

# The CronJob `create job --from=cronjob/nightly` copies: a template using far more of PodSpec than any
# generator writes, as a real cluster would have it after defaulting.
NIGHTLY: dict[str, Any] = {
    "apiVersion": "batch/v1", "kind": "CronJob",
    "metadata": {"name": "nightly", "namespace": "default", "uid": "6f0e2f4e-1111-4a5b-9c0d-0123456789ab",
                 "resourceVersion": "42", "creationTimestamp": "2024-05-01T10:00:00Z"},
    "spec": {
        "schedule": "0 3 * * *", "timeZone": "Europe/Berlin", "concurrencyPolicy": "Forbid",
        "jobTemplate": {
            "metadata": {"labels": {"team": "data"}, "annotations": {"example.com/note": "nightly"}},
            "spec": {
                "backoffLimit": 2, "activeDeadlineSeconds": 3600, "ttlSecondsAfterFinished": 600,
                "completionMode": "NonIndexed", "suspend": False,
                "podFailurePolicy": {"rules": [{"action": "FailJob",
                                                "onExitCodes": {"operator": "In", "values": [1, 42]}}]},
                "template": {
                    "metadata": {"labels": {"team": "data"}},
                    "spec": {
                        "restartPolicy": "OnFailure", "serviceAccountName": "batch",
                        "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                        "nodeSelector": {"kubernetes.io/os": "linux"},
                        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 2000,
                                            "supplementalGroups": [3000, 4000],
                                            "seccompProfile": {"type": "RuntimeDefault"}},
                        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
                        "tolerations": [{"key": "batch", "operator": "Exists", "effect": "NoSchedule"},
                                        {"key": "slow", "operator": "Equal", "value": "yes",
                                         "effect": "NoExecute", "tolerationSeconds": 60}],
                        "volumes": [
                            {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                            {"name": "config", "configMap": {"name": "etl", "defaultMode": 420,
                                                             "items": [{"key": "a", "path": "a.conf"}]}},
                            {"name": "creds", "secret": {"secretName": "etl", "optional": True}},
                            {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
                            {"name": "info", "downwardAPI": {"items": [
                                {"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}},
                                {"path": "cpu", "resourceFieldRef": {"containerName": "etl",
                                                                     "resource": "limits.cpu", "divisor": "1m"}}]}},
                        ],
                        "initContainers": [{"name": "wait", "image": "busybox", "command": ["sh", "-c", "true"],
                                            "resources": {}, "terminationMessagePath": "/dev/termination-log",
                                            "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
                        "containers": [{
                            "name": "etl", "image": "example.com/etl:2", "args": ["--all"], "workingDir": "/work",
                            "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                            "envFrom": [{"configMapRef": {"name": "etl"}}, {"prefix": "S_", "secretRef":
                                                                           {"name": "etl", "optional": False}}],
                            "env": [{"name": "MODE", "value": "full"},
                                    {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                               "fieldPath": "metadata.name"}}},
                                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "etl", "key": "t"}}}],
                            "resources": {"limits": {"cpu": "2", "memory": "1Gi"},
                                          "requests": {"cpu": "500m", "memory": "256Mi"}},
                            "volumeMounts": [{"name": "scratch", "mountPath": "/tmp"},
                                             {"name": "data", "mountPath": "/data", "readOnly": True,
                                              "subPath": "in"}],
                            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics",
                                                          "scheme": "HTTP",
                                                          "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
                                              "initialDelaySeconds": 5, "timeoutSeconds": 1, "periodSeconds": 10,
                                              "successThreshold": 1, "failureThreshold": 3},
                            "readinessProbe": {"tcpSocket": {"port": 9090}, "timeoutSeconds": 1, "periodSeconds": 10,
                                               "successThreshold": 1, "failureThreshold": 3},
                            "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 5"]}}},
                            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "FallbackToLogsOnError", "imagePullPolicy": "IfNotPresent",
                        }],
                        "imagePullSecrets": [{"name": "pull"}],
                        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                       "whenUnsatisfiable": "ScheduleAnyway",
                                                       "labelSelector": {"matchLabels": {"team": "data"}}}],
                    },
                },
            },
        },
        "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
    },
    "status": {},
}



def _resources(group_version: str, *kinds: tuple[str, str, bool]) -> dict[str, Any]:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": [
        {"name": plural, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
         "verbs": ["create", "get", "list"]} for plural, kind, namespaced in kinds]}


def _group(name: str) -> dict[str, Any]:
    version = {"groupVersion": f"{name}/v1", "version": "v1"}
    return {"name": name, "versions": [version], "preferredVersion": version}


# Legacy discovery: `--from=cronjob/nightly` resolves the resource with it, `create role` checks its resources,
# `autoscale` checks that its target has a scale subresource.
DISCOVERY: dict[str, dict[str, Any]] = {
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group("apps"), _group("batch")]},
    "/api/v1": _resources("v1", ("pods", "Pod", True), ("nodes", "Node", False)),
    "/apis/apps/v1": _resources("apps/v1", ("deployments", "Deployment", True), ("deployments/scale", "Scale", True)),
    "/apis/apps/v1/namespaces/default/deployments/web": {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}},
    "/apis/batch/v1": _resources("batch/v1", ("cronjobs", "CronJob", True), ("jobs", "Job", True)),
    "/apis/batch/v1/namespaces/default/cronjobs/nightly": NIGHTLY,
}


def _scratch_files(directory: Path) -> None:
    """The files the commands read: fixed content, except a fresh TLS pair (kubectl checks it matches)."""
    (directory / "blob.bin").write_bytes(bytes(range(256)))
    (directory / "app.properties").write_text("color=blue\nsize=10\n")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "site.example.com")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                          serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Just enough of an API server for the generators: it serves the CronJob and the Deployment (and the
    discovery to find them) and records POST bodies."""

    posts: list[tuple[str, str, bytes]]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: kubectl's own error output says enough."""

    def _reply(self, code: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, code: int, reason: str) -> None:
        self._reply(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "reason": reason, "code": code, "message": reason})

    def do_GET(self) -> None:
        found = DISCOVERY.get(self.path.split("?")[0])
        if found is None:
            self._refuse(404, "NotFound")
        else:
            self._reply(200, found)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.posts.append((self.path, self.headers.get("Content-Type", ""), body))
        # Refusing keeps the server trivial; kubectl has sent what we came for.
        self._refuse(403, "Forbidden")


@contextmanager
def recording_server() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    posts: list[tuple[str, str, bytes]] = []
    handler = type("Recorder", (_Recorder,), {"posts": posts})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", posts
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def capture(name: str, server: str, posts: list[tuple[str, str, bytes]], scratch: Path) -> tuple[str, bytes, Any]:
    """Run one generator for real and with ``--dry-run=client -o json``: (resource, POST body, printed JSON)."""
    assert KUBECTL
    args = [a.replace("{dir}", str(scratch)) for a in COMMANDS[name]]
    env = {**os.environ, "KUBECONFIG": str(scratch / "kubeconfig"), "HOME": str(scratch)}
    base = [KUBECTL, f"--server={server}", "--namespace=default"]
    # The real run fails on the recorder's 403 once the body is sent: only the body matters here.
    sent = subprocess.run([*base, *args], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert len(posts) == 1, f"kubectl {name}: expected one POST, got {[p[0] for p in posts]}: {sent.stderr}"
    path, content_type, body = posts.pop()
    assert content_type == "application/vnd.kubernetes.protobuf", (name, content_type)
    separator = args.index("--") if "--" in args else len(args)
    dry = [*args[:separator], "--dry-run=client", "-o", "json", *args[separator:]]
    printed = subprocess.run([*base, *dry], env=env, capture_output=True, text=True, timeout=60, check=True)
    return path.split("?")[0].rsplit("/", 1)[-1], body, json.loads(printed.stdout)


# No fixture for the TLS secret: it would commit a private key, and it decodes like any other Secret.
LIVE_ONLY = {"secret-tls"}
FIXTURE_NAMES = sorted(set(COMMANDS) - LIVE_ONLY)


def load_fixture(name: str) -> tuple[ResourceType, bytes, Any]:
    expected = json.loads((FIXTURES / f"{name}.json").read_text())
    return TYPES[expected["kind"]], (FIXTURES / f"{name}.pb").read_bytes(), expected


def write_fixtures() -> None:
    """Re-capture every fixture with the installed kubectl."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, recording_server() as (server, posts):
        scratch = Path(tmp)
        _scratch_files(scratch)
        for name in FIXTURE_NAMES:
            _, body, printed = capture(name, server, posts, scratch)
            (FIXTURES / f"{name}.pb").write_bytes(body)
            (FIXTURES / f"{name}.json").write_text(json.dumps(printed, indent=2) + "\n")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_decodes_to_kubectl_json(name: str) -> None:
    rt, body, expected = load_fixture(name)
    assert decode_protobuf_body(body, rt) == expected


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[str, list[tuple[str, str, bytes]], Path]]:
    if not KUBECTL:
        pytest.skip("kubectl not installed")
    with tempfile.TemporaryDirectory() as tmp, recording_server() as (server, posts):
        _scratch_files(Path(tmp))
        yield server, posts, Path(tmp)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_live_kubectl_body_decodes_to_its_dry_run_json(
        name: str, live: tuple[str, list[tuple[str, str, bytes]], Path]) -> None:
    resource, body, printed = capture(name, *live)
    rt = BY_PLURAL[resource]
    assert decode_protobuf_body(body, rt) == printed


# --- the tables ----------------------------------------------------------------------------------

def test_every_table_reference_resolves() -> None:
    for key, table in MESSAGES.items():
        for field in table.values():
            kinds = [field.kind.key, field.kind.value] if isinstance(field.kind, MapOf) else [field.kind]
            for kind in kinds:
                assert isinstance(kind, Kind) or kind in MESSAGES, f"{key}.{field.json}: unknown {kind}"
    assert all(root in MESSAGES for root in KINDS.values())


def test_wire_helpers() -> None:
    assert wire.as_double(int.from_bytes(struct.pack("<d", -2.5), "little")) == -2.5
    assert wire.packed(struct.pack("<2q", 1, -1), wire.FIXED64) == [1, (1 << 64) - 1]
    assert (wire.as_int32((1 << 64) - 5), wire.as_int64((1 << 64) - 5)) == (-5, -5)
    assert list(wire.fields(b"\x0d\x01\x00\x00\x00\x11" + bytes(8))) == [(1, wire.FIXED32, 1), (2, wire.FIXED64, 0)]


def test_supports_only_generator_kinds() -> None:
    assert supports(TYPES["Deployment"])
    assert not supports(TYPES["Pod"])


# --- hand-built bodies ---------------------------------------------------------------------------

def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def ld(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return tag(number, 2) + varint(len(data)) + data


def vi(number: int, value: int) -> bytes:
    return tag(number, 0) + varint(value)


def entry(number: int, key: str, value: bytes | str) -> bytes:
    return ld(number, ld(1, key) + ld(2, value))


def envelope(api_version: str, kind: str, raw: bytes, *extra: bytes) -> bytes:
    return b"k8s\x00" + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw) + b"".join(extra)


def meta(name: str, *extra: bytes) -> bytes:
    return ld(1, ld(1, name) + b"".join(extra))


def decode(kind: str, raw: bytes, api_version: str | None = None) -> dict[str, Any]:
    rt = TYPES[kind]
    return decode_protobuf_body(envelope(api_version or rt.api_version, kind, raw), rt)


def failure(kind: str, body: bytes) -> StatusError:
    with pytest.raises(StatusError) as err:
        decode_protobuf_body(body, TYPES[kind])
    return err.value


def test_minimal_objects_get_go_zero_values() -> None:
    assert decode("Namespace", meta("a")) == {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a"},
                                              "spec": {}, "status": {}}
    # No omitempty on rules, roleRef and its members: Go prints null and empty strings.
    assert decode("ClusterRole", meta("c"))["rules"] is None
    assert decode("RoleBinding", meta("b"))["roleRef"] == {"apiGroup": "", "kind": "", "name": ""}
    deployment = decode("Deployment", meta("d"))
    assert deployment["spec"] == {"selector": None, "template": {"metadata": {}, "spec": {"containers": None}},
                                  "strategy": {}}


def test_metadata_fields() -> None:
    owner = ld(13, ld(1, "CronJob") + ld(3, "nightly") + ld(4, "u-1") + ld(5, "batch/v1") + vi(6, 1))
    managed = ld(17, ld(1, "kubectl") + ld(2, "Update") + ld(3, "v1") + ld(4, vi(1, 1_700_000_000))
                 + ld(6, "FieldsV1") + ld(7, ld(1, b'{"f:data":{".":{}}}')))
    raw = meta("cm", ld(2, "gen-"), ld(3, "ns"), ld(5, "uid-1"), ld(6, "7"), vi(7, 3),
               ld(8, vi(1, 1_714_557_600) + vi(2, 999)), ld(9, vi(1, 0)), vi(10, 30),
               entry(11, "b", "2"), entry(11, "a", "1"), entry(12, "note", "x"), owner,
               ld(14, "example.com/f"), ld(14, "example.com/g"), managed)
    assert decode("ConfigMap", raw)["metadata"] == {
        "name": "cm", "generateName": "gen-", "namespace": "ns", "uid": "uid-1", "resourceVersion": "7",
        "generation": 3, "creationTimestamp": "2024-05-01T10:00:00Z", "deletionTimestamp": "1970-01-01T00:00:00Z",
        "deletionGracePeriodSeconds": 30, "labels": {"a": "1", "b": "2"}, "annotations": {"note": "x"},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "u-1",
                             "controller": True}],
        "finalizers": ["example.com/f", "example.com/g"],
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                           "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {".": {}}}}],
    }


def test_configmap_and_secret_bytes_are_base64_and_immutable_kept() -> None:
    cm = decode("ConfigMap", meta("c") + entry(2, "k", "v") + entry(3, "bin", b"\x00\xff") + vi(4, 0))
    assert cm["data"] == {"k": "v"} and cm["binaryData"] == {"bin": "AP8="} and cm["immutable"] is False
    secret = decode("Secret", meta("s") + entry(2, "pw", b"hunter2") + entry(4, "plain", "x") + ld(3, "Opaque"))
    assert secret["data"] == {"pw": "aHVudGVyMg=="} and secret["stringData"] == {"plain": "x"}
    assert secret["type"] == "Opaque"


def test_int_or_string_and_quantities() -> None:
    port = ld(1, ld(1, "http") + vi(3, 80) + ld(4, vi(1, 1) + ld(3, "web")))
    numeric = ld(1, vi(3, 443) + ld(4, vi(2, 8443)))
    service = decode("Service", meta("s") + ld(2, port + numeric))
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["web", 8443]
    quota = decode("ResourceQuota", meta("q") + ld(2, entry(1, "cpu", ld(1, "500m"))))
    assert quota["spec"] == {"hard": {"cpu": "500m"}}
    bad = failure("ResourceQuota", envelope("v1", "ResourceQuota", meta("q") + ld(2, entry(1, "cpu", ld(1, "lots")))))
    assert bad.code == 400 and "spec.hard[cpu]" in bad.message


def test_negative_int32_and_packed_repeated_scalars() -> None:
    pc = decode("PriorityClass", meta("p") + vi(2, -5))
    assert pc["value"] == -5
    # PodSecurityContext.supplementalGroups, once unpacked and once packed.
    security = ld(14, vi(4, 1) + ld(4, varint(2) + varint(3)))
    job = decode("Job", meta("j") + ld(2, ld(6, ld(2, security))))
    assert job["spec"]["template"]["spec"]["securityContext"] == {"supplementalGroups": [1, 2, 3]}


def test_repeated_occurrences_of_a_message_field_merge() -> None:
    body = meta("a") + ld(1, ld(3, "ns")) + ld(1, ld(1, "b"))
    assert decode("ServiceAccount", body)["metadata"] == {"name": "b", "namespace": "ns"}


def test_unsupported_kind_is_415() -> None:
    err = failure("Pod", envelope("v1", "Pod", meta("p")))
    assert err.code == 415 and err.reason == "UnsupportedMediaType"
    assert err.message == ('the protobuf body of kind "Pod" (v1) is not supported by this server; '
                           'send JSON or YAML (kubectl create -f)')


def test_unknown_field_is_415_naming_message_and_number() -> None:
    err = failure("Deployment", envelope("apps/v1", "Deployment", meta("d") + ld(2, ld(3, ld(2, vi(99, 1))))))
    assert err.code == 415
    assert "field 99 in message k8s.io.api.core.v1.PodSpec (at spec.template.spec)" in err.message
    err = failure("ConfigMap", envelope("v1", "ConfigMap", ld(2, ld(1, "k") + vi(3, 1))))
    assert err.code == 415 and "k8s.io.api.core.v1.ConfigMap.DataEntry" in err.message


@pytest.mark.parametrize(("body", "words"), [
    (b"", "empty body"),
    (b"k8s\x00", "empty body"),
    (b'{"kind":"Namespace"}', "does not appear to be a protobuf message"),
    (b"k8s\x00\x12\x05ab", "runs past the end"),
    (b"k8s\x00\x12\x02\x08\xff", "inside a varint"),
    (b"k8s\x00\x12\x02\x08\x80", "inside a varint"),
    (b"k8s\x00\x08" + b"\xff" * 10 + b"\x01", "varint longer than 10 bytes"),
    (b"k8s\x00" + vi(2, 1), "wire type varint, expected length-delimited"),
    (b"k8s\x00\x0f", "unsupported wire type 7"),
    (envelope("v1", "Namespace", ld(1, vi(1, 1))), "metadata: field 1 (name) of k8s.io.apimachinery"),
    (envelope("v1", "ConfigMap", meta("x")), 'the kind in the data ("ConfigMap") does not match'),
    (envelope("v2", "Namespace", meta("x")), "the API version in the data (v2) does not match"),
])
def test_malformed_bodies_are_400(body: bytes, words: str) -> None:
    err = failure("Namespace", body)
    assert (err.code, err.reason) == (400, "BadRequest")
    assert words in err.message


def test_truncated_kubectl_body_is_400() -> None:
    _, body, _ = load_fixture("deployment")
    for cut in (5, len(body) // 2, len(body) - 1):
        assert failure("Deployment", body[:cut]).code == 400


def test_empty_type_meta_takes_the_endpoints_kind() -> None:
    body = b"k8s\x00" + ld(2, meta("x"))
    assert decode_protobuf_body(body, TYPES["Namespace"])["kind"] == "Namespace"


def test_foreign_content_type_or_encoding_is_415() -> None:
    assert failure("Namespace", envelope("v1", "Namespace", meta("x"), ld(3, "gzip"))).code == 415
    assert failure("Namespace", envelope("v1", "Namespace", meta("x"), ld(4, "application/json"))).code == 415


if __name__ == "__main__":
    write_fixtures()
