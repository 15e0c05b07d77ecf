"""The one work queue (``kubeclient.workqueue``) and the one backoff formula (``kubeclient.backoff``)."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable

from kubeclient.backoff import Backoff, step
from kubeclient.workqueue import WorkQueue


def test_backoff_doubles_up_to_its_cap_and_resets() -> None:
    backoff = Backoff(0.2, 1.0, jitter=False)
    assert [backoff.next() for _ in range(5)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    backoff.reset()
    assert backoff.next() == 0.2


def test_the_steps_double_from_the_first_retry_and_stay_at_the_cap_however_many_attempts() -> None:
    assert [step(n, 1.0, 256.0) for n in (1, 2, 3, 9, 10, 10_000)] == [1.0, 2.0, 4.0, 256.0, 256.0, 256.0]


def test_jittered_backoff_stays_within_half_and_whole_of_each_step() -> None:
    backoff = Backoff(1.0, 4.0)
    for expected in (1.0, 2.0, 4.0, 4.0, 4.0):
        delay = backoff.next()
        assert expected * 0.5 <= delay <= expected


class Recording(WorkQueue):
    def __init__(self, workers: int, fail: int = 0) -> None:
        super().__init__("test", workers=workers)
        self.fail = fail
        self.handled: list[Hashable] = []
        self.running: set[Hashable] = set()
        self.overlapped = False
        self.release = asyncio.Event()

    async def handle(self, key: Hashable) -> bool:
        self.overlapped |= key in self.running
        self.running.add(key)
        try:
            await self.release.wait()
            self.handled.append(key)
            if self.fail:
                self.fail -= 1
                raise RuntimeError("failing on purpose")
            return False
        finally:
            self.running.discard(key)


async def until(predicate, seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.005)


def test_a_key_added_while_handled_is_handled_again_after_never_at_once() -> None:
    asyncio.run(_dirty_while_processing())


async def _dirty_while_processing() -> None:
    queue = Recording(workers=4)
    queue.start()
    try:
        queue.add("a")
        await until(lambda: "a" in queue.running)
        queue.add("a")  # dirty while processing
        queue.add("a")  # de-duplicated with the one above
        queue.add("b")
        queue.release.set()
        await until(lambda: len(queue.handled) == 3)
        await asyncio.sleep(0.05)  # any extra handling would show now
        assert sorted(queue.handled) == ["a", "a", "b"]
        assert not queue.overlapped
    finally:
        await queue.stop()


def test_a_failed_key_is_retried_with_the_backoff_formula() -> None:
    asyncio.run(_retried_with_backoff())


async def _retried_with_backoff() -> None:
    queue = Recording(workers=1, fail=2)
    queue.release.set()
    queue.start()
    try:
        loop = asyncio.get_running_loop()
        began = loop.time()
        queue.add("k")
        await until(lambda: len(queue.handled) == 3)
        # Two failures: retried after 0.2 s, then 0.4 s (no jitter), and the third attempt succeeds.
        assert loop.time() - began >= 0.6
        assert "k" not in queue._failing  # success forgets the backoff: the next failure starts at 0.2 s again
    finally:
        await queue.stop()
