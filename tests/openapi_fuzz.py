"""Property-based testing of an API against its own OpenAPI document, with schemathesis.

One bounded hypothesis run per operation and generation mode (valid and invalid requests), each case
sent and checked by schemathesis (no 5xx, status codes, content types and bodies as documented, valid
data accepted, invalid data rejected). Used instead of ``schemathesis.pytest.from_fixture``, whose lazy
loader does not run under pytest 9, so that a schema served by a fixture (a real hub) can be tested.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode


def fuzz_operations(schema: Any, call: Callable[[Any], object], *, max_examples: int = 25) -> tuple[list[str], int]:
    """Run ``call(case)`` on generated cases of every operation; the failures (one line each) and the count
    of operations run."""
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=max_examples, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck),
                      phases=[Phase.explicit, Phase.generate, Phase.shrink])
            def run(case: Any) -> None:
                call(case)

            try:
                run()
            except Unsatisfiable:
                continue  # nothing about this operation can be made invalid (no parameters, no body)
            except (Exception, BaseExceptionGroup) as exc:  # schemathesis reports several as a group
                failures.append(f"{operation.label} [{mode.value}]: {exc}")
    return failures, operations
