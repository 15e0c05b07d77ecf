"""Wording shared by the explain messages of the where and what sides: labels, selectors, requirements.

Owns how labels and label selectors are shown in ``spacehub placement explain``; never evaluates a
placement, never does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from apimachinery.selectors import LabelSelector, Requirement


def format_labels(labels: Mapping[str, str]) -> str:
    """``a=1,b=2`` in key order, or ``none`` so an empty label set is visible in a table cell."""
    if not labels:
        return "none"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def format_selector(selector: LabelSelector) -> str:
    if selector.nothing:
        return "<invalid selector>"
    return str(selector) or "{}"


def format_selectors(selectors: Iterable[LabelSelector]) -> str:
    return " or ".join(format_selector(s) for s in selectors)


def failed_requirements(selector: LabelSelector, labels: Mapping[str, str], holder: str) -> list[str]:
    """One ``label <requirement>: <what the holder has>`` per requirement the labels do not satisfy."""
    if selector.nothing:
        return ["invalid selector"]
    return [_requirement_failure(r, labels, holder) for r in selector.requirements if not r.matches(labels)]


def _requirement_failure(requirement: Requirement, labels: Mapping[str, str], holder: str) -> str:
    if requirement.key in labels:
        return f"label {requirement}: {holder} has {requirement.key}={labels[requirement.key]}"
    return f"label {requirement}: missing"


def quoted_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(sorted(values)) + "]"
