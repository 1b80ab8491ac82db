"""seamkit-memoize: the ``memoize`` middleware (see :mod:`seamkit_memoize.middleware`).

Importing this package is cheap; the middleware module loads on first attribute access."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit_memoize.config import MemoizeConfig
    from seamkit_memoize.key import request_key
    from seamkit_memoize.middleware import Memoize, build

__all__ = ["MemoizeConfig", "Memoize", "build", "request_key"]


def __getattr__(name: str) -> Any:
    if name == "MemoizeConfig":
        from seamkit_memoize.config import MemoizeConfig

        return MemoizeConfig
    if name == "request_key":
        from seamkit_memoize.key import request_key

        return request_key
    if name in ("Memoize", "build"):
        from seamkit_memoize import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module 'seamkit_memoize' has no attribute {name!r}")
