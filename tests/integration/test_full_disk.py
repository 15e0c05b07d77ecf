"""A full disk (issue 32, item 7): the hub's data directory on a small tmpfs that the test fills.

While the filesystem is full, writes get kube's ``500 InternalError`` naming the cause (as kube answers for
etcd's "database space exceeded"), reads and watches go on, ``/readyz`` says why; once space is freed, writes
succeed again without a restart, and nothing acknowledged is lost or corrupted.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import Hub, free_port, wait_for
from tests.syncer_harness import World, cm_path, configmap, place_configmaps

CM = "/clusters/root/api/v1/namespaces/default/configmaps"
FILESYSTEM_SIZE = "48m"
PAYLOAD = "x" * 200_000  # one ConfigMap's data: the disk fills within a few dozen writes


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 48 MiB tmpfs mounted by the test (needs root, or skips saying so)."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FILESYSTEM_SIZE}", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.fixture
def hub_on_small_disk(tmp_path: Path, small_disk: Path) -> Iterator[Hub]:
    hub = Hub(data_dir=small_disk / "data", port=free_port(), home=tmp_path / "home")
    hub.log_path = tmp_path / "hub.log"  # the log is not on the small disk: the test fills that
    hub.start()
    try:
        yield hub
    finally:
        hub.stop()


def _fill(directory: Path, leave: int, name: str = "filler") -> Path:
    """A file taking all of ``directory``'s filesystem but ``leave`` bytes (all of it when 0)."""
    filler = directory / name
    fs = os.statvfs(directory)
    remaining = max(0, fs.f_bavail * fs.f_frsize - leave)
    with filler.open("wb") as out:
        while remaining > 0:
            chunk = min(remaining, 1 << 20)
            try:
                out.write(b"\0" * chunk)
                out.flush()
            except OSError:  # ENOSPC: the filesystem is full
                break
            remaining -= chunk
    return filler


def test_full_disk_refuses_writes_with_a_status_and_recovers_when_space_is_freed(hub_on_small_disk: Hub,
                                                                                small_disk: Path) -> None:
    hub = hub_on_small_disk
    events: list[dict[str, Any]] = []
    with hub.client(timeout=60) as c:
        c.post(CM, json={"metadata": {"name": "before"}, "data": {"a": "1"}}).raise_for_status()
        start = c.get(CM).json()["metadata"]["resourceVersion"]

        # A watch open across the whole episode: it must neither end nor report an error.
        def watch() -> None:
            with hub.client(timeout=120) as wc, wc.stream(
                    "GET", CM, params={"watch": "true", "resourceVersion": start}) as r:
                for line in r.iter_lines():
                    if line:
                        events.append(json.loads(line))
                    if events and events[-1]["object"]["metadata"]["name"] == "after":
                        return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        filler = _fill(small_disk, leave=1 << 20)
        acknowledged: list[str] = []
        refused: httpx.Response | None = None
        for i in range(200):
            r = c.post(CM, json={"metadata": {"name": f"big-{i}"}, "data": {"payload": PAYLOAD}})
            if r.status_code == 201:
                acknowledged.append(f"big-{i}")
                continue
            refused = r
            break
        assert refused is not None, "the disk never filled"
        assert refused.status_code == 500, refused.text
        status = refused.json()
        assert status["kind"] == "Status" and status["reason"] == "InternalError", status
        assert "database or disk is full" in status["message"], status["message"]

        # The big write that did not fit is refused; now nothing fits: not even the smallest write.
        topped_up = _fill(small_disk / "data", leave=0, name="top-up")

        # Reads go on; so do new watches; the process lives.
        names = {i["metadata"]["name"] for i in c.get(CM).json()["items"]}
        assert {"before", *acknowledged} <= names
        assert c.get(f"{CM}/before").json()["data"] == {"a": "1"}
        hub.kubectl("get", "configmaps", "-n", "default", space="root")
        ready = c.get("/readyz")
        assert ready.status_code == 503 and "full" in ready.text, ready.text
        # Every write that needs the space is refused the same way while the disk stays full, kubectl's too.
        payload_file = small_disk.parent / "payload"
        payload_file.write_text(PAYLOAD)
        again = hub.kubectl("create", "configmap", "while-full", "-n", "default", f"--from-file=payload={payload_file}",
                            space="root", check=False)
        assert again.returncode != 0 and "full" in again.stderr, again.stderr

        filler.unlink()
        topped_up.unlink()
        wait_for(lambda: c.get("/readyz").status_code == 200, timeout=15, message="/readyz to recover")
        c.post(CM, json={"metadata": {"name": "after"}, "data": {"b": "2"}}).raise_for_status()
        watcher.join(timeout=30)
        assert not watcher.is_alive(), f"the watch missed the write after recovery: {events[-3:]}"
        assert all(e["type"] == "ADDED" for e in events), [e for e in events if e["type"] != "ADDED"]
        assert [e["object"]["metadata"]["name"] for e in events] == [*acknowledged, "after"]

    # The refusals were answered, not crashed on: no traceback in the hub's log.
    assert "Traceback" not in hub.log(), hub.log()[-3000:]
    # Nothing corrupted and nothing acknowledged lost: the database checks clean and a restarted hub has it all.
    hub.stop()
    db = sqlite3.connect(hub.data_dir / "spacehub.db")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    hub.start()
    with hub.client() as c:
        names = {i["metadata"]["name"] for i in c.get(CM).json()["items"]}
    assert {"before", "after", *acknowledged} <= names
    assert "while-full" not in names and refused is not None


def _readyz(hub: Hub) -> int:
    with hub.client() as c:
        return c.get("/readyz").status_code


def test_a_hub_with_a_syncer_rides_out_a_full_disk_and_converges_once_space_is_freed(tmp_path: Path,
                                                                                     small_disk: Path) -> None:
    world = World(tmp_path, clusters=1)
    world.hub.data_dir = small_disk / "hub"  # the hub's store on the small disk; its log beside the test's files
    world.start()
    try:
        world.join("florin", "wec1", {"env": "prod"})
        place_configmaps(world, "filling", "a")
        world.wait_present("florin", cm_path("app", "a"), timeout=60)
        status_path = "/apis/status.spacehub.io/v1alpha1/namespaces/app/placementstatuses/configmaps.core.a"
        wait_for(lambda: ((world.hub_get("filling", status_path) or {}).get("summary") or {}).get("ready") == 1,
                 timeout=30, message="a Ready in florin")
        filler = _fill(small_disk, leave=0)
        # Every write is refused now; the hub's own (heartbeats, status) too. It lives on, serving reads.
        refused = world.hub.kubectl("create", "configmap", "b", "-n", "app", "--from-literal=v=1", space="filling",
                                    check=False)
        assert refused.returncode != 0 and "database or disk is full" in refused.stderr, refused.stderr
        wait_for(lambda: _readyz(world.hub) == 503, timeout=15, message="/readyz to fail")
        assert world.hub.proc is not None and world.hub.proc.poll() is None
        assert world.get("florin", cm_path("app", "a")) is not None

        filler.unlink()
        wait_for(lambda: _readyz(world.hub) == 200, timeout=15, message="/readyz to recover")
        world.apply("filling", configmap("b", "app", v="1"))
        world.wait_present("florin", cm_path("app", "b"), timeout=30)
        status_b = status_path.replace("configmaps.core.a", "configmaps.core.b")
        wait_for(lambda: ((world.hub_get("filling", status_b) or {}).get("summary") or {}).get("ready") == 1,
                 timeout=30, message="b Ready in florin, reported home")
        wait_for(lambda: world.ready("florin").get("status") == "True", timeout=30, message="florin Ready")
        assert world.hub.proc.poll() is None
    finally:
        world.close()
