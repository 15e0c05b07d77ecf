"""What an operator sees of a spacehub process: its version, its log lines, and how it stops."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

import orjson

from kubeclient.version import spacehub_version
from tests.harness import BIN, KUBECTL, Hub, free_port, wait_for

STOP_SECONDS = 2.0


def test_spacehub_version_and_the_servers_version_name_it(hub: Hub, space: str) -> None:
    out = subprocess.run([str(BIN / "spacehub"), "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == f"spacehub {spacehub_version()}"
    assert KUBECTL
    served = json.loads(hub.kubectl("version", "-o", "json", space=space).stdout)["serverVersion"]
    assert served["gitVersion"].endswith(f"+spacehub.{spacehub_version()}")
    assert served["major"] == "1" and int(served["minor"]) >= 28  # what clients compare stays Kubernetes'


class WatchHolder(threading.Thread):
    """Holds a watch open until the hub ends it; records how it ended (``None``: the response ended
    cleanly, else the error) so the test can tell a clean end from a cut connection or a failed open."""

    def __init__(self, hub: Hub, path: str) -> None:
        super().__init__(daemon=True)
        self.hub, self.path = hub, path
        self.opened = threading.Event()
        self.ended = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.hub.client(timeout=30) as c, c.stream("GET", self.path, params={"watch": "true"}) as r:
                assert r.status_code == 200, r.read()
                self.opened.set()
                for _ in r.iter_lines():
                    pass
        except BaseException as exc:  # surfaced by the test, which asserts on it
            self.error = exc
        finally:
            self.ended.set()


def test_json_logs_and_sigterm_ends_open_watches_and_streams_and_exits_0_quickly(tmp_path: Path) -> None:
    hub = Hub(tmp_path / "hub", free_port(), tmp_path / "home", extra_args=["--log-format", "json"])
    hub.start()
    hub.create_space("team-a")
    with hub.client() as c:
        r = c.post("/placement/v1/clusters", json={"name": "edge1", "labels": {"env": "prod"}})
        assert r.status_code == 201, r.text
        r = c.get("/clusters/team-a/api/v1/namespaces/nowhere/configmaps/missing")
        assert r.status_code == 404
    holders = [WatchHolder(hub, "/clusters/team-a/api/v1/configmaps"),
               WatchHolder(hub, "/syncer/v1/targets/edge1/stream")]
    for holder in holders:
        holder.start()
    wait_for(lambda: all(h.opened.is_set() or h.ended.is_set() for h in holders), timeout=20,
             message="the watch and the stream open")
    assert [h.error for h in holders if not h.opened.is_set()] == []

    assert hub.proc is not None
    proc = hub.proc
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=STOP_SECONDS)
    finally:
        hub.stop(signal.SIGKILL)
    assert code == 0
    for holder in holders:
        holder.join(timeout=10)
        assert not holder.is_alive(), f"{holder.path} still open after the hub exited"
        assert holder.error is None, f"{holder.path} cut instead of ended: {holder.error!r}"

    # This run's output, without the harness's own "--- start <command>" line.
    lines = [line for line in hub.runs()[-1].splitlines()[1:] if line.strip()]
    assert lines
    for line in lines:
        entry = orjson.loads(line)  # every line is one JSON object
        assert {"time", "level", "logger", "msg"} <= entry.keys()
        assert "Traceback" not in entry["msg"] and "exception" not in entry
