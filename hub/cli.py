"""The ``spacehub`` command line: argument parsing and printing, nothing else.

Every command is a thin caller of ``hub.server``, ``spaces.client`` or ``spaces.kubeconfig``. Command
groups register themselves through :data:`COMMAND_GROUPS`; user errors (a missing kubeconfig, an
error ``Status`` from the server, an unreachable hub) are printed the way kubectl prints them and
exit with status 1, never as a traceback.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from hub.up import register_up_command
from placement.cli import register_placement_commands
from spaces import client as hub_client
from spaces import kubeconfig
from spaces.client import ClientError, HubClient
from spaces.kubeconfig import KubeconfigError
from syncer.agent.cli import register_syncer_commands
from syncer.sim.cli import register_sim_commands

DEFAULT_LISTEN = "127.0.0.1:6443"
DEFAULT_DATA_DIR = Path(".spacehub")
DEFAULT_COMPACT_HORIZON = 10000
DEFAULT_COMPACT_INTERVAL = 60.0
DEFAULT_DELETE_TIMEOUT = 60.0
OUTPUT_FORMATS = ("json", "yaml", "name")
# How kubectl names a Space in its output ("space.spacehub.io/a created").
SPACE_RESOURCE_NAME = f"space.{hub_client.SPACE_GROUP}"

# ``add_parser`` of an argparse subcommand set; argparse keeps the type itself private.
Subparsers = Any
# Adds one top-level command tree. ``common`` carries the flags every command accepts (such as
# ``--kubeconfig``) and is meant to be passed as ``parents=[common]`` to each new parser, so those
# flags work before and after the subcommand, as with kubectl.
Registrar = Callable[[Subparsers, argparse.ArgumentParser], None]


# --- hub -----------------------------------------------------------------------------------------

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
    serve.add_argument("--inventory-space", default="inventory", metavar="NAME",
                       help="the space holding SyncTargets and Locations, created on first start "
                            "(default: inventory)")
    serve.add_argument("--max-requests-inflight", type=int, default=400, metavar="N",
                       help="concurrent non-watch requests served before answering 429 (0: no limit; default 400)")
    serve.add_argument("--placement-slice-size", type=int, default=500, metavar="N",
                       help="destinations per SinglePlacementSlice before a placement's slice is split "
                            "(default 500)")
    serve.add_argument("--sync-ping-interval", type=float, default=15.0, metavar="SECONDS",
                       help="seconds of silence after which a syncer stream sends a PING, so proxies keep it "
                            "open and syncers notice a dead hub (default 15)")
    serve.add_argument("--syncer-heartbeat-timeout", type=float, default=60.0, metavar="SECONDS",
                       help="a SyncTarget whose syncer sent no heartbeat for this long turns Ready=False; "
                            "nothing is deleted (default 60)")
    serve.set_defaults(func=_hub_serve)


def _hub_serve(args: argparse.Namespace) -> int:
    # Imported here so that client commands start fast and do not need the server's dependencies.
    from hub.server import run_from_args

    return run_from_args(args)


# --- space ---------------------------------------------------------------------------------------

def register_space_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    space = sub.add_parser("space", parents=[common], help="create, list and delete spaces")
    space_sub = space.add_subparsers(dest="space_command", metavar="COMMAND", required=True)

    create = space_sub.add_parser("create", parents=[common], help="create a space")
    create.add_argument("name")
    create.set_defaults(func=_space_create)

    listing = space_sub.add_parser("list", parents=[common], help="list spaces")
    add_output_flag(listing)
    listing.set_defaults(func=_space_list)

    delete = space_sub.add_parser("delete", parents=[common], help="delete a space")
    delete.add_argument("name")
    delete.add_argument("--wait", action="store_true", help="wait until the space is gone")
    delete.add_argument("--timeout", type=float, default=DEFAULT_DELETE_TIMEOUT, metavar="SECONDS",
                        help="how long --wait waits (default 60)")
    delete.set_defaults(func=_space_delete)

    kcfg = space_sub.add_parser("kubeconfig", parents=[common],
                                help="print a kubeconfig for a space (same credentials as the one used)")
    kcfg.add_argument("name")
    kcfg.set_defaults(func=_space_kubeconfig)


def _space_create(args: argparse.Namespace) -> int:
    with client_from_args(args) as client:
        hub_client.create_space(client, args.name)
    print(f"{SPACE_RESOURCE_NAME}/{args.name} created")
    return 0


def _space_list(args: argparse.Namespace) -> int:
    with client_from_args(args) as client:
        spaces = hub_client.list_spaces(client)
    print_spaces(spaces, args.output)
    return 0


def _space_delete(args: argparse.Namespace) -> int:
    with client_from_args(args) as client:
        hub_client.delete_space(client, args.name)
        print(f'{SPACE_RESOURCE_NAME} "{args.name}" deleted')
        if args.wait and not hub_client.wait_space_deleted(client, args.name, args.timeout):
            raise ClientError(f'timed out after {args.timeout:g}s waiting for space "{args.name}" '
                              "to be deleted")
    return 0


def _space_kubeconfig(args: argparse.Namespace) -> int:
    path, cfg = load_kubeconfig(args)
    acc = kubeconfig.access(cfg, path.parent)
    with HubClient.from_access(acc) as client:
        space = hub_client.find_space(client, args.name)
    if space is None:
        raise ClientError(f'space "{args.name}" does not exist')
    if hub_client.space_phase(space) == "Terminating":
        print(f'Warning: space "{args.name}" is being deleted', file=sys.stderr)
    cfg_out = kubeconfig.build_kubeconfig(kubeconfig.with_space(acc.server, args.name), acc.ca_pem,
                                          acc.token or "", args.name,
                                          insecure_skip_tls_verify=acc.insecure_skip_tls_verify)
    sys.stdout.write(kubeconfig.dump(cfg_out))
    return 0


# --- helpers shared by command groups (and by the kubectl plugin) -------------------------------

def add_output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default=None,
                        help="output format (default: a table)")


def load_kubeconfig(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    explicit = getattr(args, "kubeconfig", None)
    path = kubeconfig.resolve_path(explicit)
    try:
        return path, kubeconfig.load(path)
    except KubeconfigError as exc:
        if path == kubeconfig.DEFAULT_KUBECONFIG and not path.exists():
            raise KubeconfigError(f"{exc} (start a hub here with 'spacehub hub serve', or pass "
                                  "--kubeconfig or set KUBECONFIG)") from None
        raise


def client_from_args(args: argparse.Namespace) -> HubClient:
    """A client for the hub of the kubeconfig selected by ``--kubeconfig``/``$KUBECONFIG``."""
    path, cfg = load_kubeconfig(args)
    return HubClient.from_kubeconfig(cfg, path.parent)


def print_spaces(space_list: dict[str, Any], output: str | None, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    items = sorted(space_list.get("items") or [], key=lambda s: s.get("metadata", {}).get("name", ""))
    if output == "json":
        out.write(json.dumps(space_list, indent=4) + "\n")
    elif output == "yaml":
        out.write(yaml.safe_dump(space_list, sort_keys=False, default_flow_style=False))
    elif output == "name":
        for item in items:
            out.write(f"{SPACE_RESOURCE_NAME}/{item['metadata']['name']}\n")
    elif not items:
        print("No resources found", file=sys.stderr)
    else:
        now = dt.datetime.now(dt.UTC)
        rows = [[s["metadata"]["name"], hub_client.space_phase(s),
                 age(s["metadata"].get("creationTimestamp"), now)] for s in items]
        out.write(format_table(["NAME", "PHASE", "AGE"], rows))


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded like kubectl's tabwriter: each as wide as its widest cell plus three spaces."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [str(cell).ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def age(timestamp: str | None, now: dt.datetime) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        created = dt.datetime.fromisoformat(timestamp)
    except ValueError:
        return "<unknown>"
    if created.tzinfo is None:
        created = created.replace(tzinfo=dt.UTC)
    return human_duration(now - created)


def human_duration(delta: dt.timedelta) -> str:
    """The same rounding as kubectl's AGE column (apimachinery ``duration.HumanDuration``)."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def run_guarded(command: Callable[[], int]) -> int:
    """Run a command, printing user errors as one kubectl-style line (exit 1) instead of a traceback."""
    try:
        return command()
    except ClientError as exc:
        print(exc.render(), file=sys.stderr)
    except KubeconfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into `head` and the like; nothing left to say.
        sys.stderr.close()
    return 1


# --- command registry ----------------------------------------------------------------------------

# Top-level command groups, in the order ``--help`` lists them. Later work (``cluster``,
# ``placement``, ``sim``, ``syncer``) adds its own registration function to this list; each leaf
# command sets ``func`` (taking the parsed namespace, returning the exit status) with set_defaults.
COMMAND_GROUPS: list[Registrar] = [
    register_hub_commands,
    register_space_commands,
    register_placement_commands,
    register_sim_commands,
    register_syncer_commands,
    register_up_command,
]


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS keeps a subcommand from resetting a value given before it.
    common.add_argument("--kubeconfig", default=argparse.SUPPRESS, metavar="PATH",
                        help="kubeconfig to use (default: $KUBECONFIG, else ./.spacehub/admin.kubeconfig)")
    parser = argparse.ArgumentParser(prog="spacehub", parents=[common],
                                     description="Kubernetes-compatible spaces with multi-cluster placement.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in COMMAND_GROUPS:
        register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_guarded(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
