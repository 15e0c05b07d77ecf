"""``spacehub up``: the whole product on one machine — a hub and simulated clusters with their syncers.

Runs ``spacehub hub serve`` and ``spacehub sim serve --with-syncers`` as two child processes (the same
commands a user would run by hand), waits for the hub before starting the clusters, prints how to use
them, and stops both when it is interrupted or when either one exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

DEFAULT_CLUSTERS = 2
DEFAULT_SIM_LISTEN = "127.0.0.1:7443"
READY_SECONDS = 120.0


def register_up_command(sub: Any, common: argparse.ArgumentParser) -> None:
    up = sub.add_parser("up", help="run a hub with simulated clusters and their syncers (no Docker)",
                        description="Start `spacehub hub serve` and `spacehub sim serve --with-syncers`: a hub "
                                    "and N simulated clusters registered with labels env=dev and cluster=<name>, "
                                    "each synced by its own syncer. Ctrl-C stops everything.")
    up.add_argument("--clusters", type=int, default=DEFAULT_CLUSTERS, metavar="N",
                    help=f"simulated clusters (default {DEFAULT_CLUSTERS})")
    up.add_argument("--listen", default="127.0.0.1:6443", metavar="HOST:PORT", help="the hub's address")
    up.add_argument("--sim-listen", default=DEFAULT_SIM_LISTEN, metavar="HOST:PORT",
                    help=f"the simulated clusters' address (default {DEFAULT_SIM_LISTEN})")
    up.add_argument("--data-dir", type=Path, default=Path(".spacehub"), metavar="DIR",
                    help="the hub's data dir; the clusters' is DIR/sim (default .spacehub)")
    up.set_defaults(func=_up)


def _wait_ready(url: str, ca_file: Path, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"error: {what} exited with status {proc.returncode}")
        if ca_file.exists():
            try:
                if httpx.get(f"{url}/readyz", verify=ssl.create_default_context(cafile=str(ca_file)),
                             timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
        time.sleep(0.2)  # polling a starting server with a deadline
    raise SystemExit(f"error: {what} was not ready after {READY_SECONDS:.0f}s")


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _up(args: argparse.Namespace) -> int:
    if args.clusters < 1:
        raise SystemExit("error: --clusters must be at least 1")
    exe = [sys.executable, "-m", "spacehub"]
    data_dir: Path = args.data_dir
    hub_url = f"https://{args.listen}"
    names = [f"wec{i}" for i in range(1, args.clusters + 1)]
    labels = ["--cluster-label", "env=dev"] + [arg for name in names
                                               for arg in ("--cluster-label", f"{name}:cluster={name}")]
    procs: list[subprocess.Popen[bytes]] = []
    stopping = False

    def on_signal(_sig: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    env = dict(os.environ)
    try:
        hub = subprocess.Popen([*exe, "hub", "serve", "--listen", args.listen, "--data-dir", str(data_dir)], env=env)
        procs.append(hub)
        _wait_ready(hub_url, data_dir / "pki" / "ca.crt", hub, "the hub")
        sim = subprocess.Popen([*exe, "sim", "serve", "--clusters", str(args.clusters), "--listen", args.sim_listen,
                                "--data-dir", str(data_dir / "sim"), "--hub", hub_url, "--hub-kubeconfig",
                                str(data_dir / "admin.kubeconfig"), "--with-syncers", *labels], env=env)
        procs.append(sim)
        _wait_ready(f"https://{args.sim_listen}", data_dir / "sim" / "pki" / "ca.crt", sim, "the simulated clusters")
        sys.stderr.write(
            f"\nspacehub is up: hub {hub_url}, {args.clusters} simulated cluster(s) with syncers "
            f"(labels env=dev, cluster=<name>).\n"
            f"  export KUBECONFIG={data_dir / 'admin.kubeconfig'}   # the hub; `kubectl space use <space>`\n"
            f"  kubectl --kubeconfig {data_dir / 'sim' / 'kubeconfigs' / (names[0] + '.kubeconfig')} get all -A"
            "   # a cluster\nCtrl-C stops everything.\n")
        sys.stderr.flush()
        while not stopping and all(proc.poll() is None for proc in procs):
            time.sleep(0.2)  # supervising: the signal handler or a child's exit ends the loop
        failed = [proc for proc in procs if proc.poll() not in (None, 0, -signal.SIGTERM)]
        return 1 if failed and not stopping else 0
    finally:
        _stop(procs)
