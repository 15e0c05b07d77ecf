"""The ``kubectl space`` plugin's kubeconfig rewriting, with existence decided by an injected check."""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from apimachinery import durations
from apiserver import spacepaths
from apiserver.server.tls import ensure_pki
from kubeclient import kubeconfig
from spaces import cli
from spaces.cli import PREVIOUS, SpaceUnavailable, current_space, use_space

BASE = "https://127.0.0.1:6443"


def _cfg(server: str = f"{BASE}/clusters/root", ca: bytes = b"CA") -> dict:
    cfg = kubeconfig.build_kubeconfig(server, ca, "tok", "hub")
    cfg["contexts"][0]["context"]["namespace"] = "default"
    return cfg


class FakeHub:
    """Decides existence the way the real check does, and records what was asked (full paths; the spaces
    it is given are read from root: ``team-a`` is ``root:team-a``)."""

    def __init__(self, *existing: str) -> None:
        self.existing = {spacepaths.full_path(name) for name in existing}
        self.asked: list[str] = []

    def __call__(self, name: str) -> None:
        self.asked.append(name)
        if name not in self.existing:
            raise SpaceUnavailable(f'space "{name}" does not exist')


def test_use_rewrites_the_current_cluster_and_remembers_previous() -> None:
    cfg = _cfg()
    hub = FakeHub("team-a")
    assert use_space(cfg, "team-a", hub) == "root:team-a"
    assert hub.asked == ["root:team-a"]
    assert kubeconfig.current_server(cfg) == f"{BASE}/clusters/root:team-a"
    assert cfg["current-context"] == "hub"
    previous = kubeconfig.named(cfg, "clusters", PREVIOUS)["cluster"]
    # The remembered cluster keeps the CA so that `kubectl --context spacehub-previous` works.
    ca_data = cfg["clusters"][0]["cluster"]["certificate-authority-data"]
    assert previous == {"server": f"{BASE}/clusters/root", "certificate-authority-data": ca_data}
    context = kubeconfig.named(cfg, "contexts", PREVIOUS)["context"]
    assert context == {"cluster": PREVIOUS, "user": "hub", "namespace": "default"}
    assert current_space(cfg) == ("root:team-a", f"{BASE}/clusters/root:team-a")


def test_missing_space_leaves_the_kubeconfig_alone() -> None:
    cfg = _cfg()
    before = kubeconfig.dump(cfg)
    with pytest.raises(SpaceUnavailable, match='space "root:nope" does not exist'):
        use_space(cfg, "nope", FakeHub())
    assert kubeconfig.dump(cfg) == before


@pytest.mark.parametrize("target", ["root", ":root", ".."])
def test_root_and_dotdot_need_no_check(target: str) -> None:
    # A server written before spaces nested (/clusters/team-a) is root:team-a, whose parent is root.
    cfg = _cfg(f"{BASE}/clusters/team-a")
    hub = FakeHub()
    assert use_space(cfg, target, hub) == "root"
    assert hub.asked == []
    assert kubeconfig.current_server(cfg) == f"{BASE}/clusters/root"
    assert cli.previous_server(cfg) == f"{BASE}/clusters/team-a"


def test_paths_are_relative_to_the_current_space_unless_absolute() -> None:
    cfg = _cfg()
    hub = FakeHub("org", "org:team", "org:team:sub", "other")
    assert use_space(cfg, "org", hub) == "root:org"
    assert use_space(cfg, "team", hub) == "root:org:team"
    assert kubeconfig.current_server(cfg) == f"{BASE}/clusters/root:org:team"
    assert use_space(cfg, "..", hub) == "root:org"
    assert use_space(cfg, "team:sub", hub) == "root:org:team:sub"
    assert use_space(cfg, ":root:other", hub) == "root:other"
    assert use_space(cfg, "root:org:team", hub) == "root:org:team"
    assert hub.asked == ["root:org", "root:org:team", "root:org", "root:org:team:sub", "root:other",
                         "root:org:team"]
    with pytest.raises(SpaceUnavailable, match='"root:org:team:other" does not exist'):
        use_space(cfg, "other", hub)  # relative: not the other below root


def test_root_has_no_parent() -> None:
    with pytest.raises(SpaceUnavailable, match="the root space has no parent"):
        use_space(_cfg(), "..", FakeHub())


def test_dash_goes_back_and_forth() -> None:
    cfg = _cfg()
    hub = FakeHub("a", "b")
    use_space(cfg, "a", hub)
    use_space(cfg, ":root:b", hub)
    assert use_space(cfg, "-", hub) == "root:a"
    assert kubeconfig.current_server(cfg) == f"{BASE}/clusters/root:a"
    assert use_space(cfg, "-", hub) == "root:b"
    assert use_space(cfg, "..", hub) == "root"
    assert use_space(cfg, "-", hub) == "root:b"
    # Still one remembered entry, not one per switch.
    assert [c["name"] for c in cfg["clusters"]] == ["hub", PREVIOUS]
    assert [c["name"] for c in cfg["contexts"]] == ["hub", PREVIOUS]


def test_dash_checks_the_previous_space_still_exists() -> None:
    cfg = _cfg()
    use_space(cfg, "a", FakeHub("a"))
    use_space(cfg, "root", FakeHub())
    with pytest.raises(SpaceUnavailable, match='"root:a" does not exist'):
        use_space(cfg, "-", FakeHub())


def test_dash_without_previous() -> None:
    with pytest.raises(SpaceUnavailable, match="no previous space"):
        use_space(_cfg(), "-", FakeHub())


def test_dash_refuses_a_previous_space_on_another_hub() -> None:
    cfg = _cfg()
    use_space(cfg, "a", FakeHub("a"))
    cfg["clusters"][0]["cluster"]["server"] = "https://other:6443/clusters/root:x"
    with pytest.raises(SpaceUnavailable, match="another server"):
        use_space(cfg, "-", FakeHub("a"))


def test_same_space_keeps_previous() -> None:
    cfg = _cfg()
    hub = FakeHub("a")
    use_space(cfg, "a", hub)
    use_space(cfg, "root:a", hub)
    assert cli.previous_server(cfg) == f"{BASE}/clusters/root"


@pytest.mark.parametrize("name", ["../x", "A", "a/b", "-a", "", "a_b", "a.b", "a::b", ":x", "root:root"])
def test_invalid_names_never_reach_the_url(name: str) -> None:
    cfg = _cfg()
    hub = FakeHub()
    with pytest.raises(SpaceUnavailable, match="invalid space path"):
        use_space(cfg, name, hub)
    assert hub.asked == []


def test_hub_behind_a_path_prefix() -> None:
    cfg = _cfg("https://h/prefix/clusters/root")
    use_space(cfg, "a", FakeHub("a"))
    assert kubeconfig.current_server(cfg) == "https://h/prefix/clusters/root:a"


def test_current_space_needs_a_space_url() -> None:
    with pytest.raises(SpaceUnavailable, match="not a space URL"):
        current_space(_cfg(BASE))


def test_only_the_current_contexts_cluster_changes() -> None:
    cfg = _cfg()
    cfg["clusters"].append({"name": "kind", "cluster": {"server": "https://kind:6443"}})
    cfg["contexts"].append({"name": "kind", "context": {"cluster": "kind", "user": "hub"}})
    use_space(cfg, "a", FakeHub("a"))
    assert kubeconfig.named(cfg, "clusters", "kind")["cluster"]["server"] == "https://kind:6443"


def test_in_previous_context_switching_is_not_remembered() -> None:
    cfg = _cfg()
    use_space(cfg, "a", FakeHub("a"))
    cfg["current-context"] = PREVIOUS
    use_space(cfg, ":root:b", FakeHub("b"))
    assert kubeconfig.current_server(cfg) == f"{BASE}/clusters/root:b"
    assert kubeconfig.named(cfg, "clusters", "hub")["cluster"]["server"] == f"{BASE}/clusters/root:a"


# --- the command line, with the hub check replaced ----------------------------------------------

@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config"
    # A real CA: the client is built (though never connects) and refuses an unparsable one.
    kubeconfig.save(path, _cfg(ca=ensure_pki(tmp_path / "hub", ["localhost"]).ca_cert_pem))
    monkeypatch.setattr(cli, "remote_check", lambda client: FakeHub("team-a"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return path


def test_main_use_and_current(config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --kubeconfig is accepted after the subcommand, as kubectl users type it.
    assert cli.kubectl_space_main(["use", "team-a", "--kubeconfig", str(config_file)]) == 0
    assert capsys.readouterr().out == 'Current space is "root:team-a".\n'
    assert kubeconfig.current_server(kubeconfig.load(config_file)) == f"{BASE}/clusters/root:team-a"
    assert cli.kubectl_space_main(["--kubeconfig", str(config_file), "current"]) == 0
    assert capsys.readouterr().out == "root:team-a\n"
    assert cli.kubectl_space_main(["--kubeconfig", str(config_file), "current", "-v"]) == 0
    assert capsys.readouterr().out == f"root:team-a {BASE}/clusters/root:team-a\n"


def test_main_reports_a_missing_space(config_file: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(config_file))
    before = config_file.read_bytes()
    assert cli.kubectl_space_main(["use", "nope"]) == 1
    captured = capsys.readouterr()
    assert captured.err == 'error: space "root:nope" does not exist\n'
    assert captured.out == ""
    assert config_file.read_bytes() == before


def test_main_defaults_to_home_kube_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.kubectl_space_main(["current"]) == 1
    assert capsys.readouterr().err == f"error: kubeconfig {tmp_path}/.kube/config does not exist\n"
    kubeconfig.save(tmp_path / ".kube" / "config", _cfg())
    assert cli.kubectl_space_main([]) == 0  # bare `kubectl space` prints where you are
    assert capsys.readouterr().out == "root\n"


def _kubectl() -> Path | None:
    bin_dir = Path(sys.executable).parent
    found = [bin_dir / "kubectl", bin_dir / "kubectl-space"]
    return bin_dir if all(p.exists() for p in found) else None


@pytest.mark.skipif(_kubectl() is None, reason="kubectl or the installed kubectl-space script is missing")
def test_kubectl_finds_the_plugin_and_reads_what_it_writes(config_file: Path, tmp_path: Path) -> None:
    bin_dir = _kubectl()
    assert bin_dir is not None
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "KUBECONFIG": str(config_file), "HOME": str(tmp_path)}
    kubectl = shutil.which("kubectl", path=env["PATH"])
    assert kubectl is not None
    out = subprocess.run([kubectl, "space", "current", "-v"], env=env, capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout == f"root {BASE}/clusters/root\n"

    # Rewrite the way `kubectl space use` does, then let kubectl itself parse the result.
    cfg = kubeconfig.load(config_file)
    use_space(cfg, "team-a", FakeHub("team-a"))
    kubeconfig.save(config_file, cfg)
    view = subprocess.run([kubectl, "config", "view", "-o",
                           "jsonpath={.clusters[*].cluster.server} {.contexts[*].name} {.current-context}"],
                          env=env, capture_output=True, text=True, check=True, timeout=60)
    assert view.stdout == f"{BASE}/clusters/root:team-a {BASE}/clusters/root hub {PREVIOUS} hub"


# --- printing shared with `spacehub space list` ---------------------------------------------------

def test_space_table_and_names() -> None:
    now = dt.datetime.now(dt.UTC)
    created = (now - dt.timedelta(minutes=5, seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    spaces = {"kind": "SpaceList", "items": [
        {"metadata": {"name": "zeta", "creationTimestamp": created}, "status": {"phase": "Ready"}},
        {"metadata": {"name": "alpha", "creationTimestamp": created}, "status": {"phase": "Terminating"}},
    ]}
    out = io.StringIO()
    cli.print_spaces(spaces, None, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "AGE"]
    assert lines[1].split()[:2] == ["alpha", "Terminating"]
    assert lines[2].split()[:2] == ["zeta", "Ready"]
    assert lines[1].split()[2] in {"5m3s", "5m4s"}
    assert lines[0].index("PHASE") == lines[1].index("Terminating") == len("alpha") + 3
    out = io.StringIO()
    cli.print_spaces(spaces, "name", out)
    assert out.getvalue() == "space.spacehub.io/alpha\nspace.spacehub.io/zeta\n"


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (119, "119s"), (120, "2m"), (150, "2m30s"), (600, "10m"), (3 * 3600, "3h"),
    (3 * 3600 + 60 * 5, "3h5m"), (8 * 3600, "8h"), (50 * 3600, "2d2h"), (10 * 86400, "10d"),
    (800 * 86400, "2y70d"), (9 * 365 * 86400, "9y"),
])
def test_human_duration_matches_kubectl(seconds: int, text: str) -> None:
    assert durations.human_duration(dt.timedelta(seconds=seconds).total_seconds()) == text
