"""Several kubeconfig files in ``$KUBECONFIG``: read merged and written back as kubectl does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeclient import kubeconfig
from kubeclient.kubeconfig import KubeconfigError, load_merged
from spaces.cli import PREVIOUS, use_space

HUB = "https://h:6443"


def _write(path: Path, cfg: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _cluster(name: str, server: str, **fields: str) -> dict[str, Any]:
    return {"name": name, "cluster": {"server": server, **fields}}


def _context(name: str, cluster: str, user: str = "u") -> dict[str, Any]:
    return {"name": name, "context": {"cluster": cluster, "user": user}}


def _exists(name: str) -> None:
    """Every space exists here; what is written is the question, not the hub."""


def test_first_file_wins_per_name_and_for_current_context(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", {"clusters": [_cluster("hub", "https://a/clusters/root")],
                                "contexts": [_context("ctx", "hub")]})
    b = _write(tmp_path / "b", {"current-context": "ctx",
                                "clusters": [_cluster("hub", "https://b/clusters/root"),
                                             _cluster("other", "https://other")],
                                "contexts": [_context("ctx", "other")],
                                "users": [{"name": "u", "user": {"token": "t"}}]})
    c = _write(tmp_path / "c", {"current-context": "elsewhere"})
    merged = load_merged([tmp_path / "missing", a, b, c])  # a missing file is skipped, as by kubectl
    assert list(merged.files) == [a, b, c]
    assert merged.view["current-context"] == "ctx"  # the first file that sets one
    assert kubeconfig.current_server(merged.view) == "https://a/clusters/root"  # a's ctx and a's hub
    assert merged.origins[("clusters", "hub")] == a and merged.origins[("users", "u")] == b
    assert merged.access().token == "t"


def test_file_references_resolve_against_their_own_file(tmp_path: Path) -> None:
    (tmp_path / "b" / "certs").mkdir(parents=True)
    (tmp_path / "b" / "certs" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "token").write_text("secret\n")
    a = _write(tmp_path / "a" / "config", {"users": [{"name": "u", "user": {"tokenFile": "token"}}]})
    b = _write(tmp_path / "b" / "config", {
        "current-context": "ctx", "contexts": [_context("ctx", "hub")],
        "clusters": [_cluster("hub", f"{HUB}/clusters/root", **{"certificate-authority": "certs/ca.crt"})]})
    acc = load_merged([a, b]).access()
    assert (acc.ca_pem, acc.token) == (b"CA", "secret")


def test_no_file_or_a_lone_missing_one_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="none of the kubeconfig files in KUBECONFIG exist"):
        load_merged([tmp_path / "x", tmp_path / "y"])
    with pytest.raises(KubeconfigError, match=r"kubeconfig .*/x does not exist"):
        load_merged([tmp_path / "x"])


def test_kubeconfig_paths_follow_kubectls_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/a::{tmp_path}/b:{tmp_path}/a")
    assert kubeconfig.kubeconfig_paths(None) == [tmp_path / "a", tmp_path / "b"]  # empty and repeated dropped
    assert kubeconfig.kubeconfig_paths("explicit") == [Path("explicit")]  # --kubeconfig: no merging
    monkeypatch.delenv("KUBECONFIG")
    assert kubeconfig.kubeconfig_paths(None, default=tmp_path / "d") == [tmp_path / "d"]


def test_use_writes_the_server_to_the_file_defining_the_cluster(tmp_path: Path) -> None:
    prefs_text = "apiVersion: v1\nkind: Config\npreferences: {colors: true}\n"
    prefs = tmp_path / "prefs"
    prefs.write_text(prefs_text)
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "ca.crt").write_bytes(b"CA")
    admin = _write(tmp_path / "hub" / "config", {
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [_cluster("hub", f"{HUB}/clusters/root", **{"certificate-authority": "ca.crt"})],
        "contexts": [_context("ctx", "hub")], "users": [{"name": "u", "user": {"token": "t"}}]})
    merged = load_merged([prefs, admin])
    use_space(merged.view, "team-a", _exists)
    assert merged.save() == [admin]
    assert prefs.read_text() == prefs_text
    written = yaml.safe_load(admin.read_text())
    # Only the server changed; the CA stays a path relative to the file, and the remembered copy sits beside it.
    assert written["clusters"] == [
        _cluster("hub", f"{HUB}/clusters/root:team-a", **{"certificate-authority": "ca.crt"}),
        _cluster(PREVIOUS, f"{HUB}/clusters/root", **{"certificate-authority": "ca.crt"})]
    assert written["contexts"] == [_context("ctx", "hub"), _context(PREVIOUS, PREVIOUS)]
    assert written["current-context"] == "ctx"

    # Read again, it is where kubectl goes; going back changes the two clusters in that file only.
    again = load_merged([prefs, admin])
    assert kubeconfig.current_server(again.view) == f"{HUB}/clusters/root:team-a"
    assert use_space(again.view, "-", _exists) == "root"
    assert again.save() == [admin]
    assert kubeconfig.current_server(kubeconfig.load(admin)) == f"{HUB}/clusters/root"
    assert prefs.read_text() == prefs_text


def test_a_shadowed_entry_is_left_alone_and_each_stanza_goes_to_its_own_file(tmp_path: Path) -> None:
    # The context is in a, its cluster in b; c also defines "hub", but b's comes first.
    a = _write(tmp_path / "a", {"current-context": "ctx", "contexts": [_context("ctx", "hub")]})
    b = _write(tmp_path / "b", {"clusters": [_cluster("hub", f"{HUB}/clusters/root")],
                                "users": [{"name": "u", "user": {"token": "t"}}]})
    c_text = yaml.safe_dump({"clusters": [_cluster("hub", "https://shadowed/clusters/root")]})
    c = tmp_path / "c"
    c.write_text(c_text)
    merged = load_merged([a, b, c])
    use_space(merged.view, "x", _exists)
    assert set(merged.save()) == {a, b}
    assert c.read_text() == c_text
    assert [ctx["name"] for ctx in kubeconfig.load(a)["contexts"]] == ["ctx", PREVIOUS]
    assert [cl["name"] for cl in kubeconfig.load(b)["clusters"]] == ["hub", PREVIOUS]
    assert kubeconfig.current_server(load_merged([a, b, c]).view) == f"{HUB}/clusters/root:x"


def test_nothing_changed_writes_nothing(tmp_path: Path) -> None:
    only = _write(tmp_path / "config", kubeconfig.build_kubeconfig(f"{HUB}/clusters/root", b"CA", "t", "hub"))
    before = only.stat().st_mtime_ns
    merged = load_merged([only])
    assert use_space(merged.view, "root", _exists) == "root"
    assert merged.save() == []
    assert only.stat().st_mtime_ns == before
