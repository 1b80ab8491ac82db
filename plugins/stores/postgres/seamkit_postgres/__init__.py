"""seamkit-postgres: the ``postgres`` store (StorePort + CheckpointPort on PostgreSQL)."""
