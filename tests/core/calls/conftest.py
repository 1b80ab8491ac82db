"""Fixtures of the ``seamkit.ask`` tests: ``fake``, the provider component ``fakeprov`` (see
``calls_testlib``) registered for one test; it yields the shared :class:`FakeState`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from calls_testlib import FakeState, make_plugin


@pytest.fixture
def fake(register_plugin: Callable[..., Any]) -> Iterator[FakeState]:
    state = FakeState()
    report = register_plugin(make_plugin(state), name="fakeprov-plugin")
    assert report.status == "ok", report
    yield state
