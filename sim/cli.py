"""``spacehub sim serve``: argument parsing only (the server lives in :mod:`sim.server`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kubeclient.logs import add_log_options
from kubeclient.output import Subparsers

DEFAULT_LISTEN = "127.0.0.1:7443"
DEFAULT_DATA_DIR = Path(".spacehub-sim")
DEFAULT_PREFIX = "wec"
DEFAULT_READY_DELAY = 0.5
PER_CLUSTER = "VALUE or CLUSTER=VALUE, repeatable"


def register_sim_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    # Like ``hub serve``, the server reads no kubeconfig, so ``common`` is not inherited.
    sim = sub.add_parser("sim", help="run simulated workload clusters (kwok-style) for tests and demos")
    sim_sub = sim.add_subparsers(dest="sim_command", metavar="COMMAND", required=True)
    serve = sim_sub.add_parser("serve", help="serve N simulated clusters, each a Kubernetes API",
                               description="Serve simulated clusters <prefix>1..<prefix>N at "
                                           "https://<listen>/clusters/<name>, each with nodes and controllers "
                                           "that run Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs "
                                           "(pods become Running/Ready after --ready-delay).")
    serve.add_argument("--clusters", type=int, required=True, metavar="N", help="how many clusters to serve")
    serve.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"cluster name prefix (default {DEFAULT_PREFIX})")
    serve.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                       help=f"address to listen on (default {DEFAULT_LISTEN})")
    serve.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, metavar="DIR",
                       help="database, PKI, credentials and kubeconfigs/<name>.kubeconfig (default .spacehub-sim)")
    serve.add_argument("--ready-delay", type=float, default=DEFAULT_READY_DELAY, metavar="SECONDS",
                       help="seconds until a bound pod is Running and Ready, a Job's pod finishes, a status rule "
                            f"applies (default {DEFAULT_READY_DELAY})")
    serve.add_argument("--nodes-per-cluster", action="append", default=[], metavar="N",
                       help=f"nodes per cluster (default 2; {PER_CLUSTER})")
    serve.add_argument("--node-cpu", action="append", default=[], metavar="QUANTITY",
                       help=f"allocatable cpu per node (default 8; {PER_CLUSTER})")
    serve.add_argument("--node-memory", action="append", default=[], metavar="QUANTITY",
                       help=f"allocatable memory per node (default 32Gi; {PER_CLUSTER})")
    serve.add_argument("--node-pods", action="append", default=[], metavar="N",
                       help=f"allocatable pods per node (default 110; {PER_CLUSTER})")
    serve.add_argument("--status-rules", type=Path, default=None, metavar="FILE",
                       help="YAML rules giving custom resources a status (see sim/example-status-rules.yaml)")
    serve.add_argument("--faults-file", type=Path, default=None, metavar="FILE",
                       help='faults per cluster at startup, e.g. {wec2: {latencySeconds: 0.5}} (YAML or JSON)')
    serve.add_argument("--hub", default=None, metavar="URL",
                       help="with --with-syncers: the hub to register the clusters at (e.g. https://127.0.0.1:6443)")
    serve.add_argument("--hub-kubeconfig", default=None, metavar="FILE",
                       help="the hub's admin kubeconfig for registering (default: $KUBECONFIG, else "
                            "./.spacehub/admin.kubeconfig)")
    serve.add_argument("--with-syncers", action="store_true",
                       help="register every cluster at --hub (once; bootstraps kept in DIR/bootstraps) and run a "
                            "syncer per cluster in this process")
    serve.add_argument("--cluster-label", action="append", default=[], metavar="[CLUSTER:]KEY=VALUE",
                       help="with --with-syncers: a label of the registered clusters, all or one (repeatable)")
    serve.add_argument("--insecure-http", action="store_true",
                       help="serve plain HTTP instead of HTTPS (local experiments only)")
    serve.add_argument("--processes", default="auto", metavar="K|auto",
                       help="spread the clusters (and their syncers) over K processes, each with its own store "
                            "and port (the first on --listen; a cluster's kubeconfig names the process serving "
                            "it); auto: one per 250 clusters, at most one per core (default auto)")
    # Set by the first process on the ones it starts (sim.workers), never by a user.
    serve.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)
    serve.add_argument("--worker-fd", type=int, default=None, help=argparse.SUPPRESS)
    add_log_options(serve)
    serve.set_defaults(func=_sim_serve)


def _sim_serve(args: argparse.Namespace) -> int:
    # Imported here so that other commands start fast and do not need the server's dependencies.
    from sim.server import run_from_args

    return run_from_args(args)
