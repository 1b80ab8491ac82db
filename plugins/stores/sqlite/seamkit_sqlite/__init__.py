"""seamkit-sqlite: a :class:`~seamkit.ports.StorePort` and :class:`~seamkit.ports.CheckpointPort` on
one SQLite file (``use: sqlite``). The store class is in :mod:`seamkit_sqlite.store` (imported on use)."""
