"""seamkit-otel: the ``otel`` middleware (see :mod:`seamkit_otel.middleware`).

Importing this package is cheap (it imports no OpenTelemetry module); the middleware module loads
on first attribute access, and the OpenTelemetry SDK only when an exporter is configured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit_otel.config import OtelConfig
    from seamkit_otel.middleware import Otel, build

__all__ = ["Otel", "OtelConfig", "build"]


def __getattr__(name: str) -> Any:
    if name == "OtelConfig":
        from seamkit_otel.config import OtelConfig

        return OtelConfig
    if name in ("Otel", "build"):
        from seamkit_otel import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module 'seamkit_otel' has no attribute {name!r}")
