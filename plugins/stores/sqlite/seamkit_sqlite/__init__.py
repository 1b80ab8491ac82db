"""seamkit-sqlite: a :class:`~seamkit._ports.StorePort` and :class:`~seamkit._ports.CheckpointPort` on
one SQLite file (``use: sqlite``). The store class is in :mod:`seamkit_sqlite.store` (imported on use)."""
