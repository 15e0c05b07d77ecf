"""``spacehub rollout status|pause|resume|approve|undo|history PLACEMENT``: thin callers of the staged rollout's
REST calls (``placement.rollout_api``).

``status`` exits 0 once the rollout is Complete, 1 when it failed (Paused after a failure, Failed, RolledBack;
the message names the cluster and its reason) and, without ``--watch``, 2 while it is still under way (with
``--watch`` it waits for one of the others, printing each change).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any
from urllib.parse import quote

from kubeclient.output import STRUCTURED_FORMATS, Subparsers, format_table, write_structured
from placement.cli import API, _add_space_flag, _space
from spaces.client import client_for

WATCH_INTERVAL = 1.0  # seconds between looks of ``status --watch``


def register_rollout_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    rollout = sub.add_parser("rollout", parents=[common], help="watch and steer an EdgePlacement's staged rollout",
                             description="The staged rollout of an EdgePlacement with spec.rollout: its status, "
                                         "pause, resume, approval of a Manual stage, undo and history.")
    rollout_sub = rollout.add_subparsers(dest="rollout_command", metavar="COMMAND", required=True)

    status = rollout_sub.add_parser("status", parents=[common], help="show a rollout's stage and phase",
                                    description="Exit 0 when Complete, 1 when it failed (Paused after a failure, "
                                                "Failed, RolledBack), 2 while under way (without --watch).")
    _placement_arguments(status)
    status.add_argument("-w", "--watch", action="store_true", help="wait until it completes or fails")
    status.add_argument("--timeout", type=float, default=0, metavar="SECONDS",
                        help="with --watch, give up (exit 2) after this long (default: never)")
    status.add_argument("-o", "--output", choices=STRUCTURED_FORMATS, default=None, help="output format")
    status.set_defaults(func=_status)

    for action, text in (("pause", "hold every cluster at the revision it runs"),
                         ("resume", "clear a pause (failed clusters get a new deadline)"),
                         ("approve", "let a Manual stage that waits for approval start")):
        parser = rollout_sub.add_parser(action, parents=[common], help=text,
                                        description=text[0].upper() + text[1:] + ".")
        _placement_arguments(parser)
        parser.set_defaults(func=_control, action=action)

    undo = rollout_sub.add_parser("undo", parents=[common], help="write a kept revision back and roll it out",
                                  description="Write a kept revision's content back into the space's objects (the "
                                              "previous revision by default), as kubectl rollout undo does; the new "
                                              "revision rolls out from the first stage.")
    _placement_arguments(undo)
    undo.add_argument("--to-revision", type=int, default=None, metavar="N", help="the revision to go back to")
    undo.set_defaults(func=_undo)

    history = rollout_sub.add_parser("history", parents=[common], help="list the kept revisions",
                                     description="The kept revisions of each object the placement rolls out.")
    _placement_arguments(history)
    history.add_argument("-o", "--output", choices=STRUCTURED_FORMATS, default=None, help="output format")
    history.set_defaults(func=_history)


def _placement_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("placement", metavar="PLACEMENT", help="the EdgePlacement's name")
    _add_space_flag(parser)


def _base(args: argparse.Namespace) -> str:
    return f"{API}/spaces/{quote(_space(args), safe='')}/placements/{quote(args.placement, safe='')}"


def verdict(rollout: dict[str, Any]) -> int | None:
    """0 Complete, 1 failed, None still under way."""
    phase = rollout.get("phase")
    if phase == "Complete":
        return 0
    failed = any(c.get("phase") == "Failed" for c in rollout.get("clusters") or [])
    if phase in ("Failed", "RolledBack") or (phase == "Paused" and failed):
        return 1
    return None


def format_status(rollout: dict[str, Any]) -> str:
    lines = [f"revision {rollout.get('revision')}, stage {rollout.get('stage')}: {rollout.get('phase')}",
             f"  {rollout.get('message')}"]
    rows = [[s["name"], str(s["clusters"]), str(s["updated"]), str(s["ready"]), str(s["failed"])]
            for s in rollout.get("stages") or []]
    lines.append(format_table(["STAGE", "CLUSTERS", "UPDATED", "READY", "FAILED"], rows).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _status(args: argparse.Namespace) -> int:
    path = _base(args) + "/rollout"
    deadline = time.monotonic() + args.timeout if args.timeout else None
    shown = None
    with client_for(getattr(args, "kubeconfig", None)) as client:
        while True:
            rollout = client.get(path)
            text = format_status(rollout)
            if args.output:
                write_structured(rollout, args.output)
            elif text != shown:
                sys.stdout.write(text)
                sys.stdout.flush()
                shown = text
            result = verdict(rollout)
            if result is not None:
                return result
            if not args.watch or (deadline is not None and time.monotonic() >= deadline):
                return 2
            time.sleep(WATCH_INTERVAL)


def _control(args: argparse.Namespace) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        rollout = client.post(f"{_base(args)}:{args.action}", {})
    past = {"pause": "paused", "resume": "resumed", "approve": "approved"}[args.action]
    print(f"edgeplacement.edge.kubestellar.io/{args.placement} {past}: {rollout.get('phase')}, "
          f"stage {rollout.get('stage')}")
    return 0


def _undo(args: argparse.Namespace) -> int:
    body = {"toRevision": args.to_revision} if args.to_revision is not None else {}
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.post(f"{_base(args)}:undo", body)
    for item in result.get("objects") or []:
        print(f"{item['object']} rolled back to revision {item['toRevision']}")
    return 0


def _history(args: argparse.Namespace) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.get(f"{_base(args)}/history")
    if args.output:
        write_structured(result, args.output)
        return 0
    rows = [[str(i["revision"]), _object(i["object"]), ",".join(i.get("images") or []) or "-", i["created"],
             "*" if i.get("current") else ""] for i in result.get("items") or []]
    sys.stdout.write(format_table(["REVISION", "OBJECT", "IMAGES", "CREATED", "CURRENT"], rows))
    return 0


def _object(obj: dict[str, Any]) -> str:
    where = f"{obj['namespace']}/" if obj.get("namespace") else ""
    return f"{obj['resource']} {where}{obj['name']}"
