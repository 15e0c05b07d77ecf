"""What every command prints: kubectl-style tables and ages, JSON/YAML and names, and user errors.

Each package's command-line module uses these, so that ``spacehub`` answers like kubectl whatever the
command. It imports nothing of spacehub's: every package may import it (ages are ``apimachinery.durations``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import yaml

OUTPUT_FORMATS = ("json", "yaml", "name")
# What each package's ``register_*_commands(sub, common)`` receives: the ``add_parser`` side of an argparse
# subcommand set (argparse keeps its type private). ``common`` carries the flags every command accepts.
Subparsers = Any
STRUCTURED_FORMATS = ("json", "yaml")


class UserError(Exception):
    """Something the user can fix (a missing file, a refused request); printed as one line, exit status 1."""

    def render(self) -> str:
        return f"error: {self}"


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default=None,
                        help="output format (default: a table)")


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded like kubectl's tabwriter: each as wide as its widest cell plus three spaces."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [str(cell).ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def write_structured(payload: Any, output: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    if output == "json":
        out.write(json.dumps(payload, indent=4) + "\n")
    else:
        out.write(yaml.safe_dump(payload, sort_keys=False, default_flow_style=False))


def print_list(result: Mapping[str, Any], output: str | None, *, resource_name: str, header: Sequence[str],
               row: Callable[[dict[str, Any]], Sequence[str]], name: Callable[[dict[str, Any]], str],
               empty: str, out: TextIO | None = None) -> None:
    """A list as kubectl prints one: ``-o json|yaml`` the whole document, ``-o name`` ``resource/name`` per
    item, else a table of ``row(item)`` (``empty`` on stderr when there are no items)."""
    out = out or sys.stdout
    items = result.get("items") or []
    if output in STRUCTURED_FORMATS:
        write_structured(result, output, out)
    elif output == "name":
        for item in items:
            out.write(f"{resource_name}/{name(item)}\n")
    elif not items:
        print(empty, file=sys.stderr)
    else:
        out.write(format_table(header, [row(item) for item in items]))


def run_guarded(command: Callable[[], int]) -> int:
    """Run a command, printing user errors as one kubectl-style line (exit 1) instead of a traceback."""
    try:
        return command()
    except UserError as exc:
        print(exc.render(), file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into `head` and the like; nothing left to say.
        sys.stderr.close()
    return 1
