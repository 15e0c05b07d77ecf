"""What an operator sees of a spacehub process: its version, its log lines, and how it stops."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

import httpx
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


def hold_watch(hub: Hub, path: str, opened: threading.Event) -> None:
    """Hold a watch open until the hub ends it (then return)."""
    try:
        with hub.client(timeout=30) as c, c.stream("GET", path, params={"watch": "true"}) as r:
            opened.set()
            for _ in r.iter_lines():
                pass
    except httpx.HTTPError:
        pass


def test_json_logs_and_sigterm_ends_open_watches_and_streams_and_exits_0_quickly(tmp_path: Path) -> None:
    hub = Hub(tmp_path / "hub", free_port(), tmp_path / "home", extra_args=["--log-format", "json"])
    hub.start()
    hub.create_space("team-a")
    with hub.client() as c:
        r = c.post("/placement/v1/clusters", json={"name": "edge1", "labels": {"env": "prod"}})
        assert r.status_code == 201, r.text
        r = c.get("/clusters/team-a/api/v1/namespaces/nowhere/configmaps/missing")
        assert r.status_code == 404
    opened = [threading.Event(), threading.Event()]
    holders = [threading.Thread(target=hold_watch, args=(hub, "/clusters/team-a/api/v1/configmaps", opened[0])),
               threading.Thread(target=hold_watch, args=(hub, "/syncer/v1/targets/edge1/stream", opened[1]))]
    for holder in holders:
        holder.start()
    wait_for(lambda: all(event.is_set() for event in opened), timeout=20, message="the watch and the stream open")

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

    lines = [line for line in hub.log_path.read_bytes().splitlines() if line.strip()]
    assert lines
    for line in lines:
        entry = orjson.loads(line)  # every line is one JSON object
        assert {"time", "level", "logger", "msg"} <= entry.keys()
        assert "Traceback" not in entry["msg"] and "exception" not in entry
