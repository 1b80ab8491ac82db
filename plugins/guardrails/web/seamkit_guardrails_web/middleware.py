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

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from seamkit.middleware import Call, Next
from seamkit.values import ToolRequest

from seamkit_guardrails_web import urls
from seamkit_guardrails_web.config import EgressConfig
from seamkit_guardrails_web.preflight import EgressChecker, check_tool_call, inert
from seamkit_guardrails_web.resolver import Resolver, SystemResolver

__all__ = ["EgressMiddleware", "build_egress_middleware"]


def _names(url_args: Mapping[str, Sequence[str]] | None) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for tool, names in (url_args or {}).items():
        if isinstance(names, str):
            raise TypeError(f"url_arguments[{tool!r}] must be a list of argument names, not a string")
        out[tool] = tuple(names)
    return out


class EgressMiddleware:
    """The ``egress`` middleware (tool calls only; see the module doc).

    ``policy``: an :class:`~seamkit_guardrails_web.urls.EgressPolicy` (``None`` raises
    ``TypeError``: an inert security control must not exist); ``url_arguments``: tool name ->
    argument names holding URLs, for tools that do not declare them; ``resolver``: a
    :class:`~seamkit_guardrails_web.resolver.Resolver` (default: the system's); ``checker``: an
    :class:`~seamkit_guardrails_web.preflight.EgressChecker` to use instead of one built from
    ``policy`` and ``resolver``."""

    kinds = frozenset({"tool"})

    def __init__(
        self,
        policy: urls.EgressPolicy | None,
        *,
        url_arguments: Mapping[str, Sequence[str]] | None = None,
        resolver: Resolver | None = None,
        checker: EgressChecker | None = None,
    ) -> None:
        if checker is None:
            if policy is None:
                raise inert("EgressMiddleware")
            checker = EgressChecker(policy, resolver if resolver is not None else SystemResolver())
        self.checker = checker
        self.url_arguments = _names(url_arguments)

    def __repr__(self) -> str:
        return f"EgressMiddleware(policy={self.checker.policy!r}, url_arguments={self.url_arguments!r})"

    async def check(self, request: ToolRequest) -> int:
        """Check the URL arguments of ``request``; returns how many were checked. Raises
        :class:`~seamkit_guardrails_web.errors.EgressRefused` (its ``reason`` naming the tool
        and the argument) for the first refused one."""
        call = request.call
        return await check_tool_call(self.checker, call, request.schema, self.url_arguments.get(call.name, ()))

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
