"""``spacehub sim serve``: prepare the data dir (PKI, credentials, kubeconfigs) and run the simulator.

Per-cluster options (``--nodes-per-cluster``, ``--node-cpu``, ``--node-memory``, ``--node-pods``) take a
value for every cluster and/or ``CLUSTER=VALUE`` for one. When the clusters are up, a table of
clusters, servers and kubeconfig paths goes to stderr. SIGTERM and SIGINT stop it cleanly (uvicorn's
graceful shutdown, then the controllers, the writer and the store).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import ssl
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import uvicorn

from apimachinery.names import is_dns1123_label
from apiserver.builtin.strategies import parse_quantity
from apiserver.server.endpoint import SpaceServer, prepare_endpoint, split_listen
from apiserver.server.gcpolicy import tune_for_long_lived_heap
from kubeclient.kubeconfig import ensure_admin
from kubeclient.logs import configure_logging
from kubeclient.output import format_table
from sim.access import ensure_cluster_tokens, kubeconfig_path, write_kubeconfigs
from sim.app import SimCore, SimSettings, build_app
from sim.controllers import NodeShape
from sim.controllers.statusrules import RuleError, load_rules
from sim.faults import FaultError, load_faults_file
from sim.fleet import FleetError, cluster_labels, register_fleet
from sim.workers import Workers, bind, parse_processes, slices
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
    owners = settings.workers.owners if settings.workers is not None else {}
    rows += [[name, "-", f"{base}/clusters/{name}", str(kubeconfig_path(data_dir, name))]
             for name, base in owners.items()]
    active = [f"{name} {faults.to_json()}" for name, faults in core.faults.items() if faults.active]
    lines = [f"spacehub sim: {len(rows)} simulated cluster(s) on {settings.public_url} "
             f"{f'and {len(settings.workers.bases)} more process(es) ' if settings.workers is not None else ''}"
             f"(data {data_dir}, ready delay {settings.ready_delay:g}s)",
             format_table(["CLUSTER", "NODES", "SERVER", "KUBECONFIG"], rows).rstrip("\n"),
             f"admin kubeconfig: {data_dir / 'admin.kubeconfig'}; faults: PUT {settings.public_url}"
             "/sim/v1/clusters/<name>/faults with the admin token"]
    if active:
        lines.append("faults at startup: " + "; ".join(active))
    return "\n".join(lines) + "\n"


def run_from_args(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the syncers' requests, one line each otherwise
    names = cluster_names(args.prefix, args.clusters)
    if args.ready_delay < 0:
        raise _fail("--ready-delay must not be negative")
    default_shape, shapes = node_shapes(args, names)
    try:
        rules = load_rules(args.status_rules) if args.status_rules else ()
        faults = load_faults_file(args.faults_file, names) if args.faults_file else {}
        processes = parse_processes(args.processes, len(names))
    except (RuleError, FaultError) as exc:
        raise _fail(str(exc)) from None
    except ValueError as exc:
        raise _fail(f"--processes {args.processes}: {exc}") from None
    parts = slices(names, processes)
    index = args.worker_index
    if not 0 <= index < processes or (index > 0) != (args.worker_fd is not None):
        raise _fail("--worker-index and --worker-fd are set by spacehub sim serve itself")
    own = parts[index]

    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(fileno=args.worker_fd) if args.worker_fd is not None else None
    listen = args.listen if sock is None else f"{split_listen(args.listen)[0]}:{sock.getsockname()[1]}"
    endpoint = prepare_endpoint(data_dir, listen, args.insecure_http)
    base_url, ca_pem = endpoint.base_url, endpoint.ca_pem
    tokens = ensure_cluster_tokens(data_dir, names)
    workers: Workers | None = None
    if index == 0:
        admin_token = ensure_admin(data_dir, f"{base_url}/clusters/root", ca_pem).token
        others = bind(endpoint.host, processes - 1)
        bases = {name: base_url for name in own}
        for part, other in zip(parts[1:], others, strict=True):
            bases.update((name, with_port(base_url, other.getsockname()[1])) for name in part)
        kubeconfigs = write_kubeconfigs(data_dir, bases, ca_pem, tokens)
        specs = _fleet(args, names, {name: str(path.resolve()) for name, path in kubeconfigs.items()}, data_dir)
        if others:
            workers = Workers({name: bases[name] for name in names if name not in own}, admin_token,
                              ssl_verify(data_dir, args.insecure_http))
            workers.spawn(sys.argv, others)
    else:
        admin_token = ensure_admin(data_dir, f"{with_port(base_url, split_listen(args.listen)[1])}/clusters/root",
                                   ca_pem).token
        kubeconfigs = {name: kubeconfig_path(data_dir, name) for name in own}
        specs = _fleet(args, names, {name: str(path.resolve()) for name, path in kubeconfigs.items()}, data_dir)
    specs = [spec for spec in specs if spec.kubeconfig is not None and Path(spec.kubeconfig).stem in own]

    suffix = "" if index == 0 else f"-{index}"
    settings = SimSettings(
        db_url=f"sqlite:///{(data_dir / f'sim{suffix}.db').resolve()}", admin_token=admin_token, clusters=own,
        # The first process knows every token: a request for another process's cluster is redirected there.
        cluster_tokens=tokens if index == 0 else {name: tokens[name] for name in own},
        default_shape=default_shape, shapes=shapes, ready_delay=args.ready_delay,
        status_rules=rules, faults={name: f for name, f in faults.items() if name in own}, public_url=base_url,
        insecure_http=args.insecure_http, workers=workers,
        kubeconfigs={name: str(kubeconfig_path(data_dir, name).resolve()) for name in own})

    tune_for_long_lived_heap()  # thousands of clusters and syncers make a large, long-lived heap
    app, core = build_app(settings)
    log.info("spacehub sim starting %d cluster(s) on %s%s", len(own), listen,
             f" (process {index + 1} of {processes})" if processes > 1 else "")
    table = (lambda: startup_table(core, data_dir.resolve())) if index == 0 else (lambda: "")
    server = _AnnouncingServer(endpoint.uvicorn_config(app), table, specs, data_dir / f"syncers{suffix}.db", workers,
                               on_shutdown=core.drain)
    server.run(sockets=[sock] if sock is not None else None)
    return 0 if server.started else 1


def with_port(base_url: str, port: int) -> str:
    """``https://127.0.0.1:7443`` → ``https://127.0.0.1:<port>``."""
    return f"{base_url.rsplit(':', 1)[0]}:{port}"


def ssl_verify(data_dir: Path, insecure_http: bool) -> ssl.SSLContext | bool:
    return False if insecure_http else ssl.create_default_context(cafile=str(data_dir / "pki" / "ca.crt"))


def _fleet(args: argparse.Namespace, fleet: list[str], kubeconfigs: dict[str, str],
           data_dir: Path) -> list[SyncerSpec]:
    """Register the clusters of ``kubeconfigs`` (this process's, or all of them) at the hub; ``--cluster-label``
    is checked against the whole ``fleet``, since a label may name a cluster another process serves."""
    if not args.with_syncers:
        if args.hub or args.cluster_label:
            raise _fail("--hub and --cluster-label need --with-syncers")
        return []
    if not args.hub:
        raise _fail("--with-syncers needs --hub URL")
    try:
        labels = cluster_labels(args.cluster_label, fleet)
        return register_fleet(args.hub, args.hub_kubeconfig, kubeconfigs, labels, data_dir)
    except FleetError as exc:
        raise _fail(str(exc)) from None


class _AnnouncingServer(SpaceServer):
    """Prints the cluster table once the clusters are up (in every process) and the socket is listening,
    then starts the in-process syncers (they need the clusters' API to be served) and stops them before the
    server; the first of several processes also supervises the others and stops them last."""

    def __init__(self, config: uvicorn.Config, table: Callable[[], str], specs: list[SyncerSpec],
                 state: Path, workers: Workers | None, on_shutdown: Callable[[], None]) -> None:
        super().__init__(config, on_shutdown=on_shutdown)
        self._table = table
        self._specs = specs
        self._state = state
        self._workers = workers
        self._syncers: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self._workers is not None:
            await self._workers.start(on_death=self._stop)
            while not self._workers.others_ready and not self.should_exit:
                await asyncio.sleep(0.1)
        if not self.should_exit:
            sys.stderr.write(self._table())
            sys.stderr.flush()
            if self._workers is not None:
                self._workers.all_ready = True
            if self._specs:
                self._syncers = asyncio.create_task(run_syncers(self._specs, self._state), name="syncers")
                self._syncers.add_done_callback(_report_end)
                log.info("running %d syncer(s) for hub %s", len(self._specs), self._specs[0].bootstrap.hub)

    def _stop(self) -> None:
        self.should_exit = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._syncers is not None:
            self._syncers.cancel()
            await asyncio.gather(self._syncers, return_exceptions=True)
        await super().shutdown(sockets)
        if self._workers is not None:
            await self._workers.stop()


def _report_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the syncers stopped: %r", task.exception())
