"""Registers the service-desk capabilities with seamkit, lazily (module paths only; nothing heavy is
imported, and the catalog is read on the first search)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_capabilities"]

_PKG = "seamkit_servicedesk"


@hookimpl
def seamkit_register_capabilities(register: Any) -> None:
    register(
        "search_services",
        f"{_PKG}.capabilities:build_search_services",
        config=f"{_PKG}.config:SearchServicesConfig",
        description="Find the service-desk service for a problem (read; provides service.match@1)",
    )
    register(
        "submit_request",
        f"{_PKG}.capabilities:build_submit_request",
        config=f"{_PKG}.config:SubmitRequestConfig",
        description="Open a ticket for the service found (write, confirmation required; provides request.ticket@1)",
    )
    register(
        "request_status",
        f"{_PKG}.capabilities:build_request_status",
        config=f"{_PKG}.config:RequestStatusConfig",
        description="Show the status of a ticket (read; requires request.ticket@1)",
    )
