"""The placement REST API and its CLI against a real hub: the OpenAPI document as the contract, fuzzed
with schemathesis, and ``spacehub cluster …`` / ``spacehub placement explain`` as real subprocesses."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import requests
import schemathesis
import yaml

from tests.harness import Hub, wait_for
from tests.openapi_fuzz import fuzz_operations

API = "/placement/v1"


def cluster_names(hub: Hub) -> set[str]:
    with hub.client() as c:
        r = c.get(f"{API}/clusters")
        assert r.status_code == 200, r.text
        return {item["name"] for item in r.json()["items"]}


def delete_clusters(hub: Hub, names: set[str]) -> None:
    with hub.client() as c:
        for name in names:
            c.delete(f"{API}/clusters/{name}")


def test_every_endpoint_of_the_hub_conforms_to_the_served_openapi_document(hub: Hub) -> None:
    auth = {"Authorization": f"Bearer {hub.token}"}
    before = cluster_names(hub)
    # Loaded from its URL, so the base URL of every call comes from the document's own `servers` entry.
    schema = schemathesis.openapi.from_url(f"{hub.base_url}{API}/openapi.json", headers=auth,
                                           verify=str(hub.ca_file), timeout=30)
    assert schema.get_base_url() == f"{hub.base_url}{API}"
    session = requests.Session()

    def call(case: Any) -> None:
        # The hub's CA; the token goes per call (not in the session) so that the auth checks can drop it.
        case.call_and_validate(session=session, headers=auth, verify=str(hub.ca_file), timeout=30)

    try:
        failures, operations = fuzz_operations(schema, call, max_examples=25)
    finally:
        delete_clusters(hub, cluster_names(hub) - before)  # clusters the fuzzer registered
        session.close()
    assert operations == 25  # 16, the staged rollout's six and scheduling's three
    assert not failures, "\n\n".join(failures)


def test_cluster_register_list_and_delete_through_the_cli(hub: Hub, tmp_path: Path) -> None:
    try:
        registered = hub.spacehub("cluster", "register", "cli-florin", "--label", "env=prod")
        bootstrap = yaml.safe_load(registered.stdout)
        assert isinstance(bootstrap, dict) and bootstrap, registered.stdout
        assert 'cluster "cli-florin" registered' in registered.stderr

        listed = hub.spacehub("cluster", "list").stdout.splitlines()
        assert listed[0].split() == ["NAME", "LABELS", "READY", "LAST-HEARTBEAT"]
        row = next(line.split() for line in listed[1:] if line.split()[0] == "cli-florin")
        assert row == ["cli-florin", "env=prod,id=cli-florin", "Unknown", "<never>"]

        again = hub.spacehub("cluster", "register", "cli-florin", check=False)
        assert again.returncode == 1 and "AlreadyExists" in again.stderr

        out = tmp_path / "cli-guilder-bootstrap.yaml"
        hub.spacehub("cluster", "register", "cli-guilder", "--label", "env=dev", "--bootstrap-out", str(out))
        assert yaml.safe_load(out.read_text()) and stat.S_IMODE(out.stat().st_mode) == 0o600
    finally:
        for name in ("cli-florin", "cli-guilder"):
            hub.spacehub("cluster", "delete", name, check=False)
    assert {"cli-florin", "cli-guilder"}.isdisjoint(cluster_names(hub))
    gone = hub.spacehub("cluster", "delete", "cli-florin", check=False)
    assert gone.returncode == 1 and "NotFound" in gone.stderr


def test_explain_of_a_placement_that_matches_nothing_prints_the_reasons(hub: Hub, space: str,
                                                                        tmp_path: Path) -> None:
    hub.spacehub("cluster", "register", "explain-prod", "--label", "env=prod", "--bootstrap-out",
                 str(tmp_path / "bootstrap.yaml"))
    try:
        hub.kubectl("create", "configmap", "httpd-htdocs", "-n", "default", "--from-literal=index=hi", space=space)
        spec = {"locationSelectors": [{"matchLabels": {"env": "mars"}}],
                "downsync": [{"apiGroup": "", "resources": ["secrets"], "namespaces": ["default"]}]}
        placement = {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement",
                     "metadata": {"name": "nowhere"}, "spec": spec}
        file = tmp_path / "placement.yaml"
        file.write_text(yaml.safe_dump(placement))

        def sees_the_configmap() -> bool:
            with hub.client() as c:
                r = c.post(f"{API}/spaces/{space}/placements:explain", json=spec)
            names = " ".join(m["name"] for m in r.json().get("objectMismatches") or [])
            return r.status_code == 200 and "httpd-htdocs" in names

        wait_for(sees_the_configmap, timeout=20, message="the placement engine to see the ConfigMap")

        out = hub.spacehub("placement", "explain", "-f", str(file), "--space", space).stdout
        assert f'EdgePlacement "nowhere" in space "{space}"' in out
        assert "DESTINATIONS: none" in out
        assert "SELECTED OBJECTS: none" in out
        location_rows = _section(out, "LOCATIONS NOT MATCHED")
        row = next(line for line in location_rows if line.startswith("explain-prod "))
        assert "locationSelectors[0]" in row and "env" in row
        object_rows = _section(out, "OBJECTS NOT MATCHED")
        row = next(line for line in object_rows if "httpd-htdocs" in line)
        assert "downsync[0].resources" in row

        as_json = yaml.safe_load(hub.spacehub("placement", "explain", "-f", str(file), "--space", space,
                                              "-o", "json").stdout)
        assert as_json["destinations"] == [] and as_json["objects"] == []
        assert any(m["name"] == "explain-prod" for m in as_json["locationMismatches"])

        missing = hub.spacehub("placement", "explain", "-f", str(file), "--space", "no-such-space", check=False)
        assert missing.returncode == 1 and "NotFound" in missing.stderr
    finally:
        hub.spacehub("cluster", "delete", "explain-prod", check=False)


def _section(output: str, title: str) -> list[str]:
    """The table lines under a heading of the explain output (up to the next blank line)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    section = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        section.append(line)
    return section
