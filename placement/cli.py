"""``spacehub placement …``: thin callers of the placement REST API.

Owns argument parsing and printing only. Every command reaches the hub through the kubeconfig like the
other ``spacehub`` commands (base URL = the kubeconfig server without its ``/clusters/<space>`` path)
and calls ``/placement/v1``; placement itself is never computed here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from kubeclient import kubeconfig
from kubeclient.output import (
    STRUCTURED_FORMATS,
    Subparsers,
    add_output_flag,
    format_table,
    print_list,
    write_structured,
)
from placement.scheduling_cli import explain_stored, register_reschedule_command
from spaces.client import ClientError, client_for

API = "/placement/v1"
PLACEMENT_RESOURCE_NAME = "edgeplacement.edge.kubestellar.io"


def register_placement_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    placement = sub.add_parser("placement", parents=[common], help="explain and list EdgePlacements")
    placement_sub = placement.add_subparsers(dest="placement_command", metavar="COMMAND", required=True)

    explain = placement_sub.add_parser(
        "explain", parents=[common], help="show what an EdgePlacement selects in a space, and why not the rest",
        description="Show the destinations and objects an EdgePlacement selects (nothing is created), and for "
                    "every Location, SyncTarget and object it does not select, the reasons. With NAME instead of "
                    "-f: the stored placement's choice of clusters, every cluster's scores and why the others "
                    "were not chosen.")
    explain.add_argument("name", nargs="?", metavar="NAME", help="a stored, scheduled EdgePlacement")
    explain.add_argument("-f", "--filename", default=None, metavar="FILE",
                         help="YAML or JSON holding an EdgePlacement or just its spec ('-' reads stdin)")
    _add_space_flag(explain)
    explain.add_argument("-o", "--output", choices=STRUCTURED_FORMATS, default=None,
                         help="output format (default: tables)")
    explain.set_defaults(func=_placement_explain)

    register_reschedule_command(placement_sub, common, _add_space_flag, _space)

    listing = placement_sub.add_parser("list", parents=[common], help="list a space's EdgePlacements and results")
    _add_space_flag(listing)
    add_output_flag(listing)
    listing.set_defaults(func=_placement_list)


def _add_space_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--space", default=None, metavar="NAME",
                        help="the workload space (default: the space of the kubeconfig's current context)")


def _space(args: argparse.Namespace) -> str:
    if args.space:
        return str(args.space)
    path, cfg = kubeconfig.load_selected(getattr(args, "kubeconfig", None))
    _, space = kubeconfig.split_server(kubeconfig.access(cfg, path.parent).server)
    if not space:
        raise ClientError("no space given: pass --space NAME (the kubeconfig's server names no space)")
    return space


def _placement_explain(args: argparse.Namespace) -> int:
    if (args.name is None) == (args.filename is None):
        raise ClientError("give either NAME (a stored placement) or -f FILE (a placement to explain)")
    space = _space(args)
    if args.name is not None:
        return explain_stored(args, space)
    documents = read_placements(args.filename)
    path = f"{API}/spaces/{quote(space, safe='')}/placements:explain"
    with client_for(getattr(args, "kubeconfig", None)) as client:
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
        lines.append(format_table(["LOCATION", "SYNC-TARGET", "LOCATION-SELECTORS"], rows))
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
        header = ["RESOURCE", "NAMESPACE", "NAME", "DOWNSYNC-TESTS"]
        if any(o.get("because") for o in objects):  # dependencies: Follow sent some of them
            header.append("SENT-BECAUSE")
            rows = [[*row, "; ".join(o.get("because") or [])] for row, o in zip(rows, objects, strict=True)]
        lines.append(format_table(header, rows))
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
            lines.append(format_table([column, "REASONS"], _reason_rows(mismatches)))
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
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.get(f"{API}/spaces/{quote(space, safe='')}/placements")
    print_list(result, args.output, resource_name=PLACEMENT_RESOURCE_NAME,
               header=["NAME", "LOCATIONS", "DESTINATIONS", "OBJECTS", "MISSING-CRDS"],
               row=lambda p: [p["name"], str(p["matchingLocationCount"]), str(len(p.get("destinations") or [])),
                              str(p["selectedObjectCount"]), ",".join(p.get("missingCRDs") or []) or "<none>"],
               name=lambda p: p["name"], empty=f'No EdgePlacements found in space "{space}"')
    return 0
