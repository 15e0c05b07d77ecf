"""The hub's commands: ``spacehub hub serve`` (argument parsing only; the server is :mod:`hub.server`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kubeclient.logs import add_log_options
from kubeclient.output import Subparsers

DEFAULT_LISTEN = "127.0.0.1:6443"
DEFAULT_DATA_DIR = Path(".spacehub")
DEFAULT_COMPACT_HORIZON = 10000
DEFAULT_COMPACT_INTERVAL = 60.0


def register_hub_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    # The server does not read a kubeconfig, so ``common`` is deliberately not inherited here.
    hub = sub.add_parser("hub", help="run the hub")
    hub_sub = hub.add_subparsers(dest="hub_command", metavar="COMMAND", required=True)
    serve = hub_sub.add_parser("serve", help="serve spaces over HTTPS")
    serve.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                       help=f"address to listen on (default {DEFAULT_LISTEN})")
    serve.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, metavar="DIR",
                       help="where the database, PKI and admin credentials live (default .spacehub)")
    serve.add_argument("--db", default=None, metavar="URL",
                       help="database URL (default sqlite:///<data-dir>/spacehub.db)")
    serve.add_argument("--compact-horizon", type=int, default=DEFAULT_COMPACT_HORIZON, metavar="N",
                       help=f"revisions of history kept for watches (default {DEFAULT_COMPACT_HORIZON})")
    serve.add_argument("--compact-interval", type=float, default=DEFAULT_COMPACT_INTERVAL,
                       metavar="SECONDS", help="seconds between compactions (default 60)")
    serve.add_argument("--insecure-http", action="store_true",
                       help="serve plain HTTP instead of HTTPS (local experiments only)")
    serve.add_argument("--advertise-url", default=None, metavar="URL",
                       help="what kubeconfigs, syncer bootstraps, manifests and Space status give clients to dial, "
                            "e.g. https://hub.example.com:6443 (default: the --listen address)")
    serve.add_argument("--tls-san", action="append", default=[], metavar="NAME",
                       help="another DNS name or IP address the generated serving certificate covers (repeatable; "
                            "the --advertise-url host is covered anyway)")
    serve.add_argument("--tls-cert-file", type=Path, default=None, metavar="FILE",
                       help="serve this certificate (PEM, chain included) instead of the generated one, e.g. from "
                            "cert-manager; re-read when the file changes")
    serve.add_argument("--tls-key-file", type=Path, default=None, metavar="FILE",
                       help="the key of --tls-cert-file")
    serve.add_argument("--tls-ca-file", type=Path, default=None, metavar="FILE",
                       help="with --tls-cert-file: the CA certificate kubeconfigs and bootstraps carry (default: "
                            "none, clients trust the certificate through their system's CAs)")
    serve.add_argument("--inventory-space", default="inventory", metavar="NAME",
                       help="the space holding SyncTargets and Locations, created on first start "
                            "(default: inventory)")
    serve.add_argument("--max-requests-inflight", type=int, default=400, metavar="N",
                       help="concurrent non-watch requests served before answering 429, for users' and for syncers' "
                            "requests each (0: no limit; default 400)")
    serve.add_argument("--placement-slice-size", type=int, default=500, metavar="N",
                       help="destinations per SinglePlacementSlice before a placement's slice is split "
                            "(default 500)")
    serve.add_argument("--sync-ping-interval", type=float, default=15.0, metavar="SECONDS",
                       help="seconds of silence after which a syncer stream sends a PING, so proxies keep it "
                            "open and syncers notice a dead hub (default 15)")
    serve.add_argument("--syncer-heartbeat-timeout", type=float, default=60.0, metavar="SECONDS",
                       help="a SyncTarget whose syncer sent no heartbeat for this long turns Ready=False; "
                            "nothing is deleted (default 60)")
    add_log_options(serve)
    serve.set_defaults(func=_hub_serve)


def _hub_serve(args: argparse.Namespace) -> int:
    # Imported here so that client commands start fast and do not need the server's dependencies.
    from hub.server import run_from_args

    return run_from_args(args)
