"""Namespace mapping: the cluster namespace a space's namespace is written to (``namespaceMapping``).

An EdgePlacement's ``spec.namespaceMapping`` (or, for placements without one, its Space's
``spec.namespaceMapping``) is ``{template: "{{space}}-{{namespace}}"}``, an explicit ``{map: {app: team-a-app}}``,
or both: a namespace named in ``map`` goes where the map says, any other goes where the template renders it,
and without a template it stays as it is. ``{{space}}`` is the space's path below root with ``:`` as ``-``
(``root:org:team`` -> ``org-team``). The one place that validates and renders mappings; never does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import duplicate, invalid, is_dns1123_label, required
from apiserver.spacepaths import ROOT, SEPARATOR

MAPPING_FIELD = "namespaceMapping"
SPACE, NAMESPACE = "{{space}}", "{{namespace}}"
_PLACEHOLDER = re.compile(r"\{\{[^}]*\}\}")
_SHORTEST = "a"  # what a placeholder stands for when a template alone is judged


@dataclass(frozen=True)
class NamespaceMapping:
    template: str | None = None
    explicit: Mapping[str, str] = field(default_factory=dict)

    def cluster_namespace(self, space: str, namespace: str) -> str:
        """Where ``namespace`` of ``space`` lives in a cluster (may be no valid name: see :func:`name_problems`)."""
        mapped = self.explicit.get(namespace)
        if mapped is not None:
            return mapped
        if self.template is None:
            return namespace
        return self.template.replace(SPACE, space_segment(space)).replace(NAMESPACE, namespace)


def space_segment(space: str) -> str:
    """The space's path below root, ``:`` written as ``-``: ``team-a`` for ``root:team-a``, ``org-team``."""
    prefix = ROOT + SEPARATOR
    path = space[len(prefix):] if space.startswith(prefix) else space
    return path.replace(SEPARATOR, "-")


def name_problems(name: str) -> list[str]:
    """Why a mapped namespace cannot be a cluster namespace (a DNS-1123 label of at most 63 characters)."""
    return is_dns1123_label(name)


def parse(raw: Any) -> NamespaceMapping | None:
    """The mapping a ``namespaceMapping`` field says; None when it is absent, maps nothing, or is invalid (a Space
    stored before Spaces validated it): a bad mapping never sends two namespaces to one."""
    if not isinstance(raw, Mapping) or mapping_causes(raw, MAPPING_FIELD):
        return None
    template = raw.get("template")
    explicit = raw.get("map")
    mapping = NamespaceMapping(template if isinstance(template, str) and template else None,
                               dict(explicit) if isinstance(explicit, Mapping) else {})
    return mapping if mapping.template is not None or mapping.explicit else None


def mapping_causes(raw: Any, path: str) -> list[Cause]:
    """What is wrong with a ``namespaceMapping`` at ``path`` (``spec.namespaceMapping``): a template must use
    ``{{namespace}}`` (else every namespace lands in one), only the two placeholders, and render a DNS-1123
    label; an explicit map names labels and sends no two namespaces to one."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [invalid(path, raw, "must be an object with template and/or map")]
    causes = []
    template = raw.get("template")
    if template is not None:
        causes += _template_causes(template, f"{path}.template")
    explicit = raw.get("map")
    if explicit is not None:
        causes += _map_causes(explicit, f"{path}.map")
    return causes


def _template_causes(template: Any, path: str) -> list[Cause]:
    if not isinstance(template, str) or not template:
        return [required(path, "a template such as {{space}}-{{namespace}}")]
    unknown = sorted(set(_PLACEHOLDER.findall(template)) - {SPACE, NAMESPACE})
    if unknown:
        return [invalid(path, template, f"unknown placeholder {unknown[0]}: only {SPACE} and {NAMESPACE}")]
    if NAMESPACE not in template:
        return [invalid(path, template, f"must contain {NAMESPACE}, or every namespace would map to one")]
    # Placeholders stand for one character here: what the template adds must leave a valid, short enough label.
    shortest = template.replace(SPACE, _SHORTEST).replace(NAMESPACE, _SHORTEST)
    return [invalid(path, template, f"renders no valid namespace name ({shortest!r}): {problem}")
            for problem in name_problems(shortest)]


def _map_causes(explicit: Any, path: str) -> list[Cause]:
    if not isinstance(explicit, Mapping):
        return [invalid(path, explicit, "must map namespaces to namespaces")]
    causes = []
    first_of: dict[str, str] = {}
    for source in sorted(explicit):
        target = explicit[source]
        entry = f"{path}[{source}]"
        causes += [invalid(entry, source, problem) for problem in is_dns1123_label(str(source))]
        if not isinstance(target, str):
            causes.append(invalid(entry, target, "must be a namespace name"))
            continue
        causes += [invalid(entry, target, problem) for problem in name_problems(target)]
        if target in first_of:
            causes.append(duplicate(entry, target))
        first_of.setdefault(target, source)
    return causes
