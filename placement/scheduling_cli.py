"""``spacehub placement explain NAME`` (a stored placement's choice of clusters) and ``spacehub placement
reschedule NAME``: thin callers of the placement REST API's scheduling routes (:mod:`placement.scheduling_api`).

Owns argument parsing and printing only.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import quote

from kubeclient.output import STRUCTURED_FORMATS, Subparsers, format_table, write_structured
from spaces.client import client_for

API = "/placement/v1"


def register_reschedule_command(placement_sub: Subparsers, common: argparse.ArgumentParser,
                                add_space_flag: Any, space_of: Any) -> None:
    reschedule = placement_sub.add_parser(
        "reschedule", parents=[common], help="choose a scheduled EdgePlacement's clusters again from scratch",
        description="A scheduled placement keeps the clusters it chose while they stay eligible; this makes the "
                    "best choice now instead (whichever hub process leads makes it).")
    reschedule.add_argument("name", metavar="NAME")
    add_space_flag(reschedule)
    reschedule.set_defaults(func=lambda args: _reschedule(args, space_of(args)))


def _path(space: str, name: str) -> str:
    return f"{API}/spaces/{quote(space, safe='')}/placements/{quote(name, safe='')}"


def _reschedule(args: argparse.Namespace, space: str) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        client.post(f"{_path(space, args.name)}:reschedule", {})
    print(f'edgeplacement "{args.name}" rescheduled')
    return 0


def explain_stored(args: argparse.Namespace, space: str) -> int:
    """The stored placement's choice: every cluster's scores and, for the ones not chosen, why."""
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.get(f"{_path(space, args.name)}/scheduling")
    if args.output in STRUCTURED_FORMATS:
        write_structured(result, args.output)
        return 0
    sys.stdout.write(format_scheduling(result))
    return 0


def format_scheduling(result: dict[str, Any]) -> str:
    """A table: CLUSTER, CHOSEN, SCORE, each prioritizer's score, REASON."""
    name = result.get("name", "")
    if not result.get("scheduled"):
        return f"EdgePlacement {name} is not scheduled: it goes to every cluster its Locations select.\n"
    candidates = result.get("candidates") or []
    prioritizers = sorted({p for c in candidates for p in (c.get("scores") or {})})
    rows = [[c["cluster"], "yes" if c.get("chosen") else "no", _number(c.get("score", 0.0)),
             *[_number((c.get("scores") or {}).get(p)) for p in prioritizers],
             c.get("reason") or "", c.get("message") or ""] for c in candidates]
    condition = result.get("condition") or {}
    head = f"EdgePlacement {name}: {len(result.get('chosen') or [])} of {result.get('wanted')} clusters chosen"
    if condition.get("status") == "False":
        head += f" ({condition.get('reason')}: {condition.get('message')})"
    table = format_table(["CLUSTER", "CHOSEN", "SCORE", *[p.upper() for p in prioritizers], "REASON", "MESSAGE"],
                         rows)
    return f"{head}\n{table}"


def _number(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if isinstance(value, int | float) else str(value)
