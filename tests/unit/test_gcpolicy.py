"""The collector policy: what survives a full collection is frozen, garbage made afterwards is still freed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from apiserver.server.gcpolicy import CollectorPolicy, loading


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def policy() -> Iterator[CollectorPolicy]:
    thresholds = gc.get_threshold()
    installed = CollectorPolicy()
    installed.install()
    try:
        yield installed
    finally:
        installed.uninstall()
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_survivors_of_a_full_collection_are_frozen_and_later_cycles_still_collected(policy: CollectorPolicy) -> None:
    assert gc.get_threshold()[0] >= 10_000  # the young generation runs less often
    long_lived = [Node() for _ in range(1000)]
    gc.collect()
    assert policy.frozen_after_full == 1
    assert gc.get_freeze_count() >= len(long_lived)
    garbage = cycle()  # made after the freeze: an ordinary collection frees it
    gc.collect()
    assert garbage() is None
    assert policy.frozen_after_full == 2



def test_once_a_sweep_is_due_the_frozen_objects_are_handed_back_to_the_collector() -> None:
    thresholds = gc.get_threshold()
    policy = CollectorPolicy(sweep_every=0.0)
    policy.install()
    try:
        gc.freeze()
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert policy.sweeps == 1 and gc.get_freeze_count() == 0
    finally:
        policy.uninstall()
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def test_while_loading_nothing_is_collected_and_what_was_loaded_is_frozen_after(policy: CollectorPolicy) -> None:
    assert gc.isenabled()
    with loading():
        assert not gc.isenabled()
        before = gc.get_count()[0]
        loaded = [Node() for _ in range(100_000)]  # well past the young generation's threshold
        assert gc.get_count()[0] >= before + len(loaded)  # no collection ran
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(loaded)
    with pytest.raises(RuntimeError), loading():
        raise RuntimeError("a start-up that fails")
    assert gc.isenabled()  # the process goes on collecting


def test_without_the_policy_loading_freezes_nothing() -> None:
    with loading():
        assert not gc.isenabled()
        loaded = [Node() for _ in range(1000)]
    assert gc.isenabled() and gc.get_freeze_count() == 0 and loaded
