"""Where the host's modules lived before they were made private (written by scripts/privatize.py).

The checkpoint codec names a class ``module:qualname`` in what it stores; a value stored before a
module was renamed names the old module, and :func:`current` turns that into the module's name
now, so stored checkpoints, run records and transcripts stay readable. Keys and values are dotted
module paths; a key also covers its submodules (``seamkit.agent`` moves ``seamkit.agent.loop``).
"""

from __future__ import annotations

MOVED: dict[str, str] = {
}


def current(module: str) -> str:
    """``module`` (a dotted path) under its current name; itself when it never moved."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        new = MOVED.get(".".join(parts[:i]))
        if new is not None:
            return ".".join([new, *parts[i:]])
    return module
