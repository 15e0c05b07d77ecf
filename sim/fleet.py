"""``spacehub sim serve --hub URL --with-syncers``: register the simulated clusters at a hub and run
one syncer per cluster inside the simulator process.

Owns the registration (idempotent across restarts: each cluster's bootstrap is kept in
``<data-dir>/bootstraps/<name>.yaml`` and reused while the hub still knows the cluster) and the labels
given on the command line. The syncers themselves are :mod:`syncer`'s, unchanged: they reach the
hub over HTTPS and their cluster through its kubeconfig, exactly as separate processes would.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import yaml

from kubeclient.files import atomic_write
from kubeclient.kubeconfig import KubeconfigError, access, load, resolve_path
from spaces.client import ClientError, HubClient
from syncer.bootstrap import Bootstrap, BootstrapError
from syncer.runner import SyncerSpec

log = logging.getLogger(__name__)
CLUSTERS = "/placement/v1/clusters"


class FleetError(Exception):
    """Registration failed; the message says what to do."""


def cluster_labels(values: Sequence[str], clusters: Sequence[str]) -> dict[str, dict[str, str]]:
    """``["env=prod", "wec2:region=eu"]`` → labels per cluster: ``KEY=VALUE`` for all, ``CLUSTER:KEY=VALUE``
    for one."""
    labels: dict[str, dict[str, str]] = {name: {} for name in clusters}
    for raw in values:
        scope, colon, pair = raw.partition(":") if ":" in raw.split("=", 1)[0] else ("", "", raw)
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise FleetError(f"--cluster-label {raw}: expected KEY=VALUE or CLUSTER:KEY=VALUE")
        if colon and scope not in labels:
            raise FleetError(f"--cluster-label {raw}: there is no cluster {scope!r}")
        for name in ([scope] if colon else clusters):
            labels[name][key] = value
    return labels


def _hub_client(hub_url: str, hub_kubeconfig: str | None) -> HubClient:
    """The hub at ``hub_url`` with the token and CA of the admin kubeconfig."""
    path = resolve_path(hub_kubeconfig)
    try:
        acc = access(load(path), path.parent)
    except KubeconfigError as exc:
        raise FleetError(f"hub credentials: {exc} (pass --hub-kubeconfig, the hub's admin.kubeconfig)") from None
    return HubClient(hub_url, ca_pem=acc.ca_pem, token=acc.token,
                     insecure_skip_tls_verify=acc.insecure_skip_tls_verify)


def register_fleet(hub_url: str, hub_kubeconfig: str | None, kubeconfigs: dict[str, str],
                   labels: dict[str, dict[str, str]], data_dir: Path) -> list[SyncerSpec]:
    """Register every cluster not yet registered; a syncer spec per cluster."""
    folder = data_dir / "bootstraps"
    folder.mkdir(parents=True, exist_ok=True)
    specs = []
    try:
        with _hub_client(hub_url, hub_kubeconfig) as client:
            known = {item["name"] for item in client.get(CLUSTERS).get("items") or []}
            created = 0
            for name, kubeconfig in kubeconfigs.items():
                path = folder / f"{name}.yaml"
                bootstrap = _saved(path) if name in known else None
                if bootstrap is None:
                    if name in known:
                        raise FleetError(f"cluster {name} is registered at the hub, but its bootstrap is not in "
                                         f"{folder}: delete it there (spacehub cluster delete {name}) or use the "
                                         "data dir that registered it")
                    doc = client.post(CLUSTERS, {"name": name, "labels": labels.get(name, {})}).get("bootstrap")
                    atomic_write(path, yaml.safe_dump(doc, sort_keys=False).encode())
                    bootstrap = Bootstrap.from_dict(doc, f"the hub's answer for {name}")
                    created += 1
                specs.append(SyncerSpec(bootstrap.with_hub(hub_url), kubeconfig))
    except ClientError as exc:
        raise FleetError(f"registering clusters at {hub_url}: {exc}") from None
    log.info("hub %s: %d cluster(s) registered now, %d already", hub_url, created, len(specs) - created)
    return specs


def _saved(path: Path) -> Bootstrap | None:
    try:
        return Bootstrap.load(path)
    except BootstrapError:
        return None
