"""Credentials of the simulated clusters: a token and a kubeconfig per cluster, and who may reach what.

Each cluster gets its own bearer token (kept in ``<data-dir>/cluster-tokens.json``, mode 0600, so
restarts keep handing out the same credentials) and a kubeconfig
``<data-dir>/kubeconfigs/<name>.kubeconfig`` whose server is ``<base>/clusters/<name>`` (the base of the
process serving it, see :mod:`sim.workers`), rewritten at every start so it follows ``--listen``. A
cluster's token reaches only that cluster, as a real cluster's credentials would; the admin token
(``admin.token``, shared with ``kubeclient.kubeconfig``'s conventions) reaches every cluster and the
``/sim/v1`` admin endpoint. Probes are open; WebSocket upgrades (exec, attach, port-forward) are checked like
any request. Under ``--insecure-http`` a request without credentials is let through as admin: kubectl does
not send bearer tokens over plain HTTP, and that mode is for local experiments only.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from apimachinery.errors import StatusError, forbidden, unauthorized
from apiserver.identity import ADMINS, AUTHENTICATED, SCOPE_KEY, Identity
from kubeclient import kubeconfig
from kubeclient.files import atomic_write

TOKENS_FILE = "cluster-tokens.json"
ADMIN = Identity("admin", (ADMINS, AUTHENTICATED))
CLUSTER_ADMIN = Identity("kubernetes-admin", (ADMINS, AUTHENTICATED))
KUBECONFIG_DIR = "kubeconfigs"
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/livez", "/version"})


def kubeconfig_path(data_dir: Path, cluster: str) -> Path:
    return Path(data_dir) / KUBECONFIG_DIR / f"{cluster}.kubeconfig"


def ensure_cluster_tokens(data_dir: Path, clusters: Iterable[str]) -> dict[str, str]:
    """The token of every cluster, minting (and persisting) the missing ones."""
    path = Path(data_dir) / TOKENS_FILE
    tokens: dict[str, str] = {}
    if path.exists():
        loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
        tokens = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
    wanted = list(clusters)
    missing = [name for name in wanted if not tokens.get(name)]
    for name in missing:
        tokens[name] = "sim-" + secrets.token_urlsafe(24)
    if missing or not path.exists():
        atomic_write(path, json.dumps(tokens, indent=2, sort_keys=True).encode())
    elif path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return {name: tokens[name] for name in wanted}


def write_kubeconfigs(data_dir: Path, bases: Mapping[str, str], ca_pem: bytes | None,
                      tokens: dict[str, str]) -> dict[str, Path]:
    """Write every cluster's kubeconfig, its server under the base URL of the process serving it; returns
    their paths by cluster."""
    paths = {}
    for name, token in tokens.items():
        path = kubeconfig_path(data_dir, name)
        kubeconfig.save(path, kubeconfig.build_kubeconfig(f"{bases[name]}{kubeconfig.CLUSTERS_SEGMENT}{name}",
                                                          ca_pem, token, name))
        paths[name] = path
    return paths


async def _send_status(scope: dict[str, Any], send: Any, err: StatusError) -> None:
    """The Status as an HTTP response; a WebSocket upgrade gets it as the response refusing it (or, where the
    server cannot send one, a close before accepting: 403)."""
    body = orjson.dumps(err.to_status())
    prefix = "websocket.http" if scope["type"] == "websocket" else "http"
    if prefix == "websocket.http" and "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": f"{prefix}.response.start", "status": err.code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": f"{prefix}.response.body", "body": body})


class ClusterAuth:
    """ASGI middleware: the admin token reaches everything, a cluster token only its own cluster."""

    def __init__(self, app: Callable[..., Any], admin_token: str, cluster_tokens: dict[str, str], *,
                 allow_anonymous: bool = False) -> None:
        self.app = app
        self.admin_token = admin_token
        self.by_token = {token: name for name, token in cluster_tokens.items()}
        self.allow_anonymous = allow_anonymous

    def _identify(self, token: str) -> str | None:
        """``"admin"``, a cluster name, or None."""
        if hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return "admin"
        return self.by_token.get(token)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        who = "admin" if self.allow_anonymous and not header else None
        if header[:7].lower() == b"bearer ":
            who = self._identify(header[7:].strip().decode(errors="replace"))
        if who is None:
            await _send_status(scope, send, unauthorized())
            return
        if who != "admin":
            own = f"{kubeconfig.CLUSTERS_SEGMENT}{who}"
            path = scope["path"]
            if path != own and not path.startswith(own + "/"):
                await _send_status(scope, send, forbidden(f'the credentials of cluster "{who}" may only access that '
                                                   "cluster"))
                return
        # A cluster's own credential is its administrator's, as a kubeadm cluster's admin kubeconfig is.
        scope[SCOPE_KEY] = ADMIN if who == "admin" else CLUSTER_ADMIN
        await self.app(scope, receive, send)
