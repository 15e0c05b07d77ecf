"""``spacehub sim serve``: prepare the data dir (PKI, credentials, kubeconfigs) and run the simulator.

Per-cluster options (``--nodes-per-cluster``, ``--node-cpu``, ``--node-memory``, ``--node-pods``) take a
value for every cluster and/or ``CLUSTER=VALUE`` for one. When the clusters are up, a table of
clusters, servers and kubeconfig paths goes to stderr. SIGTERM and SIGINT stop it cleanly (uvicorn's
graceful shutdown, then the controllers, the writer and the store).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import uvicorn

from sim.access import ensure_cluster_tokens, write_kubeconfigs
from sim.app import SimCore, SimSettings, build_app
from sim.controllers import NodeShape
from sim.controllers.statusrules import RuleError, load_rules
from sim.faults import FaultError, load_faults_file
from sim.fleet import FleetError, cluster_labels, register_fleet
from spaces.builtin.strategies import parse_quantity
from spaces.kubeconfig import ensure_admin
from spaces.names import is_dns1123_label
from spaces.output import format_table
from spaces.server.endpoint import prepare_endpoint
from syncer.runner import SyncerSpec, run_syncers

log = logging.getLogger(__name__)
T = TypeVar("T")


def _fail(message: str) -> SystemExit:
    return SystemExit(f"error: {message}")


def per_cluster(values: Sequence[str], clusters: Sequence[str], default: T, convert: Callable[[str], T],
                flag: str) -> tuple[T, dict[str, T]]:
    """``["8", "wec2=16"]`` → (8, {"wec2": 16}): a value for every cluster and overrides for some."""
    overall = default
    overrides: dict[str, T] = {}
    for raw in values:
        name, sep, value = raw.partition("=")
        if sep and name not in clusters:
            raise _fail(f"{flag} {raw}: there is no cluster {name!r} (clusters: {', '.join(clusters[:5])}"
                        f"{', …' if len(clusters) > 5 else ''})")
        try:
            converted = convert(value if sep else raw)
        except ValueError as exc:
            raise _fail(f"{flag} {raw}: {exc}") from None
        if sep:
            overrides[name] = converted
        else:
            overall = converted
    return overall, overrides


def _count(value: str) -> int:
    number = int(value)
    if number < 0:
        raise ValueError("must not be negative")
    return number


def _quantity(value: str) -> str:
    parsed = parse_quantity(value)
    if parsed is None or parsed <= 0:
        raise ValueError(f"{value!r} is not a positive quantity")
    return value


def node_shapes(args: argparse.Namespace, clusters: Sequence[str]) -> tuple[NodeShape, dict[str, NodeShape]]:
    count, counts = per_cluster(args.nodes_per_cluster, clusters, 2, _count, "--nodes-per-cluster")
    cpu, cpus = per_cluster(args.node_cpu, clusters, "8", _quantity, "--node-cpu")
    memory, memories = per_cluster(args.node_memory, clusters, "32Gi", _quantity, "--node-memory")
    pods, podses = per_cluster(args.node_pods, clusters, "110", lambda v: str(_count(v)), "--node-pods")
    default = NodeShape(count=count, cpu=cpu, memory=memory, pods=pods)
    shapes = {name: NodeShape(count=counts.get(name, count), cpu=cpus.get(name, cpu),
                              memory=memories.get(name, memory), pods=podses.get(name, pods))
              for name in set(counts) | set(cpus) | set(memories) | set(podses)}
    return default, shapes


def cluster_names(prefix: str, count: int) -> list[str]:
    if count < 1:
        raise _fail("--clusters must be at least 1")
    names = [f"{prefix}{i}" for i in range(1, count + 1)]
    for name in (names[0], names[-1]):
        problems = is_dns1123_label(name)
        if problems or name == "root":
            raise _fail(f"cluster name {name!r} (from --prefix {prefix!r}) is not a valid space name: "
                        f"{'; '.join(problems) or 'reserved'}")
    return names


def startup_table(core: SimCore, data_dir: Path) -> str:
    settings = core.settings
    rows = [[info["name"], str(info["nodes"]), info["server"], info["kubeconfig"]]
            for info in (core.cluster_info(name) for name in settings.clusters)]
    active = [f"{name} {faults.to_json()}" for name, faults in core.faults.items() if faults.active]
    lines = [f"spacehub sim: {len(rows)} simulated cluster(s) on {settings.public_url} "
             f"(data {data_dir}, ready delay {settings.ready_delay:g}s)",
             format_table(["CLUSTER", "NODES", "SERVER", "KUBECONFIG"], rows).rstrip("\n"),
             f"admin kubeconfig: {data_dir / 'admin.kubeconfig'}; faults: PUT {settings.public_url}"
             "/sim/v1/clusters/<name>/faults with the admin token"]
    if active:
        lines.append("faults at startup: " + "; ".join(active))
    return "\n".join(lines) + "\n"


def run_from_args(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the syncers' requests, one line each otherwise
    names = cluster_names(args.prefix, args.clusters)
    if args.ready_delay < 0:
        raise _fail("--ready-delay must not be negative")
    default_shape, shapes = node_shapes(args, names)
    try:
        rules = load_rules(args.status_rules) if args.status_rules else ()
        faults = load_faults_file(args.faults_file, names) if args.faults_file else {}
    except (RuleError, FaultError) as exc:
        raise _fail(str(exc)) from None

    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    endpoint = prepare_endpoint(data_dir, args.listen, args.insecure_http)
    base_url, ca_pem = endpoint.base_url, endpoint.ca_pem
    admin = ensure_admin(data_dir, f"{base_url}/clusters/root", ca_pem)
    tokens = ensure_cluster_tokens(data_dir, names)
    kubeconfigs = write_kubeconfigs(data_dir, base_url, ca_pem, tokens)

    settings = SimSettings(
        db_url=f"sqlite:///{(data_dir / 'sim.db').resolve()}", admin_token=admin.token, clusters=names,
        cluster_tokens=tokens, default_shape=default_shape, shapes=shapes, ready_delay=args.ready_delay,
        status_rules=rules, faults=faults, public_url=base_url, insecure_http=args.insecure_http,
        kubeconfigs={name: str(path.resolve()) for name, path in kubeconfigs.items()})

    specs = _fleet(args, settings.kubeconfigs, data_dir)
    if specs:
        # Thousands of clusters and syncers make a large, long-lived heap; the default thresholds run
        # full collections over it every few thousand allocations.
        gc.set_threshold(100_000, 50, 100)
    app, core = build_app(settings)
    log.info("spacehub sim starting %d cluster(s) on %s", len(names), args.listen)
    server = _AnnouncingServer(endpoint.uvicorn_config(app), lambda: startup_table(core, data_dir.resolve()),
                               specs, data_dir / "syncers.db")
    server.run()
    return 0 if server.started else 1


def _fleet(args: argparse.Namespace, kubeconfigs: dict[str, str], data_dir: Path) -> list[SyncerSpec]:
    if not args.with_syncers:
        if args.hub or args.cluster_label:
            raise _fail("--hub and --cluster-label need --with-syncers")
        return []
    if not args.hub:
        raise _fail("--with-syncers needs --hub URL")
    try:
        labels = cluster_labels(args.cluster_label, list(kubeconfigs))
        return register_fleet(args.hub, args.hub_kubeconfig, kubeconfigs, labels, data_dir)
    except FleetError as exc:
        raise _fail(str(exc)) from None


class _AnnouncingServer(uvicorn.Server):
    """Prints the cluster table once the clusters are up and the socket is listening, then starts the
    in-process syncers (they need the clusters' API to be served) and stops them before the server."""

    def __init__(self, config: uvicorn.Config, table: Callable[[], str], specs: list[SyncerSpec],
                 state: Path) -> None:
        super().__init__(config)
        self._table = table
        self._specs = specs
        self._state = state
        self._syncers: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            sys.stderr.write(self._table())
            sys.stderr.flush()
            if self._specs:
                self._syncers = asyncio.create_task(run_syncers(self._specs, self._state), name="syncers")
                self._syncers.add_done_callback(_report_end)
                log.info("running %d syncer(s) for hub %s", len(self._specs), self._specs[0].bootstrap.hub)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._syncers is not None:
            self._syncers.cancel()
            await asyncio.gather(self._syncers, return_exceptions=True)
        await super().shutdown(sockets)


def _report_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the syncers stopped: %r", task.exception())
