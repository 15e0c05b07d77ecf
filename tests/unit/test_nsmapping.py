"""The namespace mapping rule (spaces/nsmapping.py): rendering, the map's precedence, and what is refused."""

from __future__ import annotations

from spaces.nsmapping import mapping_causes, parse, space_segment


def test_space_is_the_path_below_root_with_dashes() -> None:
    assert space_segment("team-a") == "team-a"
    assert space_segment("root:team-a") == "team-a"
    assert space_segment("org:team") == "org-team"


def test_the_map_wins_the_template_maps_the_rest_and_without_one_they_stay() -> None:
    both = parse({"template": "{{space}}-{{namespace}}", "map": {"db": "shared-db"}})
    assert both is not None
    assert both.cluster_namespace("org:team", "app") == "org-team-app"
    assert both.cluster_namespace("org:team", "db") == "shared-db"
    only_map = parse({"map": {"db": "team-db"}})
    assert only_map is not None
    assert only_map.cluster_namespace("team-a", "app") == "app"
    assert parse({}) is None and parse(None) is None


def test_an_invalid_mapping_maps_nothing() -> None:
    assert parse({"template": "all-in-one"}) is None
    assert parse({"map": {"a": "x", "b": "x"}}) is None
    assert parse({"map": {"a": 7}}) is None


def test_causes_name_the_field() -> None:
    fields = {c.field for c in mapping_causes({"template": "{{nope}}-{{namespace}}", "map": {"Bad": "ok"}},
                                              "spec.namespaceMapping")}
    assert fields == {"spec.namespaceMapping.template", "spec.namespaceMapping.map[Bad]"}
    assert mapping_causes("x", "spec.namespaceMapping")[0].field == "spec.namespaceMapping"
    assert mapping_causes({"template": ""}, "spec.namespaceMapping")[0].type == "FieldValueRequired"
