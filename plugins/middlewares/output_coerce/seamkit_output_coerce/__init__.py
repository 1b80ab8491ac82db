"""seamkit-output-coerce: the ``output_coerce`` middleware (partial typed output while streaming,
final validation and bounded repair; see :mod:`seamkit_output_coerce.middleware`).

Importing this package is cheap; the middleware module loads on first attribute access."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit_output_coerce.config import OutputCoerceConfig
    from seamkit_output_coerce.middleware import OutputCoerceMiddleware, build, partial_parser

__all__ = ["OutputCoerceConfig", "OutputCoerceMiddleware", "build", "partial_parser"]


def __getattr__(name: str) -> Any:
    if name == "OutputCoerceConfig":
        from seamkit_output_coerce.config import OutputCoerceConfig

        return OutputCoerceConfig
    if name in ("OutputCoerceMiddleware", "build", "partial_parser"):
        from seamkit_output_coerce import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module 'seamkit_output_coerce' has no attribute {name!r}")
