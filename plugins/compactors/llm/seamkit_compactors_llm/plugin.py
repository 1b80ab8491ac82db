"""Registers the LLM compactors with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_compactors"]

_PKG = "seamkit_compactors_llm"


@hookimpl
def seamkit_register_compactors(register: Any) -> None:
    register(
        "summarization",
        f"{_PKG}.summarization:build",
        config=f"{_PKG}.config:SummarizationConfig",
        description="A model summarises the older middle of the transcript into one message",
    )
    register(
        "importance",
        f"{_PKG}.importance:build",
        config=f"{_PKG}.config:ImportanceConfig",
        description="A model picks, by index, the older turns that must survive",
    )
