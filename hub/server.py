"""``spacehub hub serve``: prepare the data dir (PKI, admin credentials) and run the hub on uvicorn."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import uvicorn

from hub.app import HubSettings, build_app
from hub.kubeconfig import ensure_admin
from hub.tls import ensure_pki

log = logging.getLogger(__name__)


def _split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        return host, int(port)
    except ValueError:
        raise SystemExit(f"error: --listen must be HOST:PORT, got {listen!r}") from None


def _client_host(host: str) -> str:
    """The address clients should dial for a listen address (wildcards are not dialable)."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def run_from_args(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    host, port = _split_listen(args.listen)
    dial = _client_host(host)
    dial_hostport = f"[{dial}]:{port}" if ":" in dial else f"{dial}:{port}"
    db_url = args.db or f"sqlite:///{(data_dir / 'spacehub.db').resolve()}"
    ssl: dict[str, str] = {}
    if args.insecure_http:
        server = f"http://{dial_hostport}/clusters/root"
        ca_pem = None
    else:
        pki = ensure_pki(data_dir, sorted({dial, "localhost", "127.0.0.1", "::1", host} - {"0.0.0.0", "::"}))
        ssl = {"ssl_certfile": str(pki.cert_file), "ssl_keyfile": str(pki.key_file)}
        server = f"https://{dial_hostport}/clusters/root"
        ca_pem = pki.ca_cert_pem
    admin = ensure_admin(data_dir, server, ca_pem)
    app, _core = build_app(HubSettings(db_url=db_url, admin_token=admin.token,
                                       compact_horizon=args.compact_horizon,
                                       compact_interval=args.compact_interval,
                                       public_url=server.rsplit("/clusters/", 1)[0], ca_pem=ca_pem,
                                       inventory_space=args.inventory_space,
                                       max_requests_inflight=args.max_requests_inflight,
                                       slice_size=args.placement_slice_size,
                                       sync_ping_interval=args.sync_ping_interval,
                                       syncer_heartbeat_timeout=args.syncer_heartbeat_timeout))
    log.info("spacehub hub serving on %s (data %s, store %s); admin kubeconfig: %s", args.listen, data_dir,
             db_url.split("@")[-1], admin.kubeconfig_file)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=3, **ssl)  # type: ignore[arg-type]
    uvicorn.Server(config).run()
    return 0
