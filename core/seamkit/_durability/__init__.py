"""Durable runs: the checkpoint codec and records, the :class:`Checkpointer` facade over a
:class:`~seamkit._ports.CheckpointPort`, the effect ledger and approvals.

Backends (SQLite, PostgreSQL, Redis) are plugins; an in-memory reference backend is in
:mod:`seamkit.testing._memory_store`.
"""
