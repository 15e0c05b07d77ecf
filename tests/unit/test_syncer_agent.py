"""The syncer agent's pure parts: bootstrap parsing, ownership marks, drift fingerprints, capacity sums,
state persistence, fleet labels, and the CLI's refusal of bad input."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
import yaml

from sim.fleet import FleetError, cluster_labels
from syncer.bootstrap import Bootstrap, BootstrapError
from syncer.held import Held, fingerprint, ident_of, is_ours, marked, source_of
from syncer.reporting import node_capacity
from syncer.state import Position, StateStore
from tests.harness import BIN

BOOT = {"apiVersion": "spacehub.io/v1alpha1", "kind": "SyncerBootstrap", "hub": "https://hub:6443/",
        "syncTarget": "florin", "token": "st-abc", "certificateAuthorityData": None}


def test_bootstrap_reads_what_cluster_register_writes_and_names_what_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump({**BOOT, "certificateAuthorityData": base64.b64encode(b"PEM").decode()}))
    boot = Bootstrap.load(path)
    assert (boot.hub, boot.sync_target, boot.token, boot.ca_pem) == ("https://hub:6443", "florin", "st-abc", b"PEM")
    assert boot.with_hub("https://lb:443/").hub == "https://lb:443"
    with pytest.raises(BootstrapError, match="missing token"):
        Bootstrap.from_dict({**BOOT, "token": ""}, "x")
    with pytest.raises(BootstrapError, match="not a SyncerBootstrap"):
        Bootstrap.from_dict({"kind": "Config"}, "x")
    with pytest.raises(BootstrapError, match="not base64"):
        Bootstrap.from_dict({**BOOT, "certificateAuthorityData": "%%%"}, "x")
    with pytest.raises(BootstrapError, match="cannot read"):
        Bootstrap.load(tmp_path / "absent.yaml")


def test_marks_and_identity() -> None:
    entry = {"space": "a", "group": "apps", "resource": "deployments", "namespace": "ns", "name": "web"}
    assert ident_of(entry) == "apps/deployments/ns/web"
    assert source_of(entry) != source_of({**entry, "space": "b"})
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"app": "x"}}}
    mine = marked(obj, "florin", "a")
    assert obj["metadata"]["labels"] == {"app": "x"}  # not changed in place
    assert is_ours(mine, "florin") and not is_ours(mine, "guilder") and not is_ours(obj, "florin")


def test_fingerprint_sees_changes_to_applied_fields_only() -> None:
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": "1"}},
               "data": {"k": "v"}}
    live = {**applied, "metadata": {"name": "x", "labels": {"a": "1"}, "resourceVersion": "5", "uid": "u",
                                    "annotations": {"other": "y"}}, "data": {"k": "v"}}
    base = fingerprint(applied, live)
    assert fingerprint(applied, {**live, "metadata": {**live["metadata"], "resourceVersion": "9"}}) == base
    assert fingerprint(applied, {**live, "data": {"k": "v", "extra": "ok"}}) == base  # not a field we set
    assert fingerprint(applied, {**live, "data": {"k": "changed"}}) != base
    assert fingerprint(applied, {**live, "metadata": {**live["metadata"], "labels": {}}}) != base


def test_node_capacity_sums_quantities() -> None:
    nodes = [{"status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                         "allocatable": {"cpu": "7500m", "memory": "30Gi"}}},
             {"status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                         "allocatable": {"cpu": "8", "memory": "bogus"}}}]
    sums = node_capacity(nodes)
    assert sums["capacity"] == {"cpu": "16", "memory": str(64 * 2**30), "pods": "220"}
    assert sums["allocatable"] == {"cpu": "15500m", "memory": str(30 * 2**30)}
    assert node_capacity([]) == {}


def test_state_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = StateStore(path)
    held = Held(ident="/configmaps/app/x", entry={"space": "a", "resource": "configmaps", "name": "x"},
                applied={"kind": "ConfigMap"}, desired_hash="h", sources={"a|/configmaps/app/x"}, live_fp="f",
                applied_rv=7, error="boom", deleting=True)
    store.put("florin", held.ident, held.record())
    store.set_position("florin", Position(42, "e1"))
    store.put("guilder", "other", held.record())
    store.close()
    again = StateStore(path)
    assert again.position("florin") == Position(42, "e1") and again.position("nobody") == Position()
    back = Held.from_record(held.ident, again.held("florin")[held.ident])
    assert back.record() == held.record()
    again.remove("florin", held.ident)
    assert again.held("florin") == {} and list(again.held("guilder")) == ["other"]


def test_fleet_labels_for_all_or_one_cluster() -> None:
    labels = cluster_labels(["env=prod", "wec2:tier=gold", "wec2:env=dev"], ["wec1", "wec2"])
    assert labels == {"wec1": {"env": "prod"}, "wec2": {"env": "dev", "tier": "gold"}}
    with pytest.raises(FleetError, match="no cluster 'wec9'"):
        cluster_labels(["wec9:a=b"], ["wec1"])
    with pytest.raises(FleetError, match="KEY=VALUE"):
        cluster_labels(["novalue"], ["wec1"])


def test_syncer_run_refuses_a_bad_bootstrap_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Config\n")
    proc = subprocess.run([str(BIN / "spacehub"), "syncer", "run", "--bootstrap", str(bad)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "not a SyncerBootstrap" in proc.stderr and "Traceback" not in proc.stderr
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(BOOT))
    proc = subprocess.run([str(BIN / "spacehub"), "syncer", "run", "--bootstrap", str(good), "--kubeconfig",
                           str(tmp_path / "none")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "does not exist" in proc.stderr
