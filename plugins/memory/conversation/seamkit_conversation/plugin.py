"""Registers the conversation steps (cheap to import: module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_steps"]

_STEPS = (
    ("contextualize", "Standalone query and thread title from the message and its history (model)"),
    ("recall", "Memory blocks for the query from the vector store; empty when memory is off"),
    ("remember", "Stores the exchange in the vector store, exactly once, off the answer's path"),
    ("compose", "Gathered blocks behind the system messages, older turns giving way to the token budget"),
    ("complete", "Follow-up questions after the answer (model); empty without a model"),
)


@hookimpl
def seamkit_register_steps(register: Any) -> None:
    for name, description in _STEPS:
        register(name, f"seamkit_conversation.steps:build_{name}",
                 config=f"seamkit_conversation.config:{name.capitalize()}Config", description=description)
