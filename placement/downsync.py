"""The "what" predicate of an EdgePlacement: compiling ``spec.downsync`` and testing workload objects.

Owns the meaning of a ``DownsyncObjectTest`` and the wording of why an object is not selected. Never
keeps state about placements or targets and never does I/O: callers pass the object and a way to
read its Namespace's labels.

Semantics (``edge.kubestellar.io/v2alpha1`` ``DownsyncObjectTest``; the tests of ``spec.downsync`` are
ORed, and within a test every field is ANDed):

- ``apiGroup``: absent or null matches every group; ``""`` is the core group; otherwise the exact group.
- ``resources``: lower-case plural names. Absent or ``[]`` matches every resource, an entry ``"*"``
  matches every resource.
- ``namespaces``: absent or ``[]`` puts no constraint (namespaced and cluster-scoped objects alike,
  as upstream's matcher and example1's ``apiservices``/``namespaces`` tests rely on). An entry ``"*"``
  matches every object, and is the only entry that matches a cluster-scoped object: a list of names
  matches only namespaced objects in those namespaces. ``""`` is not a namespace name; it is dropped
  with a problem.
- ``namespaceSelectors``: absent or ``[]`` puts no constraint. Otherwise a namespaced object matches if
  any selector matches the labels of its Namespace object in the same space (a Namespace that does not
  exist in the space matches nothing), and a cluster-scoped object matches only if one of the
  selectors is ``{}`` (the Go comment's rule; a selector that merely accepts an empty label set, such
  as ``!x``, does not count).
- ``objectNames``: absent or ``[]`` or an entry ``"*"`` matches every name; otherwise the exact names.
- ``labelSelectors``: absent or ``[]`` puts no constraint; otherwise any selector must match the
  object's labels.
- A test in which no field discriminates (every field absent, empty, ``"*"`` or holding a ``{}``
  selector) is invalid: it is reported as a problem and matches nothing, so a typo can never place a
  whole space everywhere.
- Namespace objects (``namespaces``) are cluster-scoped objects like any other; ``namespaceSelectors``
  do not select a Namespace by its own labels.
- A selector that does not parse matches nothing and is reported as a problem.

Field ownership (not part of the match): ``retainFields`` (dotted paths, ``[i]`` for list items) and
``driftMode`` (``Correct`` or ``ReportOnly``) tell the syncers how to treat what the test selects; the
syncer reads them as the annotations ``spacehub.io/retain-fields`` and ``spacehub.io/drift-mode`` on
the object's copy (:func:`ownership_annotations`). A path that does not parse is dropped with a problem
(the EdgePlacement's schema refuses it first, 422).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from apimachinery.dottedpaths import PathError, parse_path
from apimachinery.errors import StatusError
from apimachinery.fieldownership import DRIFT_MODE_ANNOTATION, RETAIN_ANNOTATION
from apimachinery.selectors import NOTHING, LabelSelector, label_selector_from_object
from placement.model import ObjectRef
from placement.reasons import format_labels, format_selectors, quoted_list

# Reads the labels of Namespace ``name`` in ``space``; None when that Namespace object does not exist.
NamespaceLabels = Callable[[str, str], Mapping[str, str] | None]

WILDCARD = "*"
# The test index of a CRD a ``crdFollow`` placement sends because it selects custom resources it defines.
FOLLOWED = -1
# The test index of an object a ``dependencies: Follow`` placement sends because what it selects references it.
DEPENDENCY = -2


@dataclass(frozen=True)
class DownsyncTest:
    """One compiled ``DownsyncObjectTest``; a None field puts no constraint."""

    index: int
    api_group: str | None
    resources: frozenset[str] | None
    namespaces: frozenset[str] | None
    namespace_selectors: tuple[LabelSelector, ...] | None
    object_names: frozenset[str] | None
    label_selectors: tuple[LabelSelector, ...] | None
    discriminates: bool
    status_collectors: tuple[str, ...] = ()  # StatusCollectors whose results the selected objects get
    retain_fields: tuple[str, ...] = ()  # fields the clusters own once the object is created there
    report_only: bool = False  # driftMode ReportOnly: changes made in a cluster are reported, not put back

    @property
    def cluster_scoped_by_namespace_selector(self) -> bool:
        return self.namespace_selectors is not None and any(s.empty for s in self.namespace_selectors)

    def matches(self, ref: ObjectRef, labels: Mapping[str, str], ns_labels: NamespaceLabels) -> bool:
        # Cheapest and most selective fields first; the result does not depend on the order.
        if not self.discriminates:
            return False
        if self.resources is not None and ref.plural not in self.resources:
            return False
        if self.api_group is not None and ref.group != self.api_group:
            return False
        if self.object_names is not None and ref.name not in self.object_names:
            return False
        if self.namespaces is not None and ref.namespace not in self.namespaces:
            return False
        if self.label_selectors is not None and not any(s.matches(labels) for s in self.label_selectors):
            return False
        return self.namespace_selectors is None or self._namespace_matches(ref, ns_labels)

    def _namespace_matches(self, ref: ObjectRef, ns_labels: NamespaceLabels) -> bool:
        assert self.namespace_selectors is not None
        if not ref.namespace:
            return self.cluster_scoped_by_namespace_selector
        have = ns_labels(ref.space, ref.namespace)
        return have is not None and any(s.matches(have) for s in self.namespace_selectors)

    def mismatch(self, ref: ObjectRef, kind: str, labels: Mapping[str, str], ns_labels: NamespaceLabels) -> str | None:
        """Why the object is not selected: the first field, in spec order, that excludes it."""
        at = f"downsync[{self.index}]"
        if not self.discriminates:
            return f"{at}: ignored: no field discriminates"
        if self.api_group is not None and ref.group != self.api_group:
            return f'{at}.apiGroup: object group "{ref.group}" is not "{self.api_group}"'
        if self.resources is not None and ref.plural not in self.resources:
            hint = " (resources are lower-case plurals)" if kind.lower() in self.resources else ""
            return f"{at}.resources: {ref.resource} not in {quoted_list(self.resources)}{hint}"
        if self.namespaces is not None and ref.namespace not in self.namespaces:
            if not ref.namespace:
                return f'{at}.namespaces: object is cluster-scoped; only "*" matches cluster-scoped objects'
            return f"{at}.namespaces: {ref.namespace} not in {quoted_list(self.namespaces)}"
        if self.namespace_selectors is not None and not self._namespace_matches(ref, ns_labels):
            return f"{at}.namespaceSelectors: {self._namespace_reason(ref, ns_labels)}"
        if self.object_names is not None and ref.name not in self.object_names:
            return f"{at}.objectNames: {ref.name} not in {quoted_list(self.object_names)}"
        if self.label_selectors is not None and not any(s.matches(labels) for s in self.label_selectors):
            return (f"{at}.labelSelectors: {format_selectors(self.label_selectors)} not satisfied "
                    f"(labels: {format_labels(labels)})")
        return None

    def _namespace_reason(self, ref: ObjectRef, ns_labels: NamespaceLabels) -> str:
        assert self.namespace_selectors is not None
        if not ref.namespace:
            return "object is cluster-scoped; only {} matches cluster-scoped objects"
        have = ns_labels(ref.space, ref.namespace)
        if have is None:
            return f"namespace {ref.namespace} does not exist in the space"
        return (f"{format_selectors(self.namespace_selectors)} not satisfied "
                f"(namespace {ref.namespace} labels: {format_labels(have)})")


def compile_selector(raw: Any, path: str, problems: list[str]) -> LabelSelector:
    """A ``metav1.LabelSelector`` from a spec; one that does not parse selects nothing (and is reported)."""
    if not isinstance(raw, Mapping):
        problems.append(f"{path}: not a label selector")
        return NOTHING
    try:
        return label_selector_from_object(raw)
    except StatusError as e:
        problems.append(f"{path}: {e.message}")
        return NOTHING


def _names(raw: Any, path: str, problems: list[str], *, drop_empty: bool = False) -> frozenset[str] | None:
    """A name list where absent, ``[]`` and ``"*"`` all mean "no constraint" (None)."""
    if raw is None:
        return None
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        problems.append(f"{path}: not a list")
        return frozenset()
    values = [str(v) for v in raw]
    if WILDCARD in values:
        if len(values) > 1:
            problems.append(f'{path}: "*" should be the only entry (the others are redundant)')
        return None
    if drop_empty and "" in values:
        problems.append(f'{path}: "" is not a namespace name (use "*" to match cluster-scoped objects)')
        values = [v for v in values if v]
        if not values:
            return frozenset()
    return frozenset(values) if values else None


def _selectors(raw: Any, path: str, problems: list[str]) -> tuple[LabelSelector, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        problems.append(f"{path}: not a list")
        return (NOTHING,)
    selectors = tuple(compile_selector(item, f"{path}[{i}]", problems) for i, item in enumerate(raw))
    return selectors or None


def compile_test(index: int, raw: Any, problems: list[str]) -> DownsyncTest:
    at = f"downsync[{index}]"
    if not isinstance(raw, Mapping):
        problems.append(f"{at}: not an object")
        return DownsyncTest(index, None, None, None, None, None, None, discriminates=False)
    group = raw.get("apiGroup")
    resources = _names(raw.get("resources"), f"{at}.resources", problems)
    namespaces = _names(raw.get("namespaces"), f"{at}.namespaces", problems, drop_empty=True)
    ns_selectors = _selectors(raw.get("namespaceSelectors"), f"{at}.namespaceSelectors", problems)
    names = _names(raw.get("objectNames"), f"{at}.objectNames", problems)
    label_selectors = _selectors(raw.get("labelSelectors"), f"{at}.labelSelectors", problems)
    collectors = _names(raw.get("statusCollectors"), f"{at}.statusCollectors", problems)
    retain = _retain_fields(raw.get("retainFields"), f"{at}.retainFields", problems)
    report_only = raw.get("driftMode") == "ReportOnly"
    discriminates = (
        group is not None
        or resources is not None
        or namespaces is not None
        or (ns_selectors is not None and not any(s.empty for s in ns_selectors))
        or names is not None
        or (label_selectors is not None and not any(s.empty for s in label_selectors))
    )
    if not discriminates:
        problems.append(f"{at}: no field discriminates; at least one must (the test matches nothing)")
    return DownsyncTest(index, None if group is None else str(group), resources, namespaces, ns_selectors,
                        names, label_selectors, discriminates, tuple(sorted(collectors or ())), retain, report_only)


def _retain_fields(raw: Any, path: str, problems: list[str]) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        problems.append(f"{path}: not a list")
        return ()
    kept = []
    for i, text in enumerate(raw):
        try:
            parse_path(text)
        except PathError as exc:
            problems.append(f"{path}[{i}]: {exc}")
            continue
        kept.append(str(text).strip())
    return tuple(sorted(set(kept)))


def ownership_annotations(tests: Sequence[DownsyncTest]) -> dict[str, str]:
    """The field-ownership annotations the tests selecting an object give its copies: the union of their
    ``retainFields`` and ``ReportOnly`` if any asks it (an empty dict when none asks anything)."""
    out = {}
    retain = sorted({path for t in tests for path in t.retain_fields})
    if retain:
        out[RETAIN_ANNOTATION] = ",".join(retain)
    if any(t.report_only for t in tests):
        out[DRIFT_MODE_ANNOTATION] = "ReportOnly"
    return out


def matching_tests(tests: Sequence[DownsyncTest], ref: ObjectRef, labels: Mapping[str, str],
                   ns_labels: NamespaceLabels) -> list[int]:
    """Indexes of the tests the object passes (empty: not selected)."""
    return [t.index for t in tests if t.matches(ref, labels, ns_labels)]


def unserved_resources(tests: Sequence[DownsyncTest], served: AbstractSet[tuple[str, str]]) -> list[str]:
    """The resources the tests name that the space does not serve (``plural.group``, or ``group`` alone
    for a test naming a group and no resource): such a test can never select anything, which a user
    must be told rather than find out from an empty cluster. ``served`` holds (group, plural) pairs."""
    groups = {group for group, _ in served}
    plurals = {plural for _, plural in served}
    out: set[str] = set()
    for t in tests:
        if t.resources is None:
            if t.api_group is not None and t.api_group not in groups:
                out.add(t.api_group or "core")
            continue
        for plural in t.resources:
            known = plural in plurals if t.api_group is None else (t.api_group, plural) in served
            if not known:
                out.add(f"{plural}.{t.api_group}" if t.api_group else plural)
    return sorted(out)
