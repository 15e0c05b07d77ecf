"""The web UI's view of scheduling in headless Chromium against a real hub and ``spacehub sim serve --with-syncers``
(4 clusters in 2 zones, each with its syncer, talking to the hub over HTTP).

``numberOfClusters: 2`` with zone spread ``maxSkew: 1``, Capacity and Label scores, wec3 tainted ``NoSchedule``
(tests/ui_harness.py, :func:`scheduling_demo`):
the placement picture shows the chosen clusters, every candidate's score per prioritizer and in total and a reason
for each one not chosen, as the REST API says; the fleet shows the taint as a badge; a new taint is seen in both
without reloading. Skipped, saying why, where no Chromium can be started (tests/ui_harness.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.syncer_harness import World
from tests.ui_harness import (  # noqa: F401 (fixtures)
    CHOSEN,
    PLACEMENT,
    SCHEDULING_SPACE,
    ZONES,
    browser_fixture,
    open_ui,
    page_fixture,
    rendered,
    scheduling,
    scheduling_demo,
    scheduling_world,
    sign_in,
)

SPACE, NAME = SCHEDULING_SPACE, PLACEMENT


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = scheduling_world(tmp_path_factory.mktemp("ui-scheduling")).start()
    try:
        scheduling_demo(w)
        yield w
    finally:
        w.close()


def shown_rows(page: Any) -> dict[str, dict[str, Any]]:
    """The score table as the page shows it: per cluster, chosen, total, each prioritizer's score, reason."""
    rows = page.eval_on_selector_all("#scheduling tr[data-candidate]", """rs => rs.map(r => ({
        cluster: r.dataset.candidate, chosen: r.dataset.chosen === 'true', reason: r.dataset.reason,
        total: r.querySelector('td.total').textContent,
        scores: Object.fromEntries([...r.querySelectorAll('td[data-prioritizer]')]
                                   .map(td => [td.dataset.prioritizer, td.textContent]))}))""")
    return {r["cluster"]: r for r in rows}


def as_shown(value: float | None) -> str:
    if value is None:
        return "\u2013"  # the page's en dash: no score
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def test_the_placement_picture_shows_the_choice_every_candidates_scores_and_why_the_others_were_not_chosen(
        page: Any, world: World) -> None:
    sign_in(page, world.hub.token)
    rendered(page, "placement", f"#/space/{SPACE}/placement/{NAME}")
    assert page.eval_on_selector_all("#scheduling-chosen .chip", "cs => cs.map(c => c.textContent)") == CHOSEN
    assert "2 of 2" in page.inner_text("#scheduling h2")
    headers = page.eval_on_selector_all("#scheduling th", "ths => ths.map(th => th.textContent)")
    assert headers == ["Cluster", "Chosen", "Score", "Capacity", "Label:zone", "Reason"]

    api = scheduling(world)
    shown = shown_rows(page)
    assert sorted(shown) == sorted(ZONES)
    for candidate in api["candidates"]:
        row = shown[candidate["cluster"]]
        assert row["chosen"] == candidate["chosen"]
        assert row["total"] == as_shown(candidate["score"])
        assert row["scores"] == {p: as_shown(candidate["scores"].get(p)) for p in ("Capacity", "Label:zone")}
        assert row["reason"] == (candidate["reason"] or "")
    assert [c for c, r in shown.items() if r["chosen"]] == CHOSEN
    assert shown["wec1"]["scores"] == {"Capacity": "100", "Label:zone": "10"} and shown["wec1"]["total"] == "210"
    assert shown["wec3"]["reason"] == "Tainted"
    assert "maintenance=soon:NoSchedule" in page.inner_text('#scheduling tr[data-candidate="wec3"]')
    assert shown["wec2"]["reason"] == "SpreadConstraint"  # wec1 and wec2 would put both copies in za
    # The chosen clusters are the picture's clusters.
    clusters = page.eval_on_selector_all("g.cluster", "gs => gs.map(g => g.dataset.cluster)")
    assert sorted(clusters) == CHOSEN


def test_the_fleet_shows_taints_as_badges_and_both_views_follow_a_new_taint_without_reloading(
        browser: Any, page: Any, world: World) -> None:
    sign_in(page, world.hub.token)
    badges = "() => [...document.querySelectorAll('tr[data-cluster=\"wec2\"] .badge.taint')].map(b => b.dataset.taint)"
    assert page.eval_on_selector_all('tr[data-cluster="wec3"] .badge.taint', "bs => bs.map(b => b.dataset.taint)") \
        == ["maintenance=soon:NoSchedule"]
    assert page.evaluate(badges) == []
    picture = open_ui(browser, world.hub)
    sign_in(picture, world.hub.token)
    rendered(picture, "placement", f"#/space/{SPACE}/placement/{NAME}")
    picture.evaluate("() => { window.stillThisPage = true; }")
    try:
        # NoSchedule on wec2 keeps new choices off it and moves nothing: wec1 stays chosen, wec2's reason changes.
        world.hub.spacehub("cluster", "taint", "wec2", "gpu=broken:NoSchedule")
        page.wait_for_function(f"() => ({badges})().includes('gpu=broken:NoSchedule')", timeout=10_000)
        picture.wait_for_selector('#scheduling tr[data-candidate="wec2"][data-reason="Tainted"]', timeout=10_000)
        assert [c for c, r in shown_rows(picture).items() if r["chosen"]] == CHOSEN
        assert picture.evaluate("() => window.stillThisPage === true")

        world.hub.spacehub("cluster", "taint", "wec2", "gpu-")
        page.wait_for_function(f"() => ({badges})().length === 0", timeout=10_000)
        picture.wait_for_selector('#scheduling tr[data-candidate="wec2"]:not([data-reason="Tainted"])',
                                  timeout=10_000)
        assert picture.errors == []
    finally:
        picture.context.close()


def test_the_explain_view_of_a_stored_placement_shows_its_scores(page: Any, world: World) -> None:
    sign_in(page, world.hub.token)
    rendered(page, "explain", f"#/space/{SPACE}/explain/{NAME}")
    assert "numberOfClusters: 2" in page.input_value("#spec")
    shown = shown_rows(page)
    assert [c for c, r in shown.items() if r["chosen"]] == CHOSEN
    assert all(r["reason"] for r in shown.values() if not r["chosen"])
