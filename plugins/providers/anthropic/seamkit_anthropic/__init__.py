"""seamkit-anthropic: the ``anthropic`` provider component (Anthropic's Messages API, streaming).

Importing this package is cheap; the provider itself lives in :mod:`seamkit_anthropic.provider`
and is imported on first use (``use: anthropic`` in YAML, or ``build(config)``).
"""

from __future__ import annotations

__all__: list[str] = []
