"""Registers the ``openai`` (Responses API) and ``openai_chat`` (Chat Completions) providers.

Cheap to import: the factory modules load on first use."""

from __future__ import annotations

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_providers"]


@hookimpl
def seamkit_register_providers(register):  # type: ignore[no-untyped-def]
    register(
        "openai",
        "seamkit_openai.responses:build",
        config="seamkit_openai.config:OpenAIResponsesConfig",
        description="OpenAI Responses API (streaming; reasoning items, structured output, tools)",
    )
    register(
        "openai_chat",
        "seamkit_openai.chat:build",
        config="seamkit_openai.config:OpenAIChatConfig",
        description="OpenAI Chat Completions API (streaming); also any OpenAI-compatible server via base_url",
    )
