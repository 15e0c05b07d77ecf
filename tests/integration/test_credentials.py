"""Syncer credentials over their life: rotated with a grace period (through the CLI, and across hub processes on
PostgreSQL), and never written where others can read them or into the hub's log."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.harness import Hub, hub_processes, wait_for

GRACE_SECONDS = 3


def heartbeat(hub: Hub, target: str, token: str) -> int:
    r = httpx.post(f"{hub.base_url}/syncer/v1/targets/{target}/heartbeat", json={"syncerVersion": "test"},
                   headers={"Authorization": f"Bearer {token}"}, verify=hub.ssl_context(), timeout=10)
    return r.status_code


def private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def test_a_rotated_credential_works_and_the_old_one_stops_after_the_grace_period(fresh_hub: Hub,
                                                                                 tmp_path: Path) -> None:
    hub = fresh_hub
    first_file, second_file = tmp_path / "edge1.yaml", tmp_path / "edge1-rotated.yaml"
    hub.spacehub("cluster", "register", "edge1", "--label", "env=prod", "--bootstrap-out", str(first_file))
    first = yaml.safe_load(first_file.read_text())["token"]
    assert heartbeat(hub, "edge1", first) == 200

    out = hub.spacehub("cluster", "rotate-credentials", "edge1", "--grace", str(GRACE_SECONDS),
                       "--bootstrap-out", str(second_file))
    assert "given a new credential" in out.stdout
    second = yaml.safe_load(second_file.read_text())["token"]
    assert second != first and private(first_file) and private(second_file)
    assert heartbeat(hub, "edge1", second) == 200
    assert heartbeat(hub, "edge1", first) == 200  # still within the grace period
    wait_for(lambda: heartbeat(hub, "edge1", first) == 401, timeout=GRACE_SECONDS + 20,
             message="the old credential refused after the grace period")
    assert heartbeat(hub, "edge1", second) == 200

    refused = hub.spacehub("cluster", "rotate-credentials", "no-such-cluster", check=False)
    assert refused.returncode == 1 and "not found" in refused.stderr

    # No credential in the hub's log, and its own secrets readable by its user only.
    log = hub.log_path.read_text()
    for token in (first, second, hub.token):
        assert token not in log
    for path in (hub.data_dir / "admin.token", hub.data_dir / "admin.kubeconfig",
                 hub.data_dir / "pki" / "ca.key", hub.data_dir / "pki" / "serving.key"):
        assert private(path), path


@pytest.fixture
def two_hubs(pg_url: str, tmp_path: Path) -> Iterator[list[Hub]]:
    with hub_processes(pg_url, tmp_path, 2) as started:
        yield started


@pytest.mark.postgres
def test_a_rotation_through_one_hub_process_expires_the_old_credential_in_the_others(two_hubs: list[Hub]) -> None:
    one, other = two_hubs
    with one.client() as c:
        r = c.post("/placement/v1/clusters", json={"name": "edge2", "labels": {}})
        assert r.status_code == 201, r.text
        first = r.json()["bootstrap"]["token"]
        # The other process learns of the cluster from the shared log, a moment after the first answered; then it
        # has the credential cached.
        wait_for(lambda: heartbeat(other, "edge2", first) == 200, timeout=20,
                 message="the other process accepting the new cluster's credential")
        r = c.post("/placement/v1/clusters/edge2:rotate-credentials", json={"graceSeconds": GRACE_SECONDS})
        assert r.status_code == 200, r.text
        second = r.json()["bootstrap"]["token"]
    wait_for(lambda: heartbeat(other, "edge2", first) == 401, timeout=GRACE_SECONDS + 20,
             message="the other process refusing the old credential")
    assert heartbeat(other, "edge2", second) == 200
