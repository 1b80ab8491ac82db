"""Registers the egress components with seamkit, lazily (module paths only; nothing heavy is imported)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_guardrails", "seamkit_register_middlewares", "seamkit_register_tools"]

_PKG = "seamkit_guardrails_web"


@hookimpl
def seamkit_register_guardrails(register: Any) -> None:
    register(
        "egress",
        f"{_PKG}.guardrail:build_egress_guardrail",
        config=f"{_PKG}.config:EgressConfig",
        description="Blocks tool calls whose URL arguments point at private, metadata or non-allowed hosts (tripwire)",
    )


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register(
        "egress",
        f"{_PKG}.middleware:build_egress_middleware",
        config=f"{_PKG}.config:EgressConfig",
        description="Refuses tool calls whose URL arguments fail the egress check (the model is told why)",
    )


@hookimpl
def seamkit_register_tools(register: Any) -> None:
    register(
        "fetch",
        f"{_PKG}.fetch_tool:build_fetch_tool",
        config=f"{_PKG}.config:FetchConfig",
        description="Fetch a public http(s) URL as text: SSRF-checked, DNS-pinned, redirects re-checked, size-capped",
    )
