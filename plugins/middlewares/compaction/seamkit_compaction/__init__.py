"""The ``compaction`` middleware: see :mod:`seamkit_compaction.middleware`."""
