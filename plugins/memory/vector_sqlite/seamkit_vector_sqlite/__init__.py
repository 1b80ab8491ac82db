"""seamkit-vector-sqlite: a :class:`~seamkit._ports.VectorPort` on SQLite with sqlite-vec."""
