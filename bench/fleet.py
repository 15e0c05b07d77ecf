"""What the fleet benchmarks share: a hub and a simulated fleet in a temporary directory, and their measures.

``bench/sync_bench.py`` (objects going out to clusters) and ``bench/status_bench.py`` (status coming home)
both run a fresh hub and one ``spacehub sim serve --clusters N --with-syncers`` whose clusters register at the
hub with label ``env=bench``.
"""

from __future__ import annotations

import resource
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness import Hub, free_port, wait_for  # noqa: E402
from tests.sim_harness import Sim  # noqa: E402

EDGE = "edge.kubestellar.io/v2alpha1"
FLEET_LABEL = {"env": "bench"}
# Registering 1,000 clusters at the hub precedes the simulator's /readyz; all of them Ready takes as long again.
FLEET_START_TIMEOUT = 900.0


@dataclass
class FleetSim(Sim):
    """:class:`Sim` with a deadline long enough to register a thousand clusters."""

    start_timeout: float = FLEET_START_TIMEOUT


def fleet_sim(tmp: Path, hub: Hub, n: int, *extra_args: str) -> FleetSim:
    """N simulated clusters named wec1… with in-process syncers, registered at ``hub`` with ``env=bench``
    (``extra_args`` add per-cluster labels and the like); pods are ready at once (``--ready-delay 0``)."""
    labels = [arg for key, value in FLEET_LABEL.items() for arg in ("--cluster-label", f"{key}={value}")]
    return FleetSim(data_dir=tmp / "sim", port=free_port(), home=tmp / "simhome", clusters=n,
                    extra_args=["--prefix", "wec", "--hub", hub.base_url, "--hub-kubeconfig", str(hub.kubeconfig),
                                "--with-syncers", *labels, "--ready-delay", "0", *extra_args])


def raise_open_files_limit() -> None:
    """A thousand watches here and 2,000+ sockets in the simulator exceed the usual soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# --- objects ------------------------------------------------------------------------------------------


def placement(name: str, labels: dict[str, str], downsync: Sequence[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": [{"matchLabels": labels}], "downsync": list(downsync),
                     "wantSingletonReportedState": False, **spec}}


def post(c: httpx.Client, path: str, body: dict[str, Any]) -> None:
    r = c.post(path, content=orjson.dumps(body), headers={"Content-Type": "application/json"})
    if r.status_code not in (200, 201):
        raise RuntimeError(f"POST {path}: {r.status_code} {r.text}")


def wait_all_ready(hub: Hub, n: int, timeout: float, sim: Sim) -> None:
    """Until the hub's placement API lists ``n`` Ready clusters (fails at once if the simulator exits)."""
    with hub.client(timeout=120) as c:
        def count() -> bool:
            if sim.proc is not None and sim.proc.poll() is not None:
                raise SystemExit(f"the simulator exited with {sim.proc.returncode}; its log is in "
                                 f"{sim.data_dir.parent}")
            items = c.get("/placement/v1/clusters").json()["items"]
            return sum(1 for i in items if i["ready"]) >= n
        wait_for(count, timeout=timeout, interval=1.0, message=f"{n} clusters Ready at the hub")
