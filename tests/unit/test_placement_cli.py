"""``spacehub placement``/``cluster`` helpers that need no hub: reading placement files, labels, tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from inventory.cli import parse_labels
from placement.cli import format_explanation, read_placements
from spacehub.main import build_parser
from spaces.client import ClientError

NOTHING = {
    "destinations": [], "matchedLocations": [], "objects": [], "missingCRDs": [], "problems": [],
    "locationMismatches": [{"name": "florin", "reasons": ["locationSelectors[0]: label env=mars: Location has env=prod",
                                                          "locationSelectors[1]: label tier=edge: missing"]}],
    "targetMismatches": [],
    "objectMismatches": [{"name": "configmaps default/cm", "reasons": ["downsync[0].resources: configmaps not in "
                                                                        "[secrets]"]}],
}


def test_explain_tables_put_the_reasons_under_each_name() -> None:
    out = format_explanation(NOTHING, "nowhere", "team-a")
    assert out.startswith('EdgePlacement "nowhere" in space "team-a"\n')
    assert "DESTINATIONS: none (no Location matches spec.locationSelectors)" in out
    assert "SELECTED OBJECTS: none" in out
    lines = out.splitlines()
    start = lines.index("LOCATIONS NOT MATCHED (1)")
    assert lines[start + 1].split() == ["LOCATION", "REASONS"]
    assert lines[start + 2].startswith("florin") and "env=mars" in lines[start + 2]
    assert lines[start + 3].startswith(" ") and "tier=edge" in lines[start + 3]
    assert "SYNC TARGETS NOT SELECTED" not in out
    assert "configmaps default/cm" in out and "PROBLEMS" not in out


def test_explain_tables_list_destinations_and_objects_with_their_indexes() -> None:
    result = {**NOTHING, "locationMismatches": [], "objectMismatches": [], "problems": ["downsync[1]: no field"],
              "destinations": [{"location": "florin", "syncTarget": "florin", "syncTargetUID": "u"}],
              "matchedLocations": [{"location": "florin", "selectorIndexes": [0, 2]}],
              "objects": [{"group": "apps", "resource": "deployments", "namespace": "ns", "name": "d", "tests": [1]}],
              "missingCRDs": ["sprockets.group1.test"]}
    out = format_explanation(result, "", "team-a")
    lines = out.splitlines()
    start = lines.index("DESTINATIONS (1)")
    assert lines[start + 1].split() == ["LOCATION", "SYNC-TARGET", "LOCATION-SELECTORS"]
    assert lines[start + 2].split() == ["florin", "florin", "0,2"]
    start = lines.index("SELECTED OBJECTS (1)")
    assert lines[start + 2].split() == ["deployments.apps", "ns", "d", "1"]
    assert "MISSING CRDS: sprockets.group1.test" in out
    assert "PROBLEMS\n  downsync[1]: no field" in out


def test_explain_tables_say_why_a_dependency_is_sent() -> None:
    result = {**NOTHING, "locationMismatches": [], "objectMismatches": [], "objects": [
        {"group": "", "resource": "configmaps", "namespace": "ns", "name": "conf", "tests": [], "dependency": True,
         "because": ["sent because deployments.apps ns/d mounts it"]},
        {"group": "apps", "resource": "deployments", "namespace": "ns", "name": "d", "tests": [0]}]}
    lines = format_explanation(result, "", "team-a").splitlines()
    start = lines.index("SELECTED OBJECTS (2)")
    assert lines[start + 1].split() == ["RESOURCE", "NAMESPACE", "NAME", "DOWNSYNC-TESTS", "SENT-BECAUSE"]
    assert lines[start + 2].split()[:4] == ["configmaps", "ns", "conf", "-"]
    assert lines[start + 2].rstrip().endswith("  sent because deployments.apps ns/d mounts it")
    assert lines[start + 3].split() == ["deployments.apps", "ns", "d", "0"]


def test_read_placements_takes_edgeplacements_or_one_bare_spec(tmp_path: Path) -> None:
    many = tmp_path / "many.yaml"
    many.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"
                    "apiVersion: edge.kubestellar.io/v2alpha1\nkind: EdgePlacement\nmetadata: {name: p}\nspec: {}\n")
    assert [d["metadata"]["name"] for d in read_placements(str(many))] == ["p"]
    bare = tmp_path / "spec.yaml"
    bare.write_text("locationSelectors: [{matchLabels: {env: prod}}]\n")
    assert read_placements(str(bare)) == [{"locationSelectors": [{"matchLabels": {"env": "prod"}}]}]
    other = tmp_path / "other.yaml"
    other.write_text("kind: ConfigMap\n")
    with pytest.raises(ClientError, match="no EdgePlacement"):
        read_placements(str(other))
    with pytest.raises(ClientError, match="cannot read"):
        read_placements(str(tmp_path / "absent.yaml"))


def test_labels_are_key_value_pairs() -> None:
    assert parse_labels(["env=prod", "empty="]) == {"env": "prod", "empty": ""}
    with pytest.raises(ClientError, match="KEY=VALUE"):
        parse_labels(["env"])


def test_commands_are_registered_with_the_common_flags() -> None:
    args = build_parser().parse_args(["cluster", "register", "florin", "--label", "env=prod", "--kubeconfig", "k"])
    assert (args.name, args.label, args.kubeconfig) == ("florin", ["env=prod"], "k")
    args = build_parser().parse_args(["placement", "explain", "-f", "p.yaml", "--space", "s", "-o", "json"])
    assert (args.filename, args.space, args.output) == ("p.yaml", "s", "json")
