"""``spacehub hub serve``: prepare the data dir (PKI, admin credentials) and run the hub on uvicorn."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from apiserver.server.certfiles import CertificateFiles
from apiserver.server.endpoint import prepare_endpoint
from apiserver.server.gcpolicy import tune_for_long_lived_heap
from apiserver.server.heaptrim import start_heap_trimmer
from hub.app import HubSettings, build_app
from kubeclient.kubeconfig import ensure_admin
from kubeclient.logs import configure_logging

log = logging.getLogger(__name__)


def run_from_args(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # kube spaces' proxied requests, one line each otherwise
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    endpoint = prepare_endpoint(data_dir, args.listen, args.insecure_http, advertise_url=args.advertise_url,
                                tls_sans=args.tls_san, certificate=certificate_files(args))
    db_url = args.db or f"sqlite:///{(data_dir / 'spacehub.db').resolve()}"
    admin = ensure_admin(data_dir, f"{endpoint.base_url}/clusters/root", endpoint.ca_pem)
    app, core = build_app(HubSettings(db_url=db_url, admin_token=admin.token,
                                       compact_horizon=args.compact_horizon,
                                       compact_interval=args.compact_interval,
                                       public_url=endpoint.base_url, ca_pem=endpoint.ca_pem,
                                       inventory_space=args.inventory_space,
                                       max_requests_inflight=args.max_requests_inflight,
                                       slice_size=args.placement_slice_size,
                                       sync_ping_interval=args.sync_ping_interval,
                                       syncer_heartbeat_timeout=args.syncer_heartbeat_timeout))
    log.info("spacehub hub serving on %s (data %s, store %s); admin kubeconfig: %s", args.listen, data_dir,
             db_url.split("@")[-1], admin.kubeconfig_file)
    tune_for_long_lived_heap()
    start_heap_trimmer()
    endpoint.server(app, on_shutdown=core.drain).run()
    return 0


def certificate_files(args: argparse.Namespace) -> CertificateFiles | None:
    """The operator's certificate, when ``--tls-cert-file`` names one (with its key, and no generated SANs)."""
    if args.tls_cert_file is None and args.tls_key_file is None:
        if args.tls_ca_file is not None:
            raise SystemExit("error: --tls-ca-file goes with --tls-cert-file (the generated CA is used otherwise)")
        return None
    if args.tls_cert_file is None or args.tls_key_file is None:
        raise SystemExit("error: --tls-cert-file and --tls-key-file go together")
    if args.tls_san:
        raise SystemExit("error: --tls-san names what the generated certificate covers; with --tls-cert-file the "
                         "certificate's own names are used")
    if args.insecure_http:
        raise SystemExit("error: --insecure-http serves no certificate")
    return CertificateFiles(args.tls_cert_file, args.tls_key_file, args.tls_ca_file)
