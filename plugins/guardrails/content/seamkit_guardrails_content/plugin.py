"""Registers the content guardrails with seamkit, lazily (module paths only; nothing heavy is imported)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_guardrails"]

_PKG = "seamkit_guardrails_content"


@hookimpl
def seamkit_register_guardrails(register: Any) -> None:
    register(
        "wrap_tool_output",
        f"{_PKG}.framing:build_wrap_tool_output",
        config=f"{_PKG}.config:WrapToolOutputConfig",
        description="Frames tool results as untrusted data for the model and flags injection markers in them",
    )
    register(
        "redact",
        f"{_PKG}.redact:build_redact",
        config=f"{_PKG}.config:RedactConfig",
        description="Redacts emails, phone numbers, API-key shapes and Luhn-valid card numbers",
    )
    register(
        "deny",
        f"{_PKG}.deny:build_deny",
        config=f"{_PKG}.deny:DenyConfig",
        description="Blocks (tripwire) when a configured pattern occurs in the task, a tool call, a result or output",
    )
    register(
        "moderation",
        f"{_PKG}.moderation:build_moderation",
        config=f"{_PKG}.config:ModerationConfig",
        description="Asks a model whether the input or output violates a stated policy (structured verdict)",
    )
