from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from resilience_fakes import BUILT, FlakyPlugin
from seamkit.testing import FakeClock, make_test_ctx


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ctx(clock: FakeClock) -> Any:
    return make_test_ctx(clock=clock)


@pytest.fixture
def flaky(register_plugin: Callable[..., Any]) -> Iterator[list[Any]]:
    """Registers the ``flaky`` test provider in the process-wide registry; yields the list of
    models it builds."""
    BUILT.clear()
    report = register_plugin(FlakyPlugin(), "resilience-test-flaky")
    assert report.status == "ok", report.error
    yield BUILT
    BUILT.clear()
