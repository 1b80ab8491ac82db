"""seamkit-audit: the ``audit`` middleware (see :mod:`seamkit_audit.middleware`) and
``seamkit runs audit RUN_ID``.

Importing this package is cheap; the middleware module loads on first attribute access."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit_audit.config import AuditConfig
    from seamkit_audit.middleware import Audit, build, read_records

__all__ = ["Audit", "AuditConfig", "build", "read_records"]


def __getattr__(name: str) -> Any:
    if name == "AuditConfig":
        from seamkit_audit.config import AuditConfig

        return AuditConfig
    if name in ("Audit", "build", "read_records"):
        from seamkit_audit import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module 'seamkit_audit' has no attribute {name!r}")
