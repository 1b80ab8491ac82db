"""seamkit-vector-sqlite: a :class:`~seamkit.ports.VectorPort` on SQLite with sqlite-vec."""
