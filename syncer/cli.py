"""``spacehub syncer run``: argument parsing and process lifetime (the work is in :mod:`syncer.syncer`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import signal
from pathlib import Path

from kubeclient.logs import add_log_options, configure_logging
from kubeclient.output import Subparsers
from syncer.bootstrap import Bootstrap, BootstrapError

DEFAULT_STATE_DIR = Path(".spacehub-syncer")


def register_syncer_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    # ``common``'s --kubeconfig names the hub; a syncer's --kubeconfig names its cluster, so not inherited.
    syncer = sub.add_parser("syncer", help="run the agent that syncs one workload cluster with the hub")
    syncer_sub = syncer.add_subparsers(dest="syncer_command", metavar="COMMAND", required=True)
    run = syncer_sub.add_parser(
        "run", help="sync a cluster with its SyncTarget (outbound connections only)",
        description="Dial the hub with the bootstrap from `spacehub cluster register`, apply the SyncTarget's "
                    "desired set to the cluster of --kubeconfig, keep it there, and report status back. "
                    "HTTPS_PROXY/NO_PROXY are honoured.")
    run.add_argument("--bootstrap", type=Path, required=True, metavar="FILE",
                     help="the syncer bootstrap (spacehub cluster register NAME --bootstrap-out FILE)")
    run.add_argument("--kubeconfig", default=None, metavar="FILE",
                     help="the workload cluster's kubeconfig (default: $KUBECONFIG, else in-cluster)")
    run.add_argument("--context", default=None, help="kubeconfig context (default: current)")
    run.add_argument("--state", type=Path, default=None, metavar="FILE",
                     help=f"local state database (default {DEFAULT_STATE_DIR}/<target>.db)")
    run.add_argument("--hub-url", default=None, metavar="URL",
                     help="reach the hub at URL instead of the bootstrap's (a load balancer, a reverse proxy)")
    run.add_argument("--metrics-listen", default=None, metavar="HOST:PORT",
                     help="serve /metrics (Prometheus), /healthz and /readyz (in sync with the hub) there "
                          "(default: not served)")
    run.add_argument("--no-tunnel", dest="tunnel", action="store_false",
                     help="do not open the pod tunnel: the hub then cannot read this cluster's pods, their logs, "
                          "or exec, attach and port-forward to them (docs/security.md)")
    add_log_options(run)
    run.set_defaults(func=_syncer_run)


LISTEN = re.compile(r"(\[[0-9a-fA-F:]+\]|[^:\s]*):\d{1,5}")  # HOST:PORT, [v6]:PORT or :PORT


def _syncer_run(args: argparse.Namespace) -> int:
    from syncer.runner import SyncerSpec, run_syncers
    from syncer.syncer import SyncerOptions

    configure_logging(args.log_format, args.log_level)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        bootstrap = Bootstrap.load(args.bootstrap).with_hub(args.hub_url)
    except BootstrapError as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.kubeconfig is not None and not Path(args.kubeconfig).is_file():
        raise SystemExit(f"error: kubeconfig {args.kubeconfig} does not exist")
    if args.metrics_listen is not None and not LISTEN.fullmatch(args.metrics_listen):
        raise SystemExit(f"error: --metrics-listen must be HOST:PORT, got {args.metrics_listen!r}")
    state = args.state or DEFAULT_STATE_DIR / f"{bootstrap.sync_target}.db"
    spec = SyncerSpec(bootstrap, args.kubeconfig, args.context)

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        logging.getLogger(__name__).info("syncer %s: hub %s, state %s", bootstrap.sync_target, bootstrap.hub,
                                         state)
        await run_syncers([spec], state, SyncerOptions(tunnel=args.tunnel), metrics_listen=args.metrics_listen)

    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(main())
    return 0
