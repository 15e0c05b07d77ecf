"""Apply conflicts as the apiserver reports them: a 409 ``Conflict`` with one
``FieldManagerConflict`` cause per field and manager, and upstream's summary message."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

from apimachinery.errors import Cause, StatusError
from apimachinery.gofmt import go_quote
from apiserver.fieldmanager import FieldSet, Path, PathElement, format_path


def describe_manager(identifier: str) -> str:
    """How a conflict names a manager: ``"kubectl"``, ``"kube-controller-manager" using apps/v1``,
    ``"m" with subresource "status" using v1`` (Update entries carry their version)."""
    try:
        ident = json.loads(identifier)
    except ValueError:
        return go_quote(identifier)
    text = go_quote(str(ident.get("manager") or ""))
    if ident.get("subresource"):
        text = f"{text} with subresource {go_quote(ident['subresource'])}"
    if ident.get("operation") == "Update":
        text = f"{text} using {ident.get('apiVersion', '')}"
    return text


def iteration_order(fields: FieldSet) -> Iterator[Path]:
    """Paths in the order structured-merge-diff iterates a set: at each level the members, then
    each child's paths, both sorted."""
    def walk(group: list[Path], depth: int) -> Iterator[Path]:
        yield from (p for p in group if len(p) == depth + 1)
        children: dict[PathElement, list[Path]] = {}
        for p in group:
            if len(p) > depth + 1:
                children.setdefault(p[depth], []).append(p)
        for paths in children.values():
            yield from walk(paths, depth + 1)
    return walk(list(fields), 0)  # FieldSet iterates sorted, so each group stays sorted


def conflict_error(conflicts: Mapping[str, FieldSet]) -> StatusError:
    """The error for ``conflicts`` (manager identifier -> the fields it would lose)."""
    # Upstream lists managers in map order; sorting by identifier keeps the answer stable.
    found = [(ident, path) for ident in sorted(conflicts) for path in iteration_order(conflicts[ident])]
    causes = [Cause("FieldManagerConflict", f"conflict with {describe_manager(ident)}", format_path(path))
              for ident, path in found]
    if len(found) == 1:
        ident, path = found[0]
        message = f"Apply failed with 1 conflict: conflict with {describe_manager(ident)}: {format_path(path)}"
    else:
        lines: list[str] = []
        for ident in sorted(conflicts):
            lines.append(f"conflicts with {describe_manager(ident)}:")
            lines.extend(f"- {format_path(path)}" for path in iteration_order(conflicts[ident]))
        message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, causes=causes)
