"""``spacehub placement …`` and ``spacehub cluster …``: thin callers of the placement REST API.

Owns argument parsing and printing only. Every command reaches the hub through the kubeconfig like the
other ``spacehub`` commands (base URL = the kubeconfig server without its ``/clusters/<space>`` path)
and calls ``/placement/v1``; placement itself is never computed here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

import yaml

from hub import cli as hub_cli  # a module reference: hub.cli imports this module while it loads
from placement import syncer_manifest
from spaces import kubeconfig
from spaces.client import ClientError
from spaces.files import atomic_write

API = "/placement/v1"
CLUSTER_RESOURCE_NAME = "synctarget.edge.kubestellar.io"
PLACEMENT_RESOURCE_NAME = "edgeplacement.edge.kubestellar.io"
STRUCTURED_FORMATS = ("json", "yaml")
REGISTER_FORMATS = ("bootstrap", "manifest")


def register_placement_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``placement`` and ``cluster`` command groups (one entry of ``hub.cli.COMMAND_GROUPS``)."""
    _register_placement(sub, common)
    _register_cluster(sub, common)


# --- placement -----------------------------------------------------------------------------------

def _register_placement(sub: Any, common: argparse.ArgumentParser) -> None:
    placement = sub.add_parser("placement", parents=[common], help="explain and list EdgePlacements")
    placement_sub = placement.add_subparsers(dest="placement_command", metavar="COMMAND", required=True)

    explain = placement_sub.add_parser(
        "explain", parents=[common], help="show what an EdgePlacement selects in a space, and why not the rest",
        description="Show the destinations and objects an EdgePlacement selects (nothing is created), and for "
                    "every Location, SyncTarget and object it does not select, the reasons.")
    explain.add_argument("-f", "--filename", required=True, metavar="FILE",
                         help="YAML or JSON holding an EdgePlacement or just its spec ('-' reads stdin)")
    _add_space_flag(explain)
    explain.add_argument("-o", "--output", choices=STRUCTURED_FORMATS, default=None,
                         help="output format (default: tables)")
    explain.set_defaults(func=_placement_explain)

    listing = placement_sub.add_parser("list", parents=[common], help="list a space's EdgePlacements and results")
    _add_space_flag(listing)
    hub_cli.add_output_flag(listing)
    listing.set_defaults(func=_placement_list)


def _add_space_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--space", default=None, metavar="NAME",
                        help="the workload space (default: the space of the kubeconfig's current context)")


def _space(args: argparse.Namespace) -> str:
    if args.space:
        return str(args.space)
    path, cfg = hub_cli.load_kubeconfig(args)
    _, space = kubeconfig.split_server(kubeconfig.access(cfg, path.parent).server)
    if not space:
        raise ClientError("no space given: pass --space NAME (the kubeconfig's server names no space)")
    return space


def _placement_explain(args: argparse.Namespace) -> int:
    documents = read_placements(args.filename)
    space = _space(args)
    path = f"{API}/spaces/{quote(space, safe='')}/placements:explain"
    with hub_cli.client_from_args(args) as client:
        results = [(doc, client.post(path, doc)) for doc in documents]
    if args.output:
        payload: Any = results[0][1] if len(results) == 1 else [r for _, r in results]
        write_structured(payload, args.output)
        return 0
    for i, (doc, result) in enumerate(results):
        if i:
            sys.stdout.write("\n")
        sys.stdout.write(format_explanation(result, _placement_name(doc), space))
    return 0


def read_placements(filename: str) -> list[dict[str, Any]]:
    """The EdgePlacements (or the one bare spec) in a YAML/JSON file."""
    try:
        text = sys.stdin.read() if filename == "-" else Path(filename).read_text(encoding="utf-8")
    except OSError as exc:
        raise ClientError(f"cannot read {filename}: {exc.strerror or exc}") from None
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ClientError(f"{filename} is not valid YAML: {exc}") from None
    if not all(isinstance(d, dict) for d in documents):
        raise ClientError(f"{filename}: every document must be an object (an EdgePlacement or its spec)")
    placements = [d for d in documents if d.get("kind") == "EdgePlacement"]
    if placements:
        return placements
    if len(documents) == 1 and "kind" not in documents[0]:
        return documents
    raise ClientError(f"{filename} holds no EdgePlacement (kind: EdgePlacement, or one document that is a spec)")


def _placement_name(doc: dict[str, Any]) -> str:
    return str((doc.get("metadata") or {}).get("name") or "") if isinstance(doc.get("metadata"), dict) else ""


def format_explanation(result: dict[str, Any], name: str, space: str) -> str:
    """The explain result as tables: what is selected first, then what is not and why."""
    title = f'EdgePlacement "{name}"' if name else "The placement"
    lines = [f'{title} in space "{space}"', ""]
    destinations = result.get("destinations") or []
    matched = {m["location"]: m.get("selectorIndexes") or [] for m in result.get("matchedLocations") or []}
    if destinations:
        lines.append(f"DESTINATIONS ({len(destinations)})")
        rows = [[d["location"], d["syncTarget"], _indexes(matched.get(d["location"], []))] for d in destinations]
        lines.append(hub_cli.format_table(["LOCATION", "SYNC-TARGET", "LOCATION-SELECTORS"], rows))
    elif matched:
        lines += [f"DESTINATIONS: none (the matched Locations {', '.join(sorted(matched))} select no SyncTarget)",
                  ""]
    else:
        lines += ["DESTINATIONS: none (no Location matches spec.locationSelectors)", ""]

    objects = result.get("objects") or []
    if objects:
        lines.append(f"SELECTED OBJECTS ({len(objects)})")
        rows = [[_resource(o), o.get("namespace") or "", o["name"], _indexes(o.get("tests") or [])]
                for o in objects]
        lines.append(hub_cli.format_table(["RESOURCE", "NAMESPACE", "NAME", "DOWNSYNC-TESTS"], rows))
    else:
        lines += ["SELECTED OBJECTS: none (no object in the space matches spec.downsync)", ""]

    missing = result.get("missingCRDs") or []
    if missing:
        lines += [f"MISSING CRDS: {', '.join(missing)} (selected custom resources whose "
                  "CustomResourceDefinition is not selected)", ""]
    for title, key, column in (("LOCATIONS NOT MATCHED", "locationMismatches", "LOCATION"),
                               ("SYNC TARGETS NOT SELECTED", "targetMismatches", "SYNC-TARGET"),
                               ("OBJECTS NOT MATCHED", "objectMismatches", "OBJECT")):
        mismatches = result.get(key) or []
        if mismatches:
            lines.append(f"{title} ({len(mismatches)})")
            lines.append(hub_cli.format_table([column, "REASONS"], _reason_rows(mismatches)))
    problems = result.get("problems") or []
    if problems:
        lines.append("PROBLEMS")
        lines += [f"  {p}" for p in problems]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _reason_rows(mismatches: Sequence[dict[str, Any]]) -> list[list[str]]:
    """One row per reason; the name only on the first row of its group."""
    rows = []
    for mismatch in mismatches:
        reasons = mismatch.get("reasons") or ["(no reason given)"]
        rows.append([mismatch["name"], reasons[0]])
        rows += [["", reason] for reason in reasons[1:]]
    return rows


def _indexes(indexes: Sequence[int]) -> str:
    return ",".join(str(i) for i in indexes) or "-"


def _resource(obj: dict[str, Any]) -> str:
    return f"{obj['resource']}.{obj['group']}" if obj.get("group") else str(obj["resource"])


def _placement_list(args: argparse.Namespace) -> int:
    space = _space(args)
    with hub_cli.client_from_args(args) as client:
        result = client.get(f"{API}/spaces/{quote(space, safe='')}/placements")
    items = result.get("items") or []
    if args.output in STRUCTURED_FORMATS:
        write_structured(result, args.output)
    elif args.output == "name":
        for item in items:
            print(f"{PLACEMENT_RESOURCE_NAME}/{item['name']}")
    elif not items:
        print(f'No EdgePlacements found in space "{space}"', file=sys.stderr)
    else:
        rows = [[p["name"], str(p["matchingLocationCount"]), str(len(p.get("destinations") or [])),
                 str(p["selectedObjectCount"]), ",".join(p.get("missingCRDs") or []) or "<none>"] for p in items]
        sys.stdout.write(hub_cli.format_table(["NAME", "LOCATIONS", "DESTINATIONS", "OBJECTS", "MISSING-CRDS"],
                                              rows))
    return 0


# --- cluster -------------------------------------------------------------------------------------

def _register_cluster(sub: Any, common: argparse.ArgumentParser) -> None:
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
    register.add_argument("-o", "--output", choices=REGISTER_FORMATS, default="bootstrap",
                          help="bootstrap: the syncer bootstrap YAML (default); manifest: a YAML stream to "
                               "kubectl apply to the cluster, running the syncer there with the bootstrap")
    register.add_argument("--bootstrap-out", "--out", dest="bootstrap_out", type=Path, default=None,
                          metavar="FILE", help="write the output to FILE (mode 0600: it holds the credential) "
                                               "instead of stdout")
    register.add_argument("--syncer-namespace", default=syncer_manifest.DEFAULT_NAMESPACE, metavar="NAMESPACE",
                          help="with -o manifest: the namespace of the syncer (default: %(default)s)")
    register.add_argument("--syncer-image", default=None, metavar="IMAGE",
                          help="with -o manifest: the syncer's image (default: "
                               f"{syncer_manifest.IMAGE_REPOSITORY}:<this spacehub's version>)")
    register.set_defaults(func=_cluster_register)

    listing = cluster_sub.add_parser("list", parents=[common], help="list clusters")
    hub_cli.add_output_flag(listing)
    listing.set_defaults(func=_cluster_list)

    delete = cluster_sub.add_parser("delete", parents=[common],
                                    help="delete a cluster's SyncTarget and Location and revoke its credential")
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(func=_cluster_delete)


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
    manifest = args.output == "manifest"
    if manifest:  # refuse a bad flag before anything is registered
        try:
            syncer_manifest.check_namespace(args.syncer_namespace)
        except ValueError as exc:
            raise ClientError(f"--syncer-namespace: {exc}") from None
    with hub_cli.client_from_args(args) as client:
        result = client.post(f"{API}/clusters", {"name": args.name, "labels": labels})
    bootstrap = result.get("bootstrap") or {}
    if manifest:
        objects = syncer_manifest.syncer_manifest(bootstrap, namespace=args.syncer_namespace,
                                                  image=args.syncer_image or syncer_manifest.default_image())
        text, what = syncer_manifest.render(objects), "syncer manifest"
    else:
        text, what = syncer_manifest.bootstrap_yaml(bootstrap), "syncer bootstrap"
    if args.bootstrap_out is None:
        print(f'cluster "{args.name}" registered', file=sys.stderr)
        sys.stdout.write(text)
    else:
        try:
            atomic_write(args.bootstrap_out, text.encode())  # mode 0600: it holds a credential
        except OSError as exc:
            raise ClientError(f"cannot write {args.bootstrap_out}: {exc.strerror or exc}") from None
        print(f'cluster "{args.name}" registered; {what} written to {args.bootstrap_out}')
    return 0


def _cluster_list(args: argparse.Namespace) -> int:
    with hub_cli.client_from_args(args) as client:
        result = client.get(f"{API}/clusters")
    print_clusters(result, args.output)
    return 0


def print_clusters(result: dict[str, Any], output: str | None, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    items = result.get("items") or []
    if output in STRUCTURED_FORMATS:
        write_structured(result, output, out)
    elif output == "name":
        for item in items:
            out.write(f"{CLUSTER_RESOURCE_NAME}/{item['name']}\n")
    elif not items:
        print("No clusters registered", file=sys.stderr)
    else:
        now = dt.datetime.now(dt.UTC)
        rows = [[c["name"], ",".join(f"{k}={v}" for k, v in sorted((c.get("labels") or {}).items())) or "<none>",
                 (c.get("readyCondition") or {}).get("status") or "Unknown",
                 hub_cli.age(c["lastHeartbeat"], now) if c.get("lastHeartbeat") else "<never>"] for c in items]
        out.write(hub_cli.format_table(["NAME", "LABELS", "READY", "LAST-HEARTBEAT"], rows))


def _cluster_delete(args: argparse.Namespace) -> int:
    with hub_cli.client_from_args(args) as client:
        client.delete(f"{API}/clusters/{quote(args.name, safe='')}")
    print(f'cluster "{args.name}" deleted')
    return 0


def write_structured(payload: Any, output: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    if output == "json":
        out.write(json.dumps(payload, indent=4) + "\n")
    else:
        out.write(yaml.safe_dump(payload, sort_keys=False, default_flow_style=False))
