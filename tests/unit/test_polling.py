"""tests/polling.py: waits retry only "not yet"; a predicate's own failure surfaces at once."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.polling import eventually, wait_for


def test_a_predicates_exception_fails_at_once_with_its_own_type() -> None:
    calls = []

    def broken() -> bool:
        calls.append(1)
        return None + 1  # type: ignore[operator]  # a bug in the test: TypeError

    started = time.monotonic()
    with pytest.raises(TypeError):
        wait_for(broken, timeout=20)
    assert calls == [1] and time.monotonic() - started < 1


def test_only_the_named_errors_are_retried_and_the_last_is_reported_at_the_deadline() -> None:
    answers = iter([ConnectionRefusedError("not listening"), None, False, "up"])

    def starting() -> str | bool | None:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_for(starting, timeout=5, interval=0.001, retry_on=(ConnectionRefusedError,)) == "up"

    def refused() -> bool:
        raise ConnectionRefusedError("still not listening")

    with pytest.raises(AssertionError, match=r"timed out after 0.05s waiting for the server; last error: "
                                             r"ConnectionRefusedError\('still not listening'\)"):
        wait_for(refused, timeout=0.05, interval=0.01, message="the server", retry_on=(ConnectionRefusedError,))
    with pytest.raises(ConnectionRefusedError):  # not named: not retried
        wait_for(refused, timeout=5)


def test_eventually_awaits_async_probes_and_lets_their_exceptions_through() -> None:
    async def scenario() -> None:
        ticks = iter(range(5))

        async def probe() -> int:
            return next(ticks)

        assert await eventually(probe, timeout=5) == 1  # 0 is "not yet"
        with pytest.raises(KeyError):
            await eventually(lambda: {}["missing"], timeout=5)
    asyncio.run(scenario())
