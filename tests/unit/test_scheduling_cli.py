"""``spacehub placement explain NAME`` and ``reschedule`` (argument parsing and the scores table), and
``spacehub cluster taint`` arguments; the commands themselves are exercised end to end in
tests/integration/test_scheduling.py."""

from __future__ import annotations

import pytest

from placement.scheduling_cli import format_scheduling
from spacehub.main import build_parser
from spaces.client import ClientError


def test_explain_takes_a_name_or_a_file_not_both() -> None:
    args = build_parser().parse_args(["placement", "explain", "web", "--space", "s"])
    assert args.name == "web" and args.filename is None
    for argv in (["placement", "explain", "web", "-f", "p.yaml", "--space", "s"], ["placement", "explain",
                                                                                   "--space", "s"]):
        parsed = build_parser().parse_args(argv)
        with pytest.raises(ClientError, match="either NAME"):
            parsed.func(parsed)


def test_reschedule_and_taint_parse() -> None:
    args = build_parser().parse_args(["placement", "reschedule", "web", "--space", "s"])
    assert args.name == "web" and callable(args.func)
    taint = build_parser().parse_args(["cluster", "taint", "wec1", "k=v:NoSchedule", "old-"])
    assert taint.taints == ["k=v:NoSchedule", "old-"]
    bad = build_parser().parse_args(["cluster", "taint", "wec1", "k=v"])
    with pytest.raises(ClientError, match="invalid taint"):
        bad.func(bad)


def test_scores_table_has_a_column_per_prioritizer_and_the_reasons() -> None:
    text = format_scheduling({
        "name": "web", "scheduled": True, "wanted": 2, "chosen": ["a"],
        "condition": {"status": "False", "reason": "NotEnoughClusters", "message": "1 of 2 clusters chosen"},
        "candidates": [{"cluster": "a", "chosen": True, "score": 150.0,
                        "scores": {"Capacity": 100.0, "Label:tier": 50.0}},
                       {"cluster": "b", "chosen": False, "score": 0.0, "scores": {}, "reason": "Tainted",
                        "message": "taint k:NoExecute is not tolerated"}]})
    lines = text.splitlines()
    assert lines[0] == "EdgePlacement web: 1 of 2 clusters chosen (NotEnoughClusters: 1 of 2 clusters chosen)"
    assert lines[1].split() == ["CLUSTER", "CHOSEN", "SCORE", "CAPACITY", "LABEL:TIER", "REASON", "MESSAGE"]
    assert lines[2].split() == ["a", "yes", "150", "100", "50"]
    assert lines[3].split()[:6] == ["b", "no", "0", "-", "-", "Tainted"]
    assert "not scheduled" in format_scheduling({"name": "x", "scheduled": False})
