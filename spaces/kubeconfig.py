"""Kubeconfig files: building, reading, writing, and the ``/clusters/<space>`` server URL convention.

A space is addressed purely by the path of the kubeconfig ``server`` URL
(``https://<hub>/clusters/<space>``); kubectl prepends that path to every request, so switching
space means rewriting one URL. This module owns that convention, locating the kubeconfig a
command should use, and the hub's own admin credentials (``admin.token``, ``admin.kubeconfig``).
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from spaces.files import atomic_write
from spaces.output import UserError

CLUSTERS_SEGMENT = "/clusters/"
DEFAULT_KUBECONFIG = Path(".spacehub") / "admin.kubeconfig"
ADMIN_TOKEN_FILE = "admin.token"
ADMIN_KUBECONFIG_FILE = "admin.kubeconfig"
ADMIN_NAME = "spacehub"


class KubeconfigError(UserError):
    """A kubeconfig is missing, unreadable or does not say how to reach a server."""


@dataclass(frozen=True)
class ClusterAccess:
    """Everything needed to talk to the server of a kubeconfig's current context."""

    server: str
    ca_pem: bytes | None
    token: str | None
    insecure_skip_tls_verify: bool = False


@dataclass(frozen=True)
class AdminCredentials:
    token: str
    token_file: Path
    kubeconfig_file: Path


def build_kubeconfig(server: str, ca_pem: bytes | None, token: str, name: str, *,
                     insecure_skip_tls_verify: bool = False) -> dict[str, Any]:
    """A single-context kubeconfig whose cluster, user and context are all called ``name``."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode("ascii")
    if insecure_skip_tls_verify:
        cluster["insecure-skip-tls-verify"] = True
    user: dict[str, Any] = {"token": token} if token else {}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


def resolve_path(explicit: str | None, default: Path | None = None) -> Path:
    """The kubeconfig file a command reads and rewrites.

    ``--kubeconfig`` wins, then the first entry of ``$KUBECONFIG`` (the file kubectl would write
    to), then ``default`` (``./.spacehub/admin.kubeconfig`` unless the caller picks another).
    """
    if explicit:
        return Path(explicit).expanduser()
    for entry in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if entry.strip():
            return Path(entry.strip()).expanduser()
    return default if default is not None else DEFAULT_KUBECONFIG


def load_selected(explicit: str | None) -> tuple[Path, dict[str, Any]]:
    """The kubeconfig a ``spacehub`` command uses (``--kubeconfig``, ``$KUBECONFIG``, the default) and its path."""
    path = resolve_path(explicit)
    try:
        return path, load(path)
    except KubeconfigError as exc:
        if path == DEFAULT_KUBECONFIG and not path.exists():
            raise KubeconfigError(f"{exc} (start a hub here with 'spacehub hub serve', or pass "
                                  "--kubeconfig or set KUBECONFIG)") from None
        raise


def load(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KubeconfigError(f"kubeconfig {path} does not exist") from None
    except OSError as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc.strerror}") from None
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"kubeconfig {path} is not valid YAML: {exc}") from None
    if cfg is None:
        return {}
    if not isinstance(cfg, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping")
    return cfg


def save(path: Path | str, cfg: dict[str, Any]) -> None:
    """Replace the file atomically (a concurrent kubectl never reads half a file), mode 0600."""
    # Write through a symlinked kubeconfig to its target instead of replacing the link.
    target = Path(path).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, dump(cfg).encode("utf-8"))


def dump(cfg: dict[str, Any]) -> str:
    return yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False)


def named(cfg: dict[str, Any], section: str, name: str) -> dict[str, Any] | None:
    """The entry called ``name`` in ``clusters``/``users``/``contexts`` (the wrapper with name)."""
    for entry in cfg.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def current_context(cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The current context's name and body."""
    name = cfg.get("current-context")
    if not name:
        raise KubeconfigError("current-context is not set in the kubeconfig")
    entry = named(cfg, "contexts", name)
    if entry is None or not isinstance(entry.get("context"), dict):
        raise KubeconfigError(f'context "{name}" does not exist in the kubeconfig')
    return name, entry["context"]


def current_cluster(cfg: dict[str, Any]) -> dict[str, Any]:
    """The body of the current context's cluster entry (mutating it edits ``cfg``)."""
    context_name, context = current_context(cfg)
    cluster_name = context.get("cluster")
    entry = named(cfg, "clusters", cluster_name) if cluster_name else None
    if entry is None or not isinstance(entry.get("cluster"), dict):
        raise KubeconfigError(f'cluster "{cluster_name}" of context "{context_name}" does not exist '
                              "in the kubeconfig")
    return entry["cluster"]


def current_server(cfg: dict[str, Any]) -> str:
    server = current_cluster(cfg).get("server")
    if not server:
        raise KubeconfigError("the current context's cluster has no server")
    return str(server)


def current_user(cfg: dict[str, Any]) -> dict[str, Any]:
    """The body of the current context's user entry; empty when the context names no user."""
    _, context = current_context(cfg)
    user_name = context.get("user")
    if not user_name:
        return {}
    entry = named(cfg, "users", user_name)
    if entry is None:
        raise KubeconfigError(f'user "{user_name}" does not exist in the kubeconfig')
    return entry.get("user") or {}


def access(cfg: dict[str, Any], base_dir: Path | None = None) -> ClusterAccess:
    """How to reach the current context's server; file references resolve against ``base_dir``.

    ``base_dir`` is the kubeconfig's directory, as kubectl resolves relative paths there.
    """
    base = base_dir or Path.cwd()
    cluster = current_cluster(cfg)
    user = current_user(cfg)
    ca_pem: bytes | None = None
    if cluster.get("certificate-authority-data"):
        try:
            ca_pem = base64.b64decode(cluster["certificate-authority-data"], validate=True)
        except (binascii.Error, ValueError):
            raise KubeconfigError("certificate-authority-data is not valid base64") from None
    elif cluster.get("certificate-authority"):
        ca_pem = _read_ref(base, cluster["certificate-authority"], "certificate-authority").encode()
    token: str | None = None
    if user.get("token"):
        token = str(user["token"])
    elif user.get("tokenFile"):
        token = _read_ref(base, user["tokenFile"], "tokenFile").strip()
    return ClusterAccess(server=current_server(cfg), ca_pem=ca_pem, token=token,
                         insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")))


def _read_ref(base: Path, ref: str, what: str) -> str:
    path = (base / Path(ref).expanduser())
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KubeconfigError(f"cannot read {what} {path}: {exc.strerror}") from None


def split_server(url: str) -> tuple[str, str | None]:
    """``https://h/clusters/a`` → ``("https://h", "a")``; a URL without a space → ``(url, None)``.

    Only a trailing ``/clusters/<name>`` addresses a space, so a hub behind a path prefix
    (``https://h/prefix/clusters/a``) keeps its prefix in the base.
    """
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    space: str | None = None
    index = path.rfind(CLUSTERS_SEGMENT)
    if index >= 0:
        tail = path[index + len(CLUSTERS_SEGMENT):]
        if tail and "/" not in tail:
            space = tail
            path = path[:index]
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")), space


def with_space(url: str, space: str) -> str:
    """The server URL of ``space`` on the hub that ``url`` (a hub or space URL) points at."""
    base, _ = split_server(url)
    return f"{base}{CLUSTERS_SEGMENT}{space}"


def ensure_admin(data_dir: Path, server: str, ca_pem: bytes | None) -> AdminCredentials:
    """Create or reuse ``admin.token`` and make ``admin.kubeconfig`` point at ``server``.

    The token survives restarts. The kubeconfig is rewritten only when it no longer reaches this
    hub with these credentials, so a space selected in it with ``kubectl space use`` is kept.
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    token_file = data_dir / ADMIN_TOKEN_FILE
    token = token_file.read_text(encoding="utf-8").strip() if token_file.exists() else ""
    if not token:
        token = secrets.token_urlsafe(32)
        atomic_write(token_file, (token + "\n").encode("ascii"))
    elif token_file.stat().st_mode & 0o077:
        token_file.chmod(0o600)

    kubeconfig_file = data_dir / ADMIN_KUBECONFIG_FILE
    if not _admin_kubeconfig_current(kubeconfig_file, server, ca_pem, token):
        save(kubeconfig_file, build_kubeconfig(server, ca_pem, token, ADMIN_NAME))
    return AdminCredentials(token=token, token_file=token_file, kubeconfig_file=kubeconfig_file)


def _admin_kubeconfig_current(path: Path, server: str, ca_pem: bytes | None, token: str) -> bool:
    try:
        existing = access(load(path), path.parent)
    except KubeconfigError:
        return False
    return (split_server(existing.server)[0] == split_server(server)[0]
            and existing.ca_pem == ca_pem and existing.token == token)
