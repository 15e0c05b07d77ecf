"""What the hub's metrics read when scraped: the streams' lag (in changes not yet sent, and in seconds since
the drain that published the first of them) and the count of failing reports."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from placement.engine import PlacementEngine
from status.reports import Report, ReportStore
from sync.stream import Lag, StreamPosition, StreamSource
from tests.placement_world import FLORIN, example1_engine, ref, wobj

HTDOCS = ("wmw-c", "configmaps", "commonstuff", "httpd-htdocs")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock(100.0)
    monkeypatch.setattr("sync.stream.monotonic", clock)
    return clock


def source_of(engine: PlacementEngine) -> tuple[StreamSource, Any]:
    service = SimpleNamespace(engine=engine, target_listeners=[])
    # The inventory and entry types serve only the streams' messages, which these tests never make.
    return StreamSource(service, None, None, "epoch", 15.0), service  # type: ignore[arg-type]


def drain(service: Any, *targets: str) -> None:
    """What the placement service does after a drain that changed these targets' desired sets."""
    for listener in service.target_listeners:
        listener(set(targets), set())


def test_a_streams_lag_counts_from_the_drain_that_published_the_first_change_it_was_not_sent(clock: Clock) -> None:
    engine = example1_engine()
    source, service = source_of(engine)
    florin = StreamPosition("florin", engine.current_seq("florin"), clock.now)
    source.positions.add(florin)
    assert source.lag() == {"florin": Lag(0, 0.0)}

    engine.upsert_object(wobj(*HTDOCS, revision=2))
    clock.now = 105.0
    assert source.lag()["florin"] == Lag(1, 0.0)  # not drained yet: no stream could have sent it
    drain(service, "florin", "guilder")
    clock.now = 112.0
    assert source.lag()["florin"] == Lag(1, 7.0)

    engine.upsert_object(wobj(*HTDOCS, revision=3))  # a later change does not restart the clock
    drain(service, "florin", "guilder")
    clock.now = 120.0
    assert source.lag()["florin"] == Lag(2, 15.0)

    florin.seq = engine.current_seq("florin")  # its syncer was sent everything
    assert source.lag()["florin"] == Lag(0, 0.0)


def test_a_target_shows_its_most_advanced_stream_and_a_new_stream_at_most_its_age(clock: Clock) -> None:
    engine = example1_engine()
    source, service = source_of(engine)
    start = engine.current_seq("guilder")
    engine.upsert_object(wobj(*HTDOCS, revision=2))
    drain(service, "florin", "guilder")
    clock.now = 130.0
    source.positions.add(StreamPosition("guilder", start, opened=128.0))  # opened after the change was published
    assert source.lag()["guilder"] == Lag(1, 2.0)
    source.positions.add(StreamPosition("guilder", engine.current_seq("guilder"), opened=100.0))
    assert source.lag() == {"guilder": Lag(0, 0.0)}


def test_a_stream_starting_over_has_its_whole_desired_set_to_send(clock: Clock) -> None:
    engine = example1_engine()
    source, _ = source_of(engine)
    source.positions.add(StreamPosition("florin", 0, opened=90.0))
    assert source.lag() == {"florin": Lag(len(FLORIN), 10.0)}


def test_changes_a_cluster_is_never_sent_leave_it_up_to_date(clock: Clock) -> None:
    engine = example1_engine()
    source, service = source_of(engine)
    florin = StreamPosition("florin", engine.current_seq("florin"), clock.now)
    source.positions.add(florin)
    engine.narrow(ref(*HTDOCS), frozenset({"guilder"}))  # florin gets a DELETE, then nothing of it
    florin.seq = engine.current_seq("florin")
    engine.upsert_object(wobj(*HTDOCS, revision=2))
    drain(service, "florin", "guilder")
    clock.now = 110.0
    assert engine.current_seq("florin") > florin.seq
    assert source.lag() == {"florin": Lag(0, 0.0)}


def test_the_reports_count_the_objects_failing_as_reports_come_and_go() -> None:
    reports = ReportStore()
    cm = ref(*HTDOCS)
    applied, refused = Report(None, None, 1, "t"), Report(None, "refused", 1, "t")
    reports.put(cm, "florin", refused)
    reports.put(cm, "guilder", refused)
    assert reports.failing == 2
    reports.put(cm, "florin", applied)
    reports.put(cm, "guilder", refused)
    assert reports.failing == 1
    reports.drop(cm, "florin")
    assert reports.failing == 1
    reports.drop(cm, "guilder")
    assert reports.failing == 0
