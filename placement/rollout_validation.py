"""The checks of an EdgePlacement's ``spec.rollout`` that its CRD's schema cannot express (the strategy in
:mod:`placement.kinds` adds them), so that a bad rollout is refused with a 422 and kube's field paths
instead of being stored: duplicate stage names, a clusterSelector that is no label selector, a
``maxUnavailable`` of 0 or over 100 %, a ``gate`` that does not compile to a bool (the ``cel`` package)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause, StatusError
from apimachinery.names import duplicate, invalid
from apimachinery.selectors import label_selector_from_object
from cel import CelCompileError, compile_expression

_PERCENT = re.compile(r"^([0-9]+)%$")
GATE_VARIABLES = {"cluster": "object", "object": "object"}


def rollout_problems(spec: Mapping[str, Any]) -> list[Cause]:
    rollout = spec.get("rollout")
    if not isinstance(rollout, Mapping):
        return []
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, stage in enumerate(rollout.get("stages") or []):
        if not isinstance(stage, Mapping):
            continue
        path = f"spec.rollout.stages[{i}]"
        name = stage.get("name")
        if isinstance(name, str):
            if name in seen:
                causes.append(duplicate(f"{path}.name", name))
            seen.add(name)
        selector = stage.get("clusterSelector")
        if isinstance(selector, Mapping):
            try:
                label_selector_from_object(selector)
            except StatusError as exc:
                causes.append(invalid(f"{path}.clusterSelector", dict(selector), exc.message))
        if "maxUnavailable" in stage:
            causes.extend(_max_unavailable(f"{path}.maxUnavailable", stage["maxUnavailable"]))
    gate = rollout.get("gate")
    if isinstance(gate, str):
        try:
            compiled = compile_expression(gate, GATE_VARIABLES)
        except CelCompileError as exc:
            causes.append(invalid("spec.rollout.gate", gate, exc.detail))
        else:
            if compiled.output_type not in ("bool", "dyn"):
                causes.append(invalid("spec.rollout.gate", gate, f"must evaluate to bool, not {compiled.output_type}"))
    return causes


def _max_unavailable(path: str, value: Any) -> list[Cause]:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return [invalid(path, value, "must be an integer or a percentage")]
    if isinstance(value, int):
        return [] if value >= 1 else [invalid(path, value, "must be at least 1")]
    match = _PERCENT.match(value)
    if match is None:
        return [invalid(path, value, 'a percentage must be an integer followed by "%" (e.g. "25%")')]
    if not 1 <= int(match.group(1)) <= 100:
        return [invalid(path, value, "must be between 1% and 100%")]
    return []
