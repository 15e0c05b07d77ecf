"""What an export offers and what each binding of a space serves (spaces.apibinding.resolve), decided from objects."""

from __future__ import annotations

from typing import Any

from apiserver.builtin.kinds import builtin_types
from apiserver.customresources import types_from_crd
from apiserver.resourcetypes import ResourceType
from spaces.apibinding.resolve import ExportRef, Offer, offer, resolve_space


def crd_types(group: str, plural: str, kind: str, versions: tuple[str, ...] = ("v1",)) -> list[ResourceType]:
    return types_from_crd({"spec": {"group": group, "scope": "Namespaced",
                                    "names": {"plural": plural, "kind": kind, "singular": kind.lower()},
                                    "versions": [{"name": v, "served": True, "storage": v == versions[0]}
                                                 for v in versions]}})


def export(*crds: str) -> dict[str, Any]:
    return {"spec": {"customResourceDefinitions": list(crds)}}


def binding(name: str, path: str, export_name: str, created: str = "2024-01-01T00:00:00Z") -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created},
            "spec": {"reference": {"export": {"path": path, "name": export_name}}}}


GADGETS = crd_types("example.io", "gadgets", "Gadget", ("v1", "v1beta1"))
WIDGETS = crd_types("example.io", "widgets", "Widget")
PROVIDER = ExportRef("provider", "tools")


def offers(found: dict[ExportRef, Offer]) -> Any:
    return found.get


def test_an_export_offers_every_served_version_of_the_crds_it_names_and_reports_the_others() -> None:
    offered = offer(export("gadgets.example.io", "absent.example.io"), GADGETS + WIDGETS)
    assert [t.version for t in offered.types["gadgets.example.io"]] == ["v1", "v1beta1"]
    assert list(offered.types) == ["gadgets.example.io"]
    assert offered.missing == ("absent.example.io",)


def test_a_binding_serves_what_its_export_offers() -> None:
    found = {PROVIDER: offer(export("gadgets.example.io", "widgets.example.io"), GADGETS + WIDGETS)}
    verdicts = resolve_space([binding("tools", "provider", "tools")], offers(found), builtin_types(), ())
    verdict = verdicts["tools"]
    assert verdict.export_found and not verdict.conflicts
    assert list(verdict.served) == ["gadgets.example.io", "widgets.example.io"]
    assert len(verdict.served_types()) == 3


def test_the_spaces_own_crd_wins_over_a_binding_and_only_its_resource_is_refused() -> None:
    found = {PROVIDER: offer(export("gadgets.example.io", "widgets.example.io"), GADGETS + WIDGETS)}
    own = crd_types("example.io", "gizmos", "Gadget")  # another resource name, the same kind: kubectl could not tell
    verdict = resolve_space([binding("tools", "provider", "tools")], offers(found), builtin_types(), own)["tools"]
    assert list(verdict.served) == ["widgets.example.io"]
    assert verdict.conflicts == ('gadgets.example.io clashes with CustomResourceDefinition "gizmos.example.io" of '
                                 "this space",)


def test_the_older_of_two_bindings_of_one_resource_serves_it() -> None:
    other = ExportRef("elsewhere", "tools")
    offered = offer(export("gadgets.example.io"), GADGETS)
    found = {PROVIDER: offered, other: offered}
    verdicts = resolve_space([binding("newer", "elsewhere", "tools", "2024-02-01T00:00:00Z"),
                              binding("older", "provider", "tools", "2024-01-01T00:00:00Z")],
                             offers(found), builtin_types(), ())
    assert list(verdicts["older"].served) == ["gadgets.example.io"]
    assert verdicts["newer"].served == {}
    assert verdicts["newer"].conflicts == ('gadgets.example.io clashes with APIBinding "older"',)


def test_a_binding_never_shadows_a_built_in_kind_and_waits_for_a_missing_export() -> None:
    deployments = crd_types("apps", "deployments", "Deployment")
    found = {PROVIDER: offer(export("deployments.apps"), deployments)}
    verdicts = resolve_space([binding("apps", "provider", "tools"), binding("later", "provider", "nothing")],
                             offers(found), builtin_types(), ())
    assert verdicts["apps"].conflicts == ('deployments.apps clashes with the built-in resource "deployments.apps"',)
    assert not verdicts["later"].export_found and verdicts["later"].ref == ExportRef("provider", "nothing")
