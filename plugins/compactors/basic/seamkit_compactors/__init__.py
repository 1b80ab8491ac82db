"""seamkit-compactors: compactors that need no model, ``sliding_window``, ``truncation`` and
``tool_result_clearing`` (see :mod:`seamkit._compaction` for the invariants they keep).

Importing this package is cheap; the compactor module loads on first attribute access."""

from __future__ import annotations

from seamkit.plugin import lazy_attributes

TYPE_CHECKING = False

_EXPORTS = {
    "SlidingWindowCompactor": "seamkit_compactors.compactors",
    "TruncationCompactor": "seamkit_compactors.compactors",
    "ToolResultClearingCompactor": "seamkit_compactors.compactors",
    "cleared_placeholder": "seamkit_compactors.compactors",
    "is_cleared": "seamkit_compactors.compactors",
    "SlidingWindowConfig": "seamkit_compactors.config",
    "TruncationConfig": "seamkit_compactors.config",
    "ToolResultClearingConfig": "seamkit_compactors.config",
}

__all__ = [
    "SlidingWindowCompactor",
    "SlidingWindowConfig",
    "ToolResultClearingCompactor",
    "ToolResultClearingConfig",
    "TruncationCompactor",
    "TruncationConfig",
    "cleared_placeholder",
    "is_cleared",
]

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from seamkit_compactors.compactors import (
        SlidingWindowCompactor,
        ToolResultClearingCompactor,
        TruncationCompactor,
        cleared_placeholder,
        is_cleared,
    )
    from seamkit_compactors.config import SlidingWindowConfig, ToolResultClearingConfig, TruncationConfig
