"""The ``egress`` middleware: a pre-flight egress check of every tool call's URL arguments.

A tool call whose arguments carry URLs (declared by the tool's parameters schema with
``format: uri`` and its kin, or named in ``url_arguments``; see
:func:`~seamkit_guardrails_web.preflight.url_arguments`) is checked before the tool runs:
``check_url`` and, for a host name, one resolution with ``check_address`` of every address. A
refused URL raises :class:`~seamkit_guardrails_web.errors.EgressRefused` before the tool is
entered: ``Invoker.call_tool`` makes it an error result the model reads, and for a
side-effecting call ``Invoker.call_effect`` raises ``EffectNotApplied`` (certainly not applied).

What it cannot do: pin the tool's own connection. The tool opens its own HTTP connection and
resolves the name again, so a name whose answer changes between this check and the tool's lookup
(DNS rebinding), or a redirect the tool follows, escapes it. Only the ``fetch`` tool pins its
connection and re-checks redirects; this middleware is a pre-flight check for every other tool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from seamkit.plugin import Call, Next
from seamkit.values import ToolRequest

from seamkit_guardrails_web import urls
from seamkit_guardrails_web.config import EgressConfig
from seamkit_guardrails_web.preflight import ToolCallEgress, inert

__all__ = ["EgressMiddleware", "build_egress_middleware"]


class EgressMiddleware(ToolCallEgress):
    """The ``egress`` middleware (tool calls only; see the module doc).

    ``policy``: an :class:`~seamkit_guardrails_web.urls.EgressPolicy` (``None`` raises
    ``TypeError``: an inert security control must not exist); ``url_arguments``: tool name ->
    argument names holding URLs, for tools that do not declare them; ``resolver``: a
    :class:`~seamkit_guardrails_web.resolver.Resolver` (default: the system's); ``checker``: an
    :class:`~seamkit_guardrails_web.preflight.EgressChecker` to use instead of one built from
    ``policy`` and ``resolver``."""

    kinds = frozenset({"tool"})

    async def check(self, request: ToolRequest) -> int:
        """Check the URL arguments of ``request``; returns how many were checked. Raises
        :class:`~seamkit_guardrails_web.errors.EgressRefused` (its ``reason`` naming the tool
        and the argument) for the first refused one."""
        return await self.check_call(request.call, request.schema)

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        if call.kind == "tool":
            await self.check(call.request)  # type: ignore[arg-type]
        async for item in nxt(call):
            yield item


def build_egress_middleware(config: EgressConfig) -> EgressMiddleware:
    """Factory of the ``egress`` middleware component. Raises ``TypeError`` for no config (an
    inert control) and ``ValueError`` for a malformed policy."""
    if config is None:
        raise inert("the egress middleware")
    return EgressMiddleware(urls.policy_from(config), url_arguments=config.url_arguments)
