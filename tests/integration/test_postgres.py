"""The same hub on PostgreSQL: writes, lists, watches and crash recovery through the real server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import Hub, free_port, wait_for


@pytest.mark.postgres
def test_hub_on_postgres_survives_sigkill_and_resumes_watches(pg_url: str, tmp_path: Path) -> None:
    hub = Hub(data_dir=tmp_path / "data", port=free_port(), home=tmp_path / "home", extra_args=["--db", pg_url])
    hub.start()
    try:
        cm = "/clusters/root/api/v1/namespaces/default/configmaps"
        with hub.client() as c:
            # Once root's default namespace has its kube-root-ca.crt, only the test writes its ConfigMaps.
            wait_for(lambda: c.get(f"{cm}/kube-root-ca.crt").status_code == 200, message="root settled")
            start = c.get(cm).json()["metadata"]["resourceVersion"]
            for i in range(20):
                assert c.post(cm, json={"metadata": {"name": f"pg-{i}"}, "data": {"i": str(i)}}).status_code == 201
        listed = hub.kubectl("get", "configmaps", "-n", "default", "--chunk-size=7", "-o", "name", space="root")
        assert len(listed.stdout.split()) == 21  # and kube-root-ca.crt
        hub.kill()
        hub.start()
        with hub.client() as c:
            assert len(c.get(cm).json()["items"]) == 21
            names = []
            with c.stream("GET", cm, params={"watch": "true", "resourceVersion": start}) as r:
                for line in r.iter_lines():
                    if line:
                        names.append(json.loads(line)["object"]["metadata"]["name"])
                    if len(names) == 20:
                        break
            assert names == [f"pg-{i}" for i in range(20)]
    finally:
        hub.stop()
