"""seamkit-resilience: ``retry``, ``circuit_breaker`` and ``fallback`` middlewares for chat calls.

Every decision reads :attr:`seamkit.errors.ProviderError.failure_class`, never an error message.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
