"""The syncer's status reporter: a report the hub did not take is sent again, even while the stream stays up."""

from __future__ import annotations

import asyncio
from typing import Any

from syncer.hubclient import HubError
from syncer.reporting import StatusReporter


class FlakyHub:
    """Refuses the first ``failures`` reports as unreachable, then records what it gets."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.received: list[list[dict[str, Any]]] = []

    async def report(self, objects: list[dict[str, Any]]) -> None:
        if self.failures:
            self.failures -= 1
            raise HubError(0, "Unavailable", "hub unreachable: ReadError('')")
        self.received.append(objects)


async def _delivered(hub: FlakyHub, failures_seen: int) -> list[list[dict[str, Any]]]:
    reporter = StatusReporter(hub, 0.01, "wec1")  # type: ignore[arg-type]
    reporter.connected.set()  # the stream is up, and stays up: no SYNCED will come
    task = asyncio.create_task(reporter.run())
    reporter.pending["a"] = [{"name": "a", "status": {"ready": True}}]
    reporter.wake.set()
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not hub.received and loop.time() < deadline:
            await asyncio.sleep(0.02)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert hub.failures == 0, f"only {failures_seen - hub.failures} of {failures_seen} failures happened"
    return hub.received


def test_a_failed_report_is_resent_while_the_stream_stays_up() -> None:
    received = asyncio.run(_delivered(FlakyHub(failures=2), 2))
    assert received == [[{"name": "a", "status": {"ready": True}}]]
