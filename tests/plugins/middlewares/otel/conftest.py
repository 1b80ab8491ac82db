from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from otel_testlib import OtlpReceiver, Recorder, receiver


@pytest.fixture(params=["sdk", "lean"])
def rec(request: pytest.FixtureRequest) -> Recorder:
    """SDK providers recording spans and metrics in memory (never installed globally); the
    middleware makes SDK spans (an application's provider) or ends lean spans into the provider's
    processor (a provider of its own: seamkit_otel.lean)."""
    return Recorder(lean=request.param == "lean")


@pytest.fixture
def otlp() -> Iterator[OtlpReceiver]:
    """A local OTLP/HTTP receiver on loopback."""
    yield from receiver()


@pytest.fixture
def otel_plugin(register_plugin: Callable[..., Any]) -> None:
    """``use: otel`` resolvable in the process-wide registry, whether or not seamkit-otel is installed."""
    import seamkit_otel.plugin
    from seamkit._plugins.registry import get_registry

    if "otel" in get_registry().names("middleware"):
        return
    report = register_plugin(seamkit_otel.plugin, "otel-under-test", distribution="seamkit-otel", version="0.1.0")
    assert report.status == "ok", report.error
