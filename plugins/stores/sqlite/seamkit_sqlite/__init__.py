"""seamkit-sqlite: a :class:`~seamkit._ports.StorePort` and :class:`~seamkit._ports.CheckpointPort` on
one SQLite file (``use: sqlite``). ``from seamkit_sqlite import SqliteStore``: the store class, from
:mod:`seamkit_sqlite.store`, imported on first use (this package is imported to register the
plugin, which must stay cheap)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit_sqlite.store import SqliteStore

__all__ = ["SqliteStore"]


def __getattr__(name: str) -> Any:
    if name == "SqliteStore":
        from seamkit_sqlite.store import SqliteStore

        return SqliteStore
    raise AttributeError(f"module 'seamkit_sqlite' has no attribute {name!r}")
