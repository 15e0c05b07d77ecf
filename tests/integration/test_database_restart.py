"""The hub rides out a PostgreSQL restart (skipped, saying why, where PostgreSQL's binaries are absent).

The test runs its own PostgreSQL cluster (``initdb``/``pg_ctl`` in a temp dir, on a free port) so that it can
stop and start it: while the database is down requests get 503 ServiceUnavailable with Retry-After, the hub
process stays up, and once the database is back it takes writes again, without a restart and losing none it
acknowledged.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness import Hub, free_port, hub_processes, wait_for

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


WRITERS = 8
OUTAGE_SECONDS = 10


def is_unavailable_status(r: httpx.Response) -> bool:
    """Kube's answer while the store cannot be reached: a 503 Status ServiceUnavailable with Retry-After."""
    if r.status_code != 503 or r.headers.get("Retry-After") is None:
        return False
    body = r.json()
    return (body.get("kind"), body.get("reason"), body.get("code")) == ("Status", "ServiceUnavailable", 503)


class Watcher(threading.Thread):
    """Watches the space's ConfigMaps through one process as a client-go reflector does: it resumes from the last
    resourceVersion it saw when its stream ends or cannot be opened, and relists on 410 Expired."""

    def __init__(self, hub: Hub, path: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.hub, self.path, self.stop = hub, path, stop
        self.seen: set[str] = set()
        self.resumed = self.relisted = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with self.hub.client(timeout=60) as c:
                rv: str | None = None
                while not self.stop.is_set():
                    rv = self._list(c) if rv is None else rv
                    if rv is not None:
                        rv = self._watch(c, rv)
                    self.stop.wait(0.2)  # pacing reconnects while the database is down
        except BaseException as exc:  # reported by the test, which asserts there is none
            self.failure = exc

    def _list(self, c: httpx.Client) -> str | None:
        r = c.get(self.path)
        if r.status_code != 200:
            assert is_unavailable_status(r), r.text
            return None
        body = r.json()
        self.seen |= {item["metadata"]["name"] for item in body["items"]}
        self.relisted += 1
        return str(body["metadata"]["resourceVersion"])

    def _watch(self, c: httpx.Client, rv: str) -> str | None:
        """Read one watch stream to its end; the resourceVersion to resume from, None to relist."""
        try:
            with c.stream("GET", self.path, params={"watch": "true", "resourceVersion": rv,
                                                    "allowWatchBookmarks": "true"}) as r:
                if r.status_code == 410:
                    return None
                if r.status_code != 200:
                    r.read()
                    assert is_unavailable_status(r), r.text
                    return rv
                for line in r.iter_lines():
                    if not line:
                        continue
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        assert event["object"]["code"] == 410, event
                        return None
                    if event["type"] != "BOOKMARK":
                        self.seen.add(event["object"]["metadata"]["name"])
                    rv = event["object"]["metadata"]["resourceVersion"]
                    if self.stop.is_set():
                        break
        except httpx.TransportError:  # the stream broke: resume where it was
            pass
        self.resumed += 1
        return rv


class Writers:
    """``WRITERS`` clients creating ConfigMaps through the processes in turn, each name once: what was acknowledged
    (201) and every other answer."""

    def __init__(self, hubs: list[Hub], path: str) -> None:
        self.hubs, self.path = hubs, path
        self.stop = threading.Event()
        self.acknowledged: set[str] = set()
        self.refused: list[httpx.Response] = []
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(WRITERS)]

    def __enter__(self) -> Writers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def _run(self, index: int) -> None:
        clients = [h.client(timeout=30) for h in self.hubs]
        try:
            n = 0
            while not self.stop.is_set():
                name = f"w{index}-{n}"
                r = clients[(index + n) % len(clients)].post(self.path, json=configmap(name))
                if r.status_code == 201:
                    self.acknowledged.add(name)
                else:
                    self.refused.append(r)
                    self.stop.wait(0.2)  # as a client honouring Retry-After, sooner
                n += 1
        finally:
            for c in clients:
                c.close()


def leaders(hubs: list[Hub]) -> list[int]:
    """The ports of the processes that say they hold the lease (one sweep over /metrics)."""
    found = []
    for h in hubs:
        with h.client(timeout=10) as c:
            r = c.get("/metrics")
        if r.status_code == 200 and re.search(r"^spacehub_leader 1\.0$", r.text, re.M):
            found.append(h.port)
    return found


def test_three_processes_ride_out_a_restart_under_writers_and_watchers(cluster: Cluster, tmp_path: Path) -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:{cluster.port}/postgres"
    with hub_processes(url, tmp_path, 3) as hubs:
        hubs[0].create_space("outage")
        path = CM.format(space="outage")
        stop_watching = threading.Event()
        watchers = [Watcher(h, path, stop_watching) for h in hubs]
        for w in watchers:
            w.start()
        holders: list[list[int]] = []
        with Writers(hubs, path) as writers:
            wait_for(lambda: len(writers.acknowledged) >= 50, timeout=30, message="writes before the outage")
            holders.append(leaders(hubs))
            cluster.stop()
            down_at = time.monotonic()
            for h in hubs:
                with h.client(timeout=15) as c:
                    wait_for(lambda c=c: c.get("/readyz").status_code == 503, timeout=5,  # type: ignore[misc]
                             message=f"{h.port}'s /readyz to fail while the database is down")
                    ready = c.get("/readyz")
                    assert "store" in ready.text and "unavailable" in ready.text, ready.text
                    registered = c.post("/placement/v1/clusters", json={"name": f"edge-{h.port}"})
                    assert is_unavailable_status(registered), registered.text
            while time.monotonic() - down_at < OUTAGE_SECONDS:
                holders.append(leaders(hubs))
                assert all(h.proc is not None and h.proc.poll() is None for h in hubs), "a process exited"
                time.sleep(0.2)  # pacing the sweeps, not waiting for a state
            refused_during = len(writers.refused)
            cluster.start()
            back_at = time.monotonic()
            for h in hubs:
                with h.client(timeout=15) as c:
                    def serves(c: httpx.Client = c, port: int = h.port) -> bool:
                        r = c.post(path, json=configmap(f"back-{port}-{time.monotonic_ns()}"))
                        assert r.status_code == 201 or is_unavailable_status(r), r.text
                        return r.status_code == 201 and c.get("/readyz").status_code == 200

                    wait_for(serves, timeout=5 - (time.monotonic() - back_at),
                             message=f"{h.port} to take writes and be ready again")
            acknowledged_at_recovery = len(writers.acknowledged)
            wait_for(lambda: len(writers.acknowledged) >= acknowledged_at_recovery + 50, timeout=30,
                     message="writes after the outage")

        assert refused_during > 0, "no write was refused while the database was down"
        assert all(is_unavailable_status(r) for r in writers.refused), \
            {(r.status_code, r.text[:200]) for r in writers.refused if not is_unavailable_status(r)}
        assert all(len(sweep) <= 1 for sweep in holders), holders
        wait_for(lambda: len(leaders(hubs)) == 1, timeout=15, message="one lease holder after the outage")
        for h in hubs:  # no acknowledged write lost, whichever process is asked
            with h.client(timeout=30) as c:
                names = {item["metadata"]["name"] for item in c.get(path).json()["items"]}
            assert writers.acknowledged <= names, sorted(writers.acknowledged - names)[:10]
        for w in watchers:  # every watch saw every acknowledged write, resuming or relisting
            wait_for(lambda w=w: writers.acknowledged <= w.seen or w.failure, timeout=30,  # type: ignore[misc]
                     message=f"the watcher on {w.hub.port} to see every acknowledged write")
            assert w.failure is None, repr(w.failure)
        stop_watching.set()
