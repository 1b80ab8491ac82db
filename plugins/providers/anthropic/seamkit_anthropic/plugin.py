"""Registers the ``anthropic`` provider (cheap to import: the factory module loads on first use)."""

from __future__ import annotations

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_providers"]


@hookimpl
def seamkit_register_providers(register):  # type: ignore[no-untyped-def]
    register(
        "anthropic",
        "seamkit_anthropic.provider:build",
        config="seamkit_anthropic.config:AnthropicConfig",
        description="Anthropic Messages API (Claude): streaming, tools, thinking, prompt caching, images",
    )
