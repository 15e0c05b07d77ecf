"""Status for custom resources (or any kind) from simple per-kind rules (``--status-rules FILE``).

The file is a YAML list of rules::

    - group: ate.dev            # API group ("" for core kinds)
      kind: WorkerPool
      delaySeconds: 1           # optional; default --ready-delay
      set:
        .status.replicas: .spec.replicas                # a string starting with "." copies that field
        .status.observedGeneration: .metadata.generation
        .status.phase: Ready                            # anything else is a constant
        .status.selector: {const: ".not-a-path"}        # {const: X} is the constant X, whatever X is

Targets are plain field paths under ``.status``. A source field that is absent leaves its target
alone. The delay after an object is created or changed, the targets are written (through the status
subresource when the kind has one), unless they already hold the wanted values; writing the same
values again never happens, so a rule settles after one write per change.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from apimachinery import kubejsonpath
from apimachinery.errors import StatusError
from apiserver.store import Key
from apiserver.watch import Entry, decode_object
from apiserver.writeoptions import WriteOptions
from sim.controllers.base import Context, Controller
from sim.controllers.util import Obj, deleting

MANAGER = "spacehub-sim-status-rules"


class RuleError(ValueError):
    """A status rules file is malformed."""


@dataclass(frozen=True)
class Assignment:
    target: str
    source: Any
    copy_field: bool  # source is a field path of the object


@dataclass(frozen=True)
class StatusRule:
    group: str
    kind: str
    assignments: tuple[Assignment, ...]
    delay: float | None = None

    def wanted(self, obj: Obj) -> list[tuple[str, Any]]:
        out = []
        for a in self.assignments:
            value = kubejsonpath.first(obj, a.source) if a.copy_field else a.source
            if value is not None or not a.copy_field:
                out.append((a.target, value))
        return out

    def satisfied(self, obj: Obj) -> bool:
        return all(kubejsonpath.first(obj, target) == value for target, value in self.wanted(obj))

    def apply(self, obj: Obj) -> Obj:
        for target, value in self.wanted(obj):
            kubejsonpath.set_value(obj, target, copy.deepcopy(value))
        return obj


def _assignment(target: Any, source: Any) -> Assignment:
    if not isinstance(target, str) or not target.startswith(".status."):
        raise RuleError(f"target {target!r} must be a field path under .status")
    try:
        steps = kubejsonpath.parse(target)
    except kubejsonpath.JSONPathError as exc:
        raise RuleError(f"target {target!r}: {exc}") from None
    if any(kind != "field" for kind, _ in steps):
        raise RuleError(f"target {target!r} must be a plain field path")
    if isinstance(source, dict) and set(source) == {"const"}:
        return Assignment(target, source["const"], False)
    if isinstance(source, str) and source.startswith("."):
        try:
            kubejsonpath.parse(source)
        except kubejsonpath.JSONPathError as exc:
            raise RuleError(f"source {source!r}: {exc}") from None
        return Assignment(target, source, True)
    return Assignment(target, source, False)


def parse_rules(doc: Any) -> tuple[StatusRule, ...]:
    if doc is None:
        return ()
    if not isinstance(doc, list):
        raise RuleError("status rules must be a list of {group, kind, set} rules")
    rules = []
    for i, item in enumerate(doc):
        if not isinstance(item, dict) or not isinstance(item.get("kind"), str) or not isinstance(item.get("set"), dict):
            raise RuleError(f"rule {i}: needs kind (a string) and set (a mapping of target to source)")
        group = item.get("group", "")
        delay = item.get("delaySeconds")
        if not isinstance(group, str):
            raise RuleError(f"rule {i}: group must be a string")
        if delay is not None and (isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0):
            raise RuleError(f"rule {i}: delaySeconds must be a non-negative number")
        unknown = sorted(set(item) - {"group", "kind", "set", "delaySeconds"})
        if unknown:
            raise RuleError(f"rule {i}: unknown field(s) {', '.join(unknown)}")
        try:
            assignments = tuple(_assignment(t, s) for t, s in item["set"].items())
        except RuleError as exc:
            raise RuleError(f"rule {i} ({item['kind']}): {exc}") from None
        rules.append(StatusRule(group, item["kind"], assignments, None if delay is None else float(delay)))
    return tuple(rules)


def load_rules(path: Path) -> tuple[StatusRule, ...]:
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RuleError(f"cannot read status rules {path}: {exc}") from None
    try:
        return parse_rules(doc)
    except RuleError as exc:
        raise RuleError(f"{path}: {exc}") from None


def _group(resource: str) -> str:
    return resource.partition(".")[2]


class StatusRuleController(Controller):
    def __init__(self, ctx: Context, rules: tuple[StatusRule, ...]) -> None:
        super().__init__(ctx, "status-rules")
        self.rules = {(r.group, r.kind): r for r in rules}
        self.groups = {r.group for r in rules}

    def rule_for(self, resource: str, obj: Obj) -> StatusRule | None:
        return self.rules.get((_group(resource), str(obj.get("kind", ""))))

    def observe_entry(self, entry: Entry) -> None:
        key = entry.row.key
        if entry.row.deleted or _group(key.resource) not in self.groups:
            return
        self.consider(key, entry.obj())

    def consider(self, key: Key, obj: Obj) -> None:
        rule = self.rule_for(key.resource, obj)
        if rule is None or deleting(obj) or rule.satisfied(obj):
            return
        self.add_after(key, self.ctx.ready_delay if rule.delay is None else rule.delay)

    async def backfill(self, spaces: list[str]) -> None:
        """Queue existing objects of ruled kinds (after a restart)."""
        for space in spaces:
            for rtype in self.ctx.catalog.types(space):
                if (rtype.group, rtype.kind) not in self.rules:
                    continue
                rows = await self.objects.run_sync(self.objects.rows_in, space, rtype.group_resource)
                for row in rows:
                    self.consider(row.key, decode_object(row))

    async def handle(self, key: Any) -> bool:
        rtype = self.ctx.catalog.by_group_resource(key.space, key.resource)
        if rtype is None:
            return False
        obj = await self.objects.find(key.space, rtype, key.namespace, key.name)
        if obj is None:
            return False
        rule = self.rule_for(key.resource, obj)
        if rule is None or deleting(obj) or rule.satisfied(obj):
            return False
        subresource = "status" if "status" in rtype.subresources else ""
        try:
            await self.objects.guaranteed_update(key.space, rtype, key.namespace, key.name, rule.apply,
                                                 WriteOptions(manager=MANAGER), subresource=subresource)
        except StatusError as exc:
            if exc.code != 404:
                raise
        return False
