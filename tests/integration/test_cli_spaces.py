"""``spacehub space …`` and ``kubectl space …`` as real subprocesses against a running hub.

Needs the ``hub`` fixture from ``tests/conftest.py`` (an object with ``kubeconfig``, ``base_url``,
``data_dir`` and ``env``); every test here is skipped while that fixture does not exist.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
BIN = VENV_BIN if (VENV_BIN / "spacehub").exists() else Path(sys.executable).parent


@dataclass
class Tools:
    """Runs the CLIs with a private copy of the hub's kubeconfig, which ``kubectl space`` rewrites."""

    kubeconfig: Path
    base_url: str
    env: dict[str, str]

    def run(self, *argv: str, ok: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=120,
                                input=stdin)
        if ok:
            assert result.returncode == 0, f"{argv} failed ({result.returncode}): {result.stderr}"
        return result

    def spacehub(self, *argv: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(BIN / "spacehub"), *argv, ok=ok)

    def kubectl(self, *argv: str, ok: bool = True,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        kubectl = shutil.which("kubectl", path=self.env["PATH"])
        assert kubectl is not None
        return self.run(kubectl, *argv, ok=ok, stdin=stdin)

    def wait_ready(self, name: str, timeout: float = 30) -> None:
        """Spaces start Pending; a controller marks them Ready shortly after creation."""
        deadline = time.monotonic() + timeout
        phase = None
        while time.monotonic() < deadline:
            listing = json.loads(self.spacehub("space", "list", "-o", "json").stdout)
            phase = next((item.get("status", {}).get("phase") for item in listing["items"]
                          if item["metadata"]["name"] == name), None)
            if phase == "Ready":
                return
            time.sleep(0.2)
        raise AssertionError(f"space {name} is still {phase!r} after {timeout}s")

    def server(self) -> str:
        view = self.kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
        return view.stdout


@pytest.fixture
def tools(request: pytest.FixtureRequest, tmp_path: Path) -> Tools:
    return tools_for(request, tmp_path)


def tools_for(request: pytest.FixtureRequest, tmp_path: Path) -> Tools:
    """Tools with a private copy of the ``hub`` fixture's kubeconfig (skips the test without that fixture)."""
    try:
        hub: Any = request.getfixturevalue("hub")
    except pytest.FixtureLookupError:
        pytest.skip("no `hub` fixture (tests/conftest.py) to run a hub against")
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copyfile(hub.kubeconfig, kubeconfig)
    kubeconfig.chmod(0o600)
    env = {**os.environ, **hub.env}
    env.update({
        # kubectl finds `kubectl-space` on PATH, and the venv's kubectl comes first.
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        "KUBECONFIG": str(kubeconfig),
        # A private HOME keeps kubectl's discovery cache and ~/.kube/config out of the picture.
        "HOME": str(tmp_path / "home"),
    })
    return Tools(kubeconfig=kubeconfig, base_url=hub.base_url.rstrip("/"), env=env)


_NAMESPACED_CONFIGMAP = """\
apiVersion: v1
kind: Namespace
metadata:
  name: it
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: only-here
  namespace: it
data:
  k: v
"""


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _space_names(listing: str) -> list[str]:
    return [line.split()[0] for line in listing.splitlines()[1:] if line.strip()]


def test_spacehub_space_lifecycle(tools: Tools, tmp_path: Path) -> None:
    name = _name("it")
    created = tools.spacehub("space", "create", name)
    assert created.stdout == f"space.spacehub.io/{name} created\n"

    again = tools.spacehub("space", "create", name, ok=False)
    assert again.returncode == 1
    assert again.stderr.startswith("Error from server (AlreadyExists): ")
    assert "Traceback" not in again.stderr

    tools.wait_ready(name)
    table = tools.spacehub("space", "list").stdout
    assert table.splitlines()[0].split() == ["NAME", "PHASE", "AGE"]
    row = next(line.split() for line in table.splitlines()[1:] if line.split()[0] == name)
    assert row[1] == "Ready"

    assert f"space.spacehub.io/{name}" in tools.spacehub("space", "list", "-o", "name").stdout.splitlines()
    as_json = json.loads(tools.spacehub("space", "list", "-o", "json").stdout)
    assert name in [item["metadata"]["name"] for item in as_json["items"]]
    as_yaml = yaml.safe_load(tools.spacehub("space", "list", "-o", "yaml").stdout)
    assert name in [item["metadata"]["name"] for item in as_yaml["items"]]

    # The printed kubeconfig reaches the space with the same CA and token, using plain kubectl.
    printed = tools.spacehub("space", "kubeconfig", name).stdout
    cfg = yaml.safe_load(printed)
    assert cfg["clusters"][0]["cluster"]["server"] == f"{tools.base_url}/clusters/root:{name}"
    space_kubeconfig = tmp_path / "space.kubeconfig"
    space_kubeconfig.write_text(printed)
    tools.kubectl("--kubeconfig", str(space_kubeconfig), "get", "configmaps")

    missing = tools.spacehub("space", "kubeconfig", _name("missing"), ok=False)
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr
    assert missing.stdout == ""

    deleted = tools.spacehub("space", "delete", name, "--wait")
    assert deleted.stdout.startswith(f'space.spacehub.io "{name}" deleted')
    assert name not in _space_names(tools.spacehub("space", "list").stdout)

    gone = tools.spacehub("space", "delete", name, ok=False)
    assert gone.returncode == 1
    assert gone.stderr.startswith("Error from server (NotFound): ")


def test_kubectl_space_plugin(tools: Tools) -> None:
    first, second = _name("use"), _name("enter")
    tools.spacehub("space", "create", first)
    try:
        tools.wait_ready(first)
        assert tools.kubectl("space", "current").stdout == "root\n"

        used = tools.kubectl("space", "use", first)
        assert used.stdout == f'Current space is "root:{first}".\n'
        assert tools.kubectl("space", "current").stdout == f"root:{first}\n"
        assert tools.kubectl("space", "current", "-v").stdout == \
            f"root:{first} {tools.base_url}/clusters/root:{first}\n"
        assert tools.server() == f"{tools.base_url}/clusters/root:{first}"

        # Plain kubectl now talks to the space, and what it creates there stays there. Objects go in
        # through -f (JSON bodies): generator subcommands such as `kubectl create namespace` send
        # protobuf, and validation is off because OpenAPI is not what this test is about.
        tools.kubectl("get", "configmaps")
        tools.kubectl("create", "--validate=false", "-f", "-", stdin=_NAMESPACED_CONFIGMAP)
        got = tools.kubectl("-n", "it", "get", "configmap", "only-here", "-o", "jsonpath={.data.k}")
        assert got.stdout == "v"

        assert tools.kubectl("space", "use", "..").stdout == 'Current space is "root".\n'
        assert tools.server() == f"{tools.base_url}/clusters/root"
        elsewhere = tools.kubectl("-n", "it", "get", "configmap", "only-here", ok=False)
        assert elsewhere.returncode != 0

        assert tools.kubectl("space", "use", "-").stdout == f'Current space is "root:{first}".\n'
        assert tools.kubectl("space", "use", "root").stdout == 'Current space is "root".\n'

        missing = _name("missing")
        failed = tools.kubectl("space", "use", missing, ok=False)
        assert failed.returncode == 1
        assert f'error: space "root:{missing}" does not exist' in failed.stderr
        assert tools.kubectl("space", "current").stdout == "root\n"

        listing = tools.kubectl("space", "list").stdout
        assert listing.splitlines()[0].split() == ["NAME", "PHASE", "AGE"]
        assert first in _space_names(listing)

        entered = tools.kubectl("space", "create", second, "--enter")
        assert entered.stdout == f'space.spacehub.io/{second} created\nCurrent space is "root:{second}".\n'
        assert tools.kubectl("space", "current").stdout == f"root:{second}\n"
        tools.kubectl("get", "configmaps")
        assert second in _space_names(tools.kubectl("space", "list", "..").stdout)
        # `spacehub` finds the hub from a kubeconfig that is inside a space, too.
        assert second in _space_names(tools.spacehub("space", "list").stdout)
    finally:
        for name in (first, second):
            tools.spacehub("space", "delete", name, "--wait", ok=False)


def test_a_deleted_current_space_says_how_to_leave_it(tools: Tools) -> None:
    name = _name("gone")
    tools.spacehub("space", "create", name)
    tools.wait_ready(name)
    tools.kubectl("space", "use", name)
    tools.spacehub("space", "delete", name, "--wait")
    gone = f"the current space \"root:{name}\" no longer exists; run 'kubectl space use root'"

    for argv in (("space", "current"), ("space",)):  # a bare `kubectl space` is `current`
        current = tools.kubectl(*argv, ok=False)
        assert (current.returncode, current.stdout, current.stderr) == (1, "", f"error: {gone}\n")
    # Listing still works (it is how one finds where to go) and says the same on stderr.
    listing = tools.kubectl("space", "list")
    assert listing.stdout.splitlines()[0].split() == ["NAME", "PHASE", "AGE"]
    assert name not in _space_names(listing.stdout)
    assert listing.stderr == f"Warning: {gone}\n"
    # Going back into it is refused like any missing space.
    again = tools.kubectl("space", "use", f":root:{name}", ok=False)
    assert (again.returncode, again.stderr) == (1, f'error: space "root:{name}" does not exist\n')

    assert tools.kubectl("space", "use", "root").stdout == 'Current space is "root".\n'
    assert tools.kubectl("space", "current").stdout == "root\n"
    assert tools.kubectl("space", "list").stderr == ""
    tools.kubectl("get", "namespaces")
    # `..` leaves a deleted space too, and `-` does not lead back into it.
    tools.kubectl("space", "create", name, "--enter")
    tools.spacehub("space", "delete", name, "--wait")
    assert tools.kubectl("space", "use", "..").stdout == 'Current space is "root".\n'
    back = tools.kubectl("space", "use", "-", ok=False)
    assert (back.returncode, back.stderr) == (1, f'error: space "root:{name}" does not exist\n')


def test_use_with_several_files_in_kubeconfig_writes_where_kubectl_would(tools: Tools, tmp_path: Path) -> None:
    """KUBECONFIG=a:b, a holding only preferences and b the hub's context, with its CA as a file next to it."""
    prefs = tmp_path / "prefs" / "config"
    prefs.parent.mkdir()
    prefs.write_text("apiVersion: v1\nkind: Config\npreferences: {}\n")
    hub_dir = tmp_path / "hub"
    hub_dir.mkdir()
    cfg = yaml.safe_load(tools.kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    (hub_dir / "ca.crt").write_bytes(base64.b64decode(cluster.pop("certificate-authority-data")))
    cluster["certificate-authority"] = "ca.crt"  # relative: kubectl resolves it against b's directory
    admin = hub_dir / "config"
    admin.write_text(yaml.safe_dump(cfg, sort_keys=False))
    env = {**tools.env, "KUBECONFIG": f"{prefs}{os.pathsep}{admin}"}
    merged = Tools(kubeconfig=admin, base_url=tools.base_url, env=env)

    name, namespace = _name("multi"), _name("only-in")
    merged.spacehub("space", "create", name)  # `spacehub` merges the same way
    merged.wait_ready(name)
    merged.kubectl("--server", f"{tools.base_url}/clusters/{name}", "create", "--validate=false", "-f", "-",
                   stdin=f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {namespace}}}\n")
    try:
        assert merged.kubectl("space", "use", name).stdout == f'Current space is "root:{name}".\n'
        assert prefs.read_text() == "apiVersion: v1\nkind: Config\npreferences: {}\n"
        written = yaml.safe_load(admin.read_text())
        servers = {c["name"]: c["cluster"] for c in written["clusters"]}
        assert servers["spacehub"] == {"server": f"{tools.base_url}/clusters/root:{name}",
                                       "certificate-authority": "ca.crt"}
        assert servers["spacehub-previous"]["server"] == f"{tools.base_url}/clusters/root"
        assert written["current-context"] == "spacehub"

        # kubectl itself, merging a and b, now talks to the space.
        assert f"namespace/{namespace}" in merged.kubectl("get", "namespaces", "-o", "name").stdout.split()
        assert merged.server() == f"{tools.base_url}/clusters/root:{name}"
        assert merged.kubectl("space", "current").stdout == f"root:{name}\n"
        assert merged.kubectl("space", "use", "-").stdout == 'Current space is "root".\n'
        assert f"namespace/{namespace}" not in merged.kubectl("get", "namespaces", "-o", "name").stdout.split()
        assert prefs.read_text() == "apiVersion: v1\nkind: Config\npreferences: {}\n"
    finally:
        merged.spacehub("space", "delete", name, "--wait", ok=False)
