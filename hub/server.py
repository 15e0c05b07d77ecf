"""``spacehub hub serve``: prepare the data dir (PKI, admin credentials) and run the hub on uvicorn."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import uvicorn

from hub.app import HubSettings, build_app
from spaces.kubeconfig import ensure_admin
from spaces.server.endpoint import prepare_endpoint
from spaces.server.gcpolicy import tune_for_long_lived_heap

log = logging.getLogger(__name__)


def run_from_args(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    endpoint = prepare_endpoint(data_dir, args.listen, args.insecure_http)
    db_url = args.db or f"sqlite:///{(data_dir / 'spacehub.db').resolve()}"
    admin = ensure_admin(data_dir, f"{endpoint.base_url}/clusters/root", endpoint.ca_pem)
    app, _core = build_app(HubSettings(db_url=db_url, admin_token=admin.token,
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
    uvicorn.Server(endpoint.uvicorn_config(app)).run()
    return 0
