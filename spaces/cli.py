"""The spaces' commands: ``spacehub space create|list|delete|kubeconfig`` and the ``kubectl space`` plugin.

Both take space paths (``root:org:team``, ``apiserver.spacepaths``). ``spacehub space`` reads them from root:
``org:team`` and ``root:org:team`` are the same space. ``kubectl space`` reads them as ``kubectl ws`` does,
from the current space: ``team`` is below it, ``..`` its parent, ``:root:org`` (or ``root:org``) absolute.

Both are thin callers of ``spaces.client`` and ``kubeclient.kubeconfig``; printing goes through
``kubeclient.output``.

The plugin moves a kubeconfig between spaces, like kcp's ``kubectl ws``. kubectl runs ``kubectl-space``
from ``$PATH`` with only the plugin's own arguments and the environment, so it reads ``--kubeconfig`` from
its own argv, then ``$KUBECONFIG``, then ``~/.kube/config`` (kubectl's default; ``spacehub`` itself
defaults to the hub's admin kubeconfig). Several files in ``$KUBECONFIG`` are merged and written back as
kubectl does (``kubeconfig.Kubeconfig``).

Entering a space rewrites the ``server`` of the *current context's cluster* to
``<hub>/clusters/<path>``; kubectl then sends every request there without knowing about spaces. A server
written before spaces nested (``/clusters/team-a``) reaches the same space as ``/clusters/root:team-a`` and
is read as that path.

The space left behind is remembered as a context named ``spacehub-previous`` whose cluster (also
``spacehub-previous``) is a copy of the current one at the old URL, in the manner of kcp's
``workspace.kcp.io/previous``. A context was chosen over ``preferences.extensions`` because
``kubectl config`` round-trips contexts faithfully and the user can still
``kubectl --context spacehub-previous …``. ``kubectl space use -`` swaps the two.

A space can be deleted while a kubeconfig still points at it; kubectl then only gets 404s for everything.
``current`` asks the hub whether the current space still exists and ``list`` notices it missing from
the list, and both say how to get out (``use root``, ``use :root:<other>`` and ``use ..`` need nothing from
the space left behind; ``..`` needs its parent).
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from apimachinery.durations import age
from apiserver import spacepaths
from kubeclient import kubeconfig
from kubeclient.output import STRUCTURED_FORMATS, Subparsers, add_output_flag, print_list, run_guarded
from spaces import client as hub_client
from spaces.client import ClientError, HubClient, HubError, client_for

DEFAULT_DELETE_TIMEOUT = 60.0
# How kubectl names a Space in its output ("space.spacehub.io/a created").
SPACE_RESOURCE_NAME = f"space.{hub_client.SPACE_GROUP}"


# --- spacehub space ------------------------------------------------------------------------------

def register_space_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    space = sub.add_parser("space", parents=[common], help="create, list and delete spaces")
    space_sub = space.add_subparsers(dest="space_command", metavar="COMMAND", required=True)

    create = space_sub.add_parser("create", parents=[common], help="create a space (PATH: team, org:team)")
    create.add_argument("name", metavar="PATH")
    create.set_defaults(func=_space_create)

    listing = space_sub.add_parser("list", parents=[common], help="list the spaces in a space (default root)")
    listing.add_argument("parent", nargs="?", default=ROOT, metavar="PATH")
    add_output_flag(listing)
    listing.set_defaults(func=_space_list)

    delete = space_sub.add_parser("delete", parents=[common], help="delete a space and the spaces below it")
    delete.add_argument("name", metavar="PATH")
    delete.add_argument("--wait", action="store_true", help="wait until the space is gone")
    delete.add_argument("--timeout", type=float, default=DEFAULT_DELETE_TIMEOUT, metavar="SECONDS",
                        help="how long --wait waits (default 60)")
    delete.set_defaults(func=_space_delete)

    kcfg = space_sub.add_parser("kubeconfig", parents=[common],
                                help="print a kubeconfig for a space (same credentials as the one used)")
    kcfg.add_argument("name", metavar="PATH")
    kcfg.set_defaults(func=_space_kubeconfig)


def from_root(path: str) -> str:
    """The full path of a ``spacehub space`` argument, which is read from root (``org:team``, ``root:org:team``
    and ``:root:org:team`` are one space)."""
    try:
        return spacepaths.resolve(ROOT, path)
    except ValueError as exc:
        raise ClientError(str(exc)) from None


def _space_create(args: argparse.Namespace) -> int:
    path = from_root(args.name)
    with client_for(getattr(args, "kubeconfig", None)) as client:
        hub_client.create_space(client, path)
    print(f"{SPACE_RESOURCE_NAME}/{spacepaths.base_name(path)} created")
    return 0


def _space_list(args: argparse.Namespace) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        spaces = hub_client.list_spaces(client, from_root(args.parent))
    print_spaces(spaces, args.output)
    return 0


def _space_delete(args: argparse.Namespace) -> int:
    path = from_root(args.name)
    with client_for(getattr(args, "kubeconfig", None)) as client:
        hub_client.delete_space(client, path)
        print(f'{SPACE_RESOURCE_NAME} "{spacepaths.base_name(path)}" deleted')
        if args.wait and not hub_client.wait_space_deleted(client, path, args.timeout):
            raise ClientError(f'timed out after {args.timeout:g}s waiting for space "{path}" to be deleted')
    return 0


def _space_kubeconfig(args: argparse.Namespace) -> int:
    path = from_root(args.name)
    selected, cfg = kubeconfig.load_selected(getattr(args, "kubeconfig", None))
    acc = kubeconfig.access(cfg, selected.parent)
    if path != ROOT:
        with HubClient.from_access(acc) as client:
            space = hub_client.find_space(client, path)
        if space is None:
            raise ClientError(f'space "{path}" does not exist')
        if hub_client.space_phase(space) == "Terminating":
            print(f'Warning: space "{path}" is being deleted', file=sys.stderr)
    cfg_out = kubeconfig.build_kubeconfig(kubeconfig.with_space(acc.server, path), acc.ca_pem,
                                          acc.token or "", path,
                                          insecure_skip_tls_verify=acc.insecure_skip_tls_verify)
    sys.stdout.write(kubeconfig.dump(cfg_out))
    return 0


def print_spaces(space_list: dict[str, Any], output: str | None, out: TextIO | None = None) -> None:
    now = dt.datetime.now(dt.UTC)
    if output not in STRUCTURED_FORMATS:  # names and tables sorted by name; documents as the server sent them
        space_list = {**space_list, "items": sorted(space_list.get("items") or [],
                                                    key=lambda s: s.get("metadata", {}).get("name", ""))}
    print_list(space_list, output, resource_name=SPACE_RESOURCE_NAME, header=["NAME", "PHASE", "AGE"],
               row=lambda s: [s["metadata"]["name"], hub_client.space_phase(s),
                              age(s["metadata"].get("creationTimestamp"), now)],
               name=lambda s: s["metadata"]["name"], empty="No resources found", out=out)


# --- kubectl space -------------------------------------------------------------------------------

PREVIOUS = "spacehub-previous"
ROOT = hub_client.ROOT_SPACE
PLUGIN_DEFAULT_KUBECONFIG = Path("~/.kube/config")
DEFAULT_READY_TIMEOUT = 60.0

# Raises SpaceUnavailable (or a ClientError) unless the space at a full path can be entered; injected so
# tests and other callers can decide existence without a running hub.
SpaceCheck = Callable[[str], None]


class SpaceUnavailable(ClientError):
    """The target space does not exist or cannot be entered."""


class SpaceMissing(SpaceUnavailable):
    """The space does not exist (or no longer does)."""


class SpaceTerminating(SpaceUnavailable):
    """The space is being deleted."""


def gone_message(name: str) -> str:
    return f"the current space \"{name}\" no longer exists; run 'kubectl space use {ROOT}'"


def resolve(current: str, target: str) -> str:
    """The full path ``target`` names from ``current`` (``spacepaths.resolve``). Checked before a path goes into a
    URL, so that something like ``../x`` can never point the kubeconfig anywhere but at a space."""
    try:
        return spacepaths.resolve(current, target)
    except ValueError as exc:
        raise SpaceUnavailable(str(exc)) from None


def use_space(cfg: dict[str, Any], target: str, check: SpaceCheck) -> str:
    """Point the current context's cluster at ``target`` and return the path of the space now in use.

    ``target`` is a path (``spacepaths.resolve``: relative to the current space, ``..`` for its parent,
    absolute with ``:root`` or ``root``), or ``-`` for the previous space. ``cfg`` is changed in place only
    after ``check`` accepted the target; the root space needs no check.
    """
    cluster = kubeconfig.current_cluster(cfg)
    server = kubeconfig.current_server(cfg)
    base, _ = kubeconfig.split_server(server)

    if target == "-":
        new_server = previous_server(cfg)
        if new_server is None:
            raise SpaceUnavailable("no previous space to go back to")
        previous_base, previous = kubeconfig.split_server(new_server)
        if previous_base != base:
            raise SpaceUnavailable(f"the previous space is on another server ({previous_base}), "
                                   f"not {base}")
        name = ROOT if previous is None else resolve(ROOT, spacepaths.full_path(previous))
        if previous is None:
            new_server = kubeconfig.with_space(base, ROOT)
    else:
        name = resolve(_here(cfg), target)
        new_server = kubeconfig.with_space(base, name)

    if name != ROOT:
        check(name)
    if new_server != server:
        _remember_previous(cfg, server)
        cluster["server"] = new_server
    return name


def previous_server(cfg: dict[str, Any]) -> str | None:
    entry = kubeconfig.named(cfg, "clusters", PREVIOUS)
    if entry is None:
        return None
    server = (entry.get("cluster") or {}).get("server")
    return str(server) if server else None


def _remember_previous(cfg: dict[str, Any], server: str) -> None:
    context_name, context = kubeconfig.current_context(cfg)
    if context_name == PREVIOUS or context.get("cluster") == PREVIOUS:
        # The user is working *in* the remembered context; overwriting it would also move the
        # cluster being switched, so this one switch is simply not remembered.
        return
    cluster = copy.deepcopy(kubeconfig.current_cluster(cfg))
    cluster["server"] = server
    remembered = {**copy.deepcopy(context), "cluster": PREVIOUS}
    _put(cfg, "clusters", PREVIOUS, "cluster", cluster)
    _put(cfg, "contexts", PREVIOUS, "context", remembered)


def _put(cfg: dict[str, Any], section: str, name: str, key: str, body: dict[str, Any]) -> None:
    entry = kubeconfig.named(cfg, section, name)
    if entry is None:
        cfg.setdefault(section, []).append({"name": name, key: body})
    else:
        entry[key] = body


def current_space(cfg: dict[str, Any]) -> tuple[str, str]:
    """The current space's full path and server URL."""
    server = kubeconfig.current_server(cfg)
    _, name = kubeconfig.split_server(server)
    if name is None:
        raise SpaceUnavailable(f"the current server {server} is not a space URL (…/clusters/<path>); "
                               f"run 'kubectl space use {ROOT}'")
    return spacepaths.full_path(name), server


def remote_check(client: HubClient) -> SpaceCheck:
    """A SpaceCheck that asks the hub for the Space object in the space's parent."""

    def check(path: str) -> None:
        space = hub_client.find_space(client, path)
        if space is None:
            raise SpaceMissing(f'space "{path}" does not exist')
        if hub_client.space_phase(space) == "Terminating":
            raise SpaceTerminating(f'space "{path}" is being deleted')

    return check


# --- commands ------------------------------------------------------------------------------------

def _cmd_use(args: argparse.Namespace) -> int:
    config = _load(args)
    with HubClient.from_access(config.access()) as client:
        name = use_space(config.view, args.name, remote_check(client))
    config.save()
    print(f'Current space is "{name}".')
    return 0


def _cmd_current(args: argparse.Namespace) -> int:
    config = _load(args)
    name, server = current_space(config.view)
    if name != ROOT:  # root always exists; elsewhere only the hub knows whether the space is still there
        with HubClient.from_access(config.access()) as client:
            try:
                remote_check(client)(name)
            except SpaceMissing:
                raise SpaceUnavailable(gone_message(name)) from None
            except SpaceTerminating as exc:
                # Still served until its contents are gone: say so, but it is still where kubectl goes.
                print(f"Warning: {exc}", file=sys.stderr)
            except HubError as exc:
                # Someone who may not read Spaces in its parent cannot be told; where they are is still known.
                if exc.code != 403:
                    raise
    print(f"{name} {server}" if args.verbose else name)
    return 0


def _here(cfg: dict[str, Any]) -> str:
    """The current space's full path; root when the server is the hub's own URL, not a space's."""
    _, name = kubeconfig.split_server(kubeconfig.current_server(cfg))
    return ROOT if name is None else spacepaths.full_path(name)


def _cmd_list(args: argparse.Namespace) -> int:
    config = _load(args)
    here = _here(config.view)
    parent = here if args.path is None else resolve(here, args.path)
    with HubClient.from_access(config.access()) as client:
        try:
            spaces = hub_client.list_spaces(client, parent)
        except HubError as exc:
            if exc.code != 404 or args.path is not None or here == ROOT:
                raise
            # The current space is gone: listing is how one finds where to go, so list root, where
            # `use root` leads, after saying so.
            print(f"Warning: {gone_message(here)}", file=sys.stderr)
            spaces = hub_client.list_spaces(client, ROOT)
    print_spaces(spaces, args.output)
    return 0


def _cmd_tree(args: argparse.Namespace) -> int:
    config = _load(args)
    here = _here(config.view)
    top = here if args.path is None else resolve(here, args.path)
    with HubClient.from_access(config.access()) as client:

        def children(path: str) -> list[str]:
            try:
                listing = hub_client.list_spaces(client, path)
            except HubError as exc:
                # A space below the top that one may not enter, or that went away meanwhile, is a leaf.
                if path == top or exc.code not in (403, 404):
                    raise
                return []
            return sorted(str(item["metadata"]["name"]) for item in listing.get("items") or [])

        sys.stdout.write("".join(line + "\n" for line in render_tree(top, children)))
    return 0


def render_tree(top: str, children: Callable[[str], list[str]]) -> list[str]:
    """The spaces below ``top`` drawn as ``kubectl ws tree`` draws them: ``.``, then ``top``, then each child by
    name under its parent."""
    lines = [".", f"└── {top}"]

    def walk(path: str, indent: str) -> None:
        names = children(path)
        for index, name in enumerate(names):
            last = index == len(names) - 1
            lines.append(f"{indent}{'└── ' if last else '├── '}{name}")
            walk(f"{path}{spacepaths.SEPARATOR}{name}", indent + ("    " if last else "│   "))

    walk(top, "    ")
    return lines


def _cmd_create(args: argparse.Namespace) -> int:
    config = _load(args)
    path = resolve(_here(config.view), args.name)
    with HubClient.from_access(config.access()) as client:
        hub_client.create_space(client, path)
        print(f"{SPACE_RESOURCE_NAME}/{spacepaths.base_name(path)} created")
        if not args.enter:
            return 0
        if hub_client.wait_space_ready(client, path, args.timeout) is None:
            raise ClientError(f'space "{path}" did not become Ready within {args.timeout:g}s')
        name = use_space(config.view, path, remote_check(client))
    config.save()
    print(f'Current space is "{name}".')
    return 0


def _load(args: argparse.Namespace) -> kubeconfig.Kubeconfig:
    return kubeconfig.load_merged(kubeconfig.kubeconfig_paths(
        getattr(args, "kubeconfig", None), default=PLUGIN_DEFAULT_KUBECONFIG.expanduser()))


def build_plugin_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--kubeconfig", default=argparse.SUPPRESS, metavar="PATH",
                        help="kubeconfig to use and rewrite (default: $KUBECONFIG, else ~/.kube/config)")
    parser = argparse.ArgumentParser(prog="kubectl space", parents=[common],
                                     description="Switch between, list, draw and create spacehub spaces.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    use = sub.add_parser("use", parents=[common],
                         help="enter a space: NAME below this one, :root:a:b absolute, .. the parent, - the previous")
    use.add_argument("name", metavar="PATH|..|-")
    use.set_defaults(func=_cmd_use)

    current = sub.add_parser("current", parents=[common], help="print the current space")
    current.add_argument("-v", "--verbose", action="store_true", help="also print the server URL")
    current.set_defaults(func=_cmd_current)

    listing = sub.add_parser("list", parents=[common], help="list the spaces in a space (default: this one)")
    listing.add_argument("path", nargs="?", metavar="PATH")
    add_output_flag(listing)
    listing.set_defaults(func=_cmd_list)

    tree = sub.add_parser("tree", parents=[common], help="draw the spaces below a space (default: this one)")
    tree.add_argument("path", nargs="?", metavar="PATH")
    tree.set_defaults(func=_cmd_tree)

    create = sub.add_parser("create", parents=[common], help="create a space (NAME below this one, or a PATH)")
    create.add_argument("name", metavar="PATH")
    create.add_argument("--enter", action="store_true", help="enter the space once it is Ready")
    create.add_argument("--timeout", type=float, default=DEFAULT_READY_TIMEOUT, metavar="SECONDS",
                        help="how long --enter waits for the space to be Ready (default 60)")
    create.set_defaults(func=_cmd_create)

    # A bare `kubectl space` says where you are, like `kubectl ws .`.
    parser.set_defaults(func=_cmd_current, verbose=False)
    return parser


def kubectl_space_main(argv: Sequence[str] | None = None) -> int:
    args = build_plugin_parser().parse_args(argv)
    return run_guarded(lambda: args.func(args))
