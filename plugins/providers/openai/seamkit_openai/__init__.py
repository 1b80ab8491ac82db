"""seamkit-openai: the ``openai`` (Responses API) and ``openai_chat`` (Chat Completions API, also any
OpenAI-compatible server) provider components. Importing this package is cheap: the provider
modules (``seamkit_openai.chat``, ``seamkit_openai.responses``) load on first use."""

from __future__ import annotations

__all__: list[str] = []
