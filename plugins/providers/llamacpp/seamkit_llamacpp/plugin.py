"""Registers the ``llamacpp`` provider (cheap to import: the factory module loads on first use)."""

from __future__ import annotations

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_providers"]


@hookimpl
def seamkit_register_providers(register):  # type: ignore[no-untyped-def]
    register(
        "llamacpp",
        "seamkit_llamacpp.provider:build",
        config="seamkit_llamacpp.config:LlamaCppConfig",
        description="In-process llama.cpp (GGUF on CPU); default model: bundled Gemma 3 270M",
    )
