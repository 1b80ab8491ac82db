"""The ``egress`` guardrail: a tripwire at the ``tool`` point for tool calls whose URL arguments
the egress policy refuses.

It decides exactly as the ``egress`` middleware does (one function,
:func:`~seamkit_guardrails_web.preflight.check_tool_call`: ``check_url``, one resolution,
``check_address`` of every address), but a refusal *ends the run* (``block``: the run stops with
``GuardrailTripped``, its checkpoint saying why) instead of telling the model. Use the middleware
to let the model correct itself, the guardrail when a refused URL means the run went wrong (e.g.
a prompt injection steering the agent at a metadata address). Like the middleware it is a
pre-flight check: only the ``fetch`` tool pins its own connection.
"""

from __future__ import annotations

from seamkit.plugin import ALLOW, GuardContext, Verdict, block
from seamkit.values import ToolCall

from seamkit_guardrails_web import urls
from seamkit_guardrails_web.config import EgressConfig
from seamkit_guardrails_web.errors import EgressRefused, ResolutionFailed
from seamkit_guardrails_web.preflight import ToolCallEgress, inert

__all__ = ["EgressGuardrail", "build_egress_guardrail"]


class EgressGuardrail(ToolCallEgress):
    """Acts at the ``tool`` point (:meth:`check_tool_call`). ``policy``: an
    :class:`~seamkit_guardrails_web.urls.EgressPolicy` (``None`` raises ``TypeError``: an inert
    security control must not exist); ``url_arguments``: tool name -> argument names holding
    URLs, for tools that do not declare them; ``resolver`` / ``checker`` as for
    :class:`~seamkit_guardrails_web.middleware.EgressMiddleware`."""

    name = "egress"

    async def check_tool_call(self, call: ToolCall, guard: GuardContext) -> Verdict:
        """:data:`~seamkit._guardrails.ALLOW` when every URL argument of ``call`` may go out
        (or it has none); :func:`~seamkit._guardrails.block` naming the argument, the URL and
        why, otherwise. ``guard.tool`` is the tool's schema (``None`` for an unknown tool: then
        only ``url_arguments`` names are checked).

        Raises :class:`~seamkit_guardrails_web.errors.ResolutionFailed` when a URL's host name
        does not resolve at all (no DNS, NXDOMAIN, no address, a resolver timeout): that is not a
        verdict on the URL, so it is not a block; the host treats a raising guardrail as failed
        and fails closed (``GuardrailTripped(failed=True)``), or records a warning and goes on
        when the guard is advisory. A name that resolves to a refused address is a block."""
        try:
            await self.check_call(call, guard.tool)
        except ResolutionFailed:
            raise
        except EgressRefused as exc:
            return block(f"egress refused ({exc.category}) for {exc.url}: {exc.reason}")
        return ALLOW


def build_egress_guardrail(config: EgressConfig) -> EgressGuardrail:
    """Factory of the ``egress`` guardrail component. Raises ``TypeError`` for no config (an
    inert control) and ``ValueError`` for a malformed policy."""
    if config is None:
        raise inert("the egress guardrail")
    return EgressGuardrail(urls.policy_from(config), url_arguments=config.url_arguments)
