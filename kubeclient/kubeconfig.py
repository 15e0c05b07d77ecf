"""Kubeconfig files: building, reading, writing, and the ``/clusters/<space>`` server URL convention.

A space is addressed purely by the path of the kubeconfig ``server`` URL
(``https://<hub>/clusters/<space>``); kubectl prepends that path to every request, so switching
space means rewriting one URL. This module owns that convention, locating the kubeconfig a
command should use (several files in ``$KUBECONFIG`` merged as kubectl merges them, see
:class:`Kubeconfig`), and the hub's own admin credentials (``admin.token``, ``admin.kubeconfig``).
"""

from __future__ import annotations

import base64
import binascii
import copy
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from kubeclient.files import atomic_write
from kubeclient.output import UserError

CLUSTERS_SEGMENT = "/clusters/"
DEFAULT_KUBECONFIG = Path(".spacehub") / "admin.kubeconfig"
ADMIN_TOKEN_FILE = "admin.token"
ADMIN_KUBECONFIG_FILE = "admin.kubeconfig"
ADMIN_NAME = "spacehub"
# The sections kubectl merges by entry name, and the key holding each entry's body.
SECTIONS = {"clusters": "cluster", "contexts": "context", "users": "user"}
# Fields naming files: kubectl resolves them against the directory of the file defining the entry.
_FILE_FIELDS = {"clusters": ("certificate-authority",),
                "users": ("client-certificate", "client-key", "tokenFile")}


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


def kubeconfig_paths(explicit: str | None, default: Path | None = None) -> list[Path]:
    """The kubeconfig files a command reads, in kubectl's precedence.

    ``--kubeconfig`` alone, else every entry of ``$KUBECONFIG`` (duplicates dropped, as client-go
    does), else ``default`` (``./.spacehub/admin.kubeconfig`` unless the caller picks another).
    """
    if explicit:
        return [Path(explicit).expanduser()]
    entries = [e.strip() for e in os.environ.get("KUBECONFIG", "").split(os.pathsep) if e.strip()]
    if entries:
        return [Path(e).expanduser() for e in dict.fromkeys(entries)]
    return [default if default is not None else DEFAULT_KUBECONFIG]


def resolve_path(explicit: str | None, default: Path | None = None) -> Path:
    """The first file of :func:`kubeconfig_paths` (the only one unless ``$KUBECONFIG`` lists several)."""
    return kubeconfig_paths(explicit, default)[0]


def load_selected(explicit: str | None) -> tuple[Path, dict[str, Any]]:
    """The kubeconfig a ``spacehub`` command uses (``--kubeconfig``, ``$KUBECONFIG``, the default).

    Returns the first file read and the merged view, whose file references are absolute, so resolving
    them against that file's directory (as :func:`access` does) finds the file wherever it was named.
    """
    paths = kubeconfig_paths(explicit)
    try:
        merged = load_merged(paths)
    except KubeconfigError as exc:
        if paths == [DEFAULT_KUBECONFIG] and not DEFAULT_KUBECONFIG.exists():
            raise KubeconfigError(f"{exc} (start a hub here with 'spacehub hub serve', or pass "
                                  "--kubeconfig or set KUBECONFIG)") from None
        raise
    return next(iter(merged.files)), merged.view


@dataclass
class Kubeconfig:
    """A kubeconfig as kubectl reads it: one file, or the files of ``$KUBECONFIG`` merged.

    client-go's loading rules: files in the list that do not exist are skipped; a cluster, context or user
    comes whole from the first file that defines its name; ``current-context`` from the first file that
    sets one. In ``view`` file references are absolute, each resolved against the directory of the file
    that defines it. :meth:`save` writes changes back as ``kubectl config`` does.
    """

    files: dict[Path, dict[str, Any]]  # the files that exist, in precedence order, as read
    view: dict[str, Any]
    origins: dict[tuple[str, str], Path]  # (section, entry name) -> the file defining it
    loaded: dict[str, Any]  # ``view`` as read, to tell what changed

    def access(self) -> ClusterAccess:
        return access(self.view)

    def save(self) -> list[Path]:
        """Write each cluster, context or user that changed in ``view`` to its file; return the files written.

        A changed entry goes to the file that defines it, and only its changed fields are written, so the
        rest of the file stays as the user wrote it. A new entry goes beside the current context's entry of
        the same section (its cluster, its user, the context itself): kubectl would create it in the first
        file, but the entries ``kubectl space`` creates are copies of those and reference them, so they
        belong in the same file (a preferences-only file first in ``$KUBECONFIG`` stays untouched).
        ``current-context`` and ``preferences`` are never changed here.
        """
        written: dict[Path, dict[str, Any]] = {}
        for section, key in SECTIONS.items():
            before = {e.get("name"): e for e in self.loaded.get(section) or []}
            for entry in self.view.get(section) or []:
                name = entry.get("name")
                old = before.get(name)
                if old == entry:
                    continue
                dest = self.origins.get((section, name)) or self._new_entry_file(section)
                raw = written.setdefault(dest, copy.deepcopy(self.files[dest]))
                _write_entry(raw, section, key, entry, old, dest.absolute().parent)
        for path, cfg in written.items():
            save(path, cfg)
        return list(written)

    def _new_entry_file(self, section: str) -> Path:
        context_name = self.loaded.get("current-context") or ""
        context = (named(self.loaded, "contexts", context_name) or {}).get("context") or {}
        beside = {"contexts": context_name, "clusters": context.get("cluster"), "users": context.get("user")}
        origin = self.origins.get((section, str(beside[section])))
        if origin is not None:
            return origin
        # kubectl's rule for what is new: the first file that exists (load_merged read at least one).
        return next(iter(self.files))


def load_merged(paths: Sequence[Path]) -> Kubeconfig:
    """Read ``paths`` (see :class:`Kubeconfig`); a lone path must exist, of several at least one."""
    files: dict[Path, dict[str, Any]] = {}
    for path in paths:
        if len(paths) > 1 and not path.exists():
            continue
        files[path] = load(path)
    if not files:
        raise KubeconfigError("none of the kubeconfig files in KUBECONFIG exist: "
                              + ", ".join(str(p) for p in paths))
    view: dict[str, Any] = {section: [] for section in SECTIONS}
    origins: dict[tuple[str, str], Path] = {}
    for path, cfg in files.items():
        base = path.absolute().parent
        if not view.get("current-context") and cfg.get("current-context"):
            view["current-context"] = cfg["current-context"]
        for section, key in SECTIONS.items():
            for entry in cfg.get(section) or []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if not isinstance(name, str) or (section, name) in origins:
                    continue
                origins[(section, name)] = path
                resolved = copy.deepcopy(entry)
                if isinstance(resolved.get(key), dict):
                    for ref in _FILE_FIELDS.get(section, ()):
                        if isinstance(resolved[key].get(ref), str) and resolved[key][ref]:
                            resolved[key][ref] = str(base / Path(resolved[key][ref]).expanduser())
                view[section].append(resolved)
    return Kubeconfig(files=files, view=view, origins=origins, loaded=copy.deepcopy(view))


def _write_entry(raw: dict[str, Any], section: str, key: str, entry: dict[str, Any],
                 old: dict[str, Any] | None, base: Path) -> None:
    """Put ``entry`` (from a merged view) into the file contents ``raw`` of a file in ``base``."""
    body = {f: _file_form(section, f, v, base) for f, v in (entry.get(key) or {}).items()}
    existing = named(raw, section, entry["name"])
    if existing is None:
        raw.setdefault(section, []).append({"name": entry["name"], key: body})
        return
    if old is None or not isinstance(existing.get(key), dict):
        existing[key] = body
        return
    old_body = old.get(key) or {}
    target = existing[key]
    for name, value in body.items():
        if (entry.get(key) or {}).get(name) != old_body.get(name):
            target[name] = value
    for name in old_body:
        if name not in body:
            target.pop(name, None)


def _file_form(section: str, name: str, value: Any, base: Path) -> Any:
    """A file reference as written into a file in ``base``: relative when it lies below ``base``
    (client-go relativizes only without ``..``), else absolute."""
    if name not in _FILE_FIELDS.get(section, ()) or not isinstance(value, str):
        return value
    path = Path(value)
    return str(path.relative_to(base)) if path.is_absolute() and path.is_relative_to(base) else value


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
