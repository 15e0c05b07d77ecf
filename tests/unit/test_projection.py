"""What clusters (and child hubs) get of an object: ``placement.projection``."""

from __future__ import annotations

from typing import Any

from placement.projection import CHILD_HUB_PLACEMENT, child_hub_levels, project


def placement_annotated(value: str) -> dict[str, Any]:
    return {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement",
            "metadata": {"name": "down", "resourceVersion": "7", "uid": "u",
                         "annotations": {CHILD_HUB_PLACEMENT: value, "team": "a"}},
            "spec": {"locationSelectors": []}, "status": {"matchingLocationCount": 1}}


def test_a_child_hub_placement_acts_in_the_child_hub_or_is_carried_a_level_nearer_to_the_hub_that_acts() -> None:
    for acts_below in ("true", "1"):
        projected = project(placement_annotated(acts_below))
        assert projected["metadata"] == {"name": "down", "annotations": {"team": "a"}}  # ordinary in the child
        assert "status" not in projected
    two_down = placement_annotated("3")
    assert project(two_down)["metadata"]["annotations"] == {CHILD_HUB_PLACEMENT: "2", "team": "a"}
    assert two_down["metadata"]["annotations"][CHILD_HUB_PLACEMENT] == "3"  # the stored object is not changed
    assert [child_hub_levels(v) for v in ("true", "1", "3", "0", "-1", "x", "17", None)] == [1, 1, 3, 0, 0, 0, 0, 0]
