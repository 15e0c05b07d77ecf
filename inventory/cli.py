"""``spacehub cluster register|list|delete|cordon|drain|uncordon|taint``: thin callers of the placement REST API.

Owns argument parsing and printing only. Every command reaches the hub through the kubeconfig like the
other ``spacehub`` commands and calls ``/placement/v1/clusters``; the syncer manifest for ``-o manifest``
is built by :mod:`inventory.syncer_manifest`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from apimachinery.durations import age
from inventory import syncer_manifest
from inventory.taints import parse_taint_args
from kubeclient.files import atomic_write
from kubeclient.output import Subparsers, add_output_flag, print_list
from spaces.client import ClientError, client_for

API = "/placement/v1"
CLUSTER_RESOURCE_NAME = "synctarget.edge.kubestellar.io"
REGISTER_FORMATS = ("bootstrap", "manifest")


def register_cluster_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    cluster = sub.add_parser("cluster", parents=[common], help="register, list and delete clusters (SyncTargets)")
    cluster_sub = cluster.add_subparsers(dest="cluster_command", metavar="COMMAND", required=True)

    register = cluster_sub.add_parser(
        "register", parents=[common], help="create a cluster's SyncTarget and Location and its syncer credential",
        description="Create SyncTarget and Location NAME in the inventory space and print the syncer "
                    "bootstrap (hub URL, CA, credential) as YAML, or with -o manifest the Kubernetes objects "
                    "that run the syncer in the cluster (kubectl apply -f -): Namespace, ServiceAccount, "
                    "ClusterRole and binding, the bootstrap in a Secret, and a one-replica Deployment.")
    register.add_argument("name", metavar="NAME")
    register.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                          help="a label of the SyncTarget and Location (repeatable)")
    _add_bootstrap_output(register)
    register.set_defaults(func=_cluster_register)

    rotate = cluster_sub.add_parser(
        "rotate-credentials", parents=[common], help="issue a new syncer credential; the old one expires",
        description="Mint a new credential for cluster NAME's syncer and print its bootstrap (or, with -o "
                    "manifest, the objects that run the syncer with it); the earlier credentials keep working for "
                    "--grace seconds, then the hub answers them 401.")
    rotate.add_argument("name", metavar="NAME")
    rotate.add_argument("--grace", type=float, default=600.0, metavar="SECONDS",
                        help="how long the earlier credentials keep working (default 600)")
    _add_bootstrap_output(rotate)
    rotate.set_defaults(func=_cluster_rotate_credentials)

    listing = cluster_sub.add_parser("list", parents=[common], help="list clusters")
    add_output_flag(listing)
    listing.set_defaults(func=_cluster_list)

    delete = cluster_sub.add_parser("delete", parents=[common],
                                    help="delete a cluster's SyncTarget and Location and revoke its credential")
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(func=_cluster_delete)

    for verb, help_text in (
            ("cordon", "no new placement reaches the cluster and it takes no new divided replicas"),
            ("drain", "cordon, then empty it: each object leaves once its other clusters run it Ready"),
            ("uncordon", "undo cordon or drain: the cluster is placed on again")):
        command = cluster_sub.add_parser(verb, parents=[common], help=help_text)
        command.add_argument("name", metavar="NAME")
        command.set_defaults(func=_cluster_schedule, verb=verb)
    _register_taint_command(cluster_sub, common)


def _add_bootstrap_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", choices=REGISTER_FORMATS, default="bootstrap",
                        help="bootstrap: the syncer bootstrap YAML (default); manifest: a YAML stream to "
                             "kubectl apply to the cluster, running the syncer there with the bootstrap")
    parser.add_argument("--bootstrap-out", "--out", dest="bootstrap_out", type=Path, default=None,
                        metavar="FILE", help="write the output to FILE (mode 0600: it holds the credential) "
                                             "instead of stdout")
    parser.add_argument("--syncer-namespace", default=syncer_manifest.DEFAULT_NAMESPACE, metavar="NAMESPACE",
                        help="with -o manifest: the namespace of the syncer (default: %(default)s)")
    parser.add_argument("--syncer-image", default=None, metavar="IMAGE",
                        help="with -o manifest: the syncer's image (default: "
                             f"{syncer_manifest.IMAGE_REPOSITORY}:<this spacehub's version>)")


def parse_labels(pairs: Sequence[str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ClientError(f'invalid --label "{pair}": expected KEY=VALUE')
        labels[key] = value
    return labels


def _cluster_register(args: argparse.Namespace) -> int:
    labels = parse_labels(args.label)
    _check_bootstrap_output(args)  # refuse a bad flag before anything is registered
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.post(f"{API}/clusters", {"name": args.name, "labels": labels})
    _write_bootstrap(args, result.get("bootstrap") or {}, "registered")
    return 0


def _cluster_rotate_credentials(args: argparse.Namespace) -> int:
    if args.grace < 0:
        raise ClientError("--grace must not be negative")
    _check_bootstrap_output(args)
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.post(f"{API}/clusters/{quote(args.name, safe='')}:rotate-credentials",
                             {"graceSeconds": args.grace})
    _write_bootstrap(args, result.get("bootstrap") or {},
                     f"given a new credential (the earlier ones stop in {args.grace:g}s)")
    return 0


def _check_bootstrap_output(args: argparse.Namespace) -> None:
    if args.output == "manifest":
        try:
            syncer_manifest.check_namespace(args.syncer_namespace)
        except ValueError as exc:
            raise ClientError(f"--syncer-namespace: {exc}") from None


def _write_bootstrap(args: argparse.Namespace, bootstrap: dict[str, Any], done: str) -> None:
    if args.output == "manifest":
        objects = syncer_manifest.syncer_manifest(bootstrap, namespace=args.syncer_namespace,
                                                  image=args.syncer_image or syncer_manifest.default_image())
        text, what = syncer_manifest.render(objects), "syncer manifest"
    else:
        text, what = syncer_manifest.bootstrap_yaml(bootstrap), "syncer bootstrap"
    if args.bootstrap_out is None:
        print(f'cluster "{args.name}" {done}', file=sys.stderr)
        sys.stdout.write(text)
        return
    try:
        atomic_write(args.bootstrap_out, text.encode())  # mode 0600: it holds a credential
    except OSError as exc:
        raise ClientError(f"cannot write {args.bootstrap_out}: {exc.strerror or exc}") from None
    print(f'cluster "{args.name}" {done}; {what} written to {args.bootstrap_out}')


def _cluster_list(args: argparse.Namespace) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.get(f"{API}/clusters")
    print_clusters(result, args.output)
    return 0


def print_clusters(result: dict[str, Any], output: str | None, out: TextIO | None = None) -> None:
    now = dt.datetime.now(dt.UTC)
    print_list(result, output, resource_name=CLUSTER_RESOURCE_NAME,
               header=["NAME", "LABELS", "READY", "LAST-HEARTBEAT"],
               row=lambda c: [c["name"], ",".join(f"{k}={v}" for k, v in sorted((c.get("labels") or {}).items()))
                              or "<none>", (c.get("readyCondition") or {}).get("status") or "Unknown",
                              age(c["lastHeartbeat"], now) if c.get("lastHeartbeat") else "<never>"],
               name=lambda c: c["name"], empty="No clusters registered", out=out)


def _cluster_schedule(args: argparse.Namespace) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        client.post(f"{API}/clusters/{quote(args.name, safe='')}:{args.verb}", {})
    done = {"cordon": "cordoned", "drain": "draining", "uncordon": "uncordoned"}[args.verb]
    print(f'cluster "{args.name}" {done}')
    return 0


def _cluster_delete(args: argparse.Namespace) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        client.delete(f"{API}/clusters/{quote(args.name, safe='')}")
    print(f'cluster "{args.name}" deleted')
    return 0


def _register_taint_command(cluster_sub: Subparsers, common: argparse.ArgumentParser) -> None:
    taint = cluster_sub.add_parser(
        "taint", parents=[common], help="add or remove taints on a cluster (like kubectl taint)",
        description="Add taints KEY[=VALUE]:EFFECT (EFFECT NoSchedule: no new placement chooses the cluster; "
                    "NoExecute: placements not tolerating it move their objects off) or remove them with "
                    "KEY[:EFFECT]-.")
    taint.add_argument("name", metavar="NAME")
    taint.add_argument("taints", nargs="+", metavar="TAINT")
    taint.set_defaults(func=_cluster_taint)


def _cluster_taint(args: argparse.Namespace) -> int:
    try:
        add, remove = parse_taint_args(args.taints)
    except ValueError as exc:
        raise ClientError(str(exc)) from None
    with client_for(getattr(args, "kubeconfig", None)) as client:
        client.post(f"{API}/clusters/{quote(args.name, safe='')}:taint", {"add": add, "remove": remove})
    print(f'cluster "{args.name}" tainted' if add else f'cluster "{args.name}" untainted')
    return 0
