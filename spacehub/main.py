"""The ``spacehub`` command tree: each package contributes its command group; this module only assembles them.

Every command is a thin caller of its package. User errors (a missing kubeconfig, an error ``Status``
from the server, an unreachable hub) are printed the way kubectl prints them and exit with status 1,
never as a traceback (``kubeclient.output.run_guarded``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from hub.cli import register_hub_commands
from hub.users_cli import register_user_commands
from inventory.cli import register_cluster_commands
from kubeclient.output import Subparsers, run_guarded
from kubeclient.version import spacehub_version
from placement.cli import register_placement_commands
from placement.rollout_cli import register_rollout_commands
from sim.cli import register_sim_commands
from spacehub.up import register_up_command
from spaces.cli import register_space_commands
from syncer.cli import register_syncer_commands

Registrar = Callable[[Subparsers, argparse.ArgumentParser], None]
COMPLETION_SHELLS = ("bash", "zsh")

# Top-level command groups, in the order ``--help`` lists them. Each leaf command sets ``func`` (taking
# the parsed namespace, returning the exit status) with set_defaults.
COMMAND_GROUPS: list[Registrar] = [
    register_hub_commands,
    register_space_commands,
    register_placement_commands,
    register_rollout_commands,
    register_cluster_commands,
    register_user_commands,
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
    parser.add_argument("--version", action="version", version=f"spacehub {spacehub_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in COMMAND_GROUPS:
        register(sub, common)
    completion = sub.add_parser("completion", help="print the shell completion script (bash or zsh)",
                                description="Print a completion script for SHELL, e.g. "
                                            "source <(spacehub completion bash), or for zsh save it as _spacehub "
                                            "in a directory of $fpath.")
    completion.add_argument("shell", choices=COMPLETION_SHELLS, metavar="SHELL", help="bash or zsh")
    completion.set_defaults(func=lambda args: print_completion(parser, args.shell))
    return parser


def print_completion(parser: argparse.ArgumentParser, shell: str) -> int:
    import shtab  # only for this command

    sys.stdout.write(shtab.complete(parser, shell=shell))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_guarded(lambda: args.func(args))
