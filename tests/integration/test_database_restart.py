"""The hub rides out a PostgreSQL restart (skipped, saying why, where PostgreSQL's binaries are absent).

The test runs its own PostgreSQL cluster (``initdb``/``pg_ctl`` in a temp dir, on a free port) so that it can
stop and start it: while the database is down requests get 503 ServiceUnavailable with Retry-After, the hub
process stays up, and once the database is back it takes writes again, without a restart and losing none it
acknowledged.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import Hub, free_port, wait_for

pytestmark = pytest.mark.postgres
CM = "/clusters/{space}/api/v1/namespaces/default/configmaps"


class Cluster:
    """A PostgreSQL cluster of its own, run as the ``postgres`` user when this test runs as root (initdb
    refuses root)."""

    def __init__(self, bin_dir: str, root: Path, port: int) -> None:
        self.bin_dir, self.root, self.port = bin_dir, root, port
        self.data = root / "data"

    def run(self, tool: str, *args: str) -> None:
        command = [os.path.join(self.bin_dir, tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "30", "-o",
                 f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1", "start")

    def stop(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.skip("PostgreSQL's initdb not found under /usr/lib/postgresql/*/bin")
    root = Path(tempfile.mkdtemp(prefix="spacehub-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    db = Cluster(os.path.dirname(found[-1]), root, free_port())
    try:
        db.run("initdb", "-D", str(db.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        db.start()
    except (subprocess.CalledProcessError, OSError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"could not run a PostgreSQL cluster of its own: {exc}")
    try:
        yield db
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped by a failing test
            db.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def hub(cluster: Cluster, tmp_path: Path) -> Iterator[Hub]:
    h = Hub(data_dir=tmp_path / "data", port=free_port(), home=tmp_path / "home",
            extra_args=["--db", f"postgresql+psycopg://postgres@127.0.0.1:{cluster.port}/postgres"])
    h.start()
    yield h
    h.stop()


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}


def test_requests_get_503_while_the_database_is_down_and_succeed_once_it_is_back(cluster: Cluster, hub: Hub) -> None:
    hub.create_space("outage")
    path = CM.format(space="outage")
    with hub.client(timeout=15) as c:
        acknowledged = []
        for i in range(5):
            r = c.post(path, json=configmap(f"before-{i}"))
            assert r.status_code == 201, r.text
            acknowledged.append(f"before-{i}")

        cluster.stop()
        down_at = time.monotonic()
        for request in (lambda: c.post(path, json=configmap("during")), lambda: c.get(path)):
            r = request()
            assert r.status_code == 503, r.text
            assert r.headers.get("Retry-After") == "1"
            status = r.json()
            assert (status["kind"], status["reason"], status["code"]) == ("Status", "ServiceUnavailable", 503)
        while time.monotonic() - down_at < 5:  # keep the database down ~5 s, asking all along
            assert c.post(path, json=configmap("during")).status_code == 503
            assert hub.proc is not None and hub.proc.poll() is None, "the hub exited while the database was down"
            time.sleep(0.5)  # pacing the requests, not waiting for a state

        cluster.start()
        back_at = time.monotonic()

        def written() -> bool:
            r = c.post(path, json=configmap("after"))
            assert r.status_code in (201, 503), r.text
            return r.status_code == 201

        wait_for(written, timeout=5, message="a write accepted after the database came back")
        assert time.monotonic() - back_at < 5
        acknowledged.append("after")
        assert hub.proc is not None and hub.proc.poll() is None
        names = {item["metadata"]["name"] for item in c.get(path).json()["items"]}
        assert set(acknowledged) <= names
        assert "during" not in names
        # The lease holder regained the lease rather than exiting, and says so once per outage, not per request.
        wait_for(lambda: re.search(r"^spacehub_leader 1\.0$", c.get("/metrics").text, re.M), timeout=10,
                 message="the lease held again")
        log = hub.log_path.read_text()
        assert log.count("the store is unavailable") == 1 and log.count("the store is available again") == 1
        assert "exiting" not in log
