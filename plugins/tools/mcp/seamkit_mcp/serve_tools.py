"""What ``seamkit mcp serve`` offers and how one call runs: :class:`AgentServer`.

Independent of the transport (stdio, streamable HTTP): the server module hands each
``tools/call`` to :meth:`AgentServer.call` with an :data:`Ask` (the MCP elicitation of the
connection, or ``None`` when the client cannot be asked) and sends back the
``CallToolResult`` it returns.

A call made through MCP runs the way the agent would run it, in a run of its own (each call gets
a fresh :class:`~seamkit.runtime.context.RunContext` with :class:`~seamkit.runtime.resources.RunResources`,
closed when the call ends):

- a tool of the agent: its approval policy (``agent.approvals``; every policy other than
  ``never`` asks on every call: an MCP call is a run of its own and the server keeps no thread),
  then the agent's ``tool`` guardrails, the agent's middlewares (``agent.invoker.call_tool``),
  and the ``tool_result`` guardrails;
- the agent as a tool (``{"task": string}``): a real agent run (``agent.run``: its middlewares,
  budgets, ``max_steps``, guardrails and checkpoints); a run suspended for approval asks the
  person for each pending call and resumes with the decisions.

Nothing a call does escapes as an exception: every failure is an ``isError`` result naming it
(type and message, never a traceback), with the composition's secrets masked.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types

if TYPE_CHECKING:
    from seamkit.agent.agent import Agent
    from seamkit.agent.as_tool import AgentTool
    from seamkit.agent.result import AgentResult
    from seamkit.guardrails import Guard
    from seamkit.values import ToolCall, ToolResult, ToolSchema

__all__ = ["Answer", "Ask", "AgentServer", "ServedTool", "approval_message"]

_log = logging.getLogger("seamkit_mcp.serve")

#: A person's answer to an approval question (MCP ``ElicitResult.action``).
Answer = Literal["accept", "decline", "cancel"]
#: ``ask(message)``: put ``message`` to the person (MCP elicitation) and return their answer.
Ask = Callable[[str], Awaitable[Answer]]

#: The most characters of a call's arguments an approval question shows.
_ARGS_SHOWN = 2000
#: How many times one agent-tool call resumes its run after approvals (a run that keeps asking).
_MAX_APPROVAL_ROUNDS = 20


@dataclass(frozen=True, slots=True)
class ServedTool:
    """One tool as MCP clients see it: ``schema`` (name, description, input schema, side effects)
    and whether it is the ``agent`` itself."""

    schema: ToolSchema
    agent: bool = False

    def as_mcp(self) -> types.Tool:
        """The MCP ``Tool``: ``inputSchema`` is the schema's parameters; ``readOnlyHint`` is
        ``not side_effecting`` and a side-effecting tool is ``destructiveHint: true`` (seamkit
        cannot tell additive effects from destructive ones, so it says the cautious thing)."""
        s = self.schema
        params = _plain(s.parameters)
        if not isinstance(params, dict) or params.get("type") != "object":
            params = {"type": "object", "properties": {}}
        return types.Tool(
            name=s.name,
            description=s.description,
            input_schema=params,
            annotations=types.ToolAnnotations(
                read_only_hint=not s.side_effecting,
                destructive_hint=s.side_effecting,
                idempotent_hint=s.idempotent if s.side_effecting else None,
            ),
        )


def approval_message(agent: str, tool: str, arguments: Mapping[str, Any], policy: str) -> str:
    """The question put to the person for one call: which agent, which tool, its arguments
    (JSON, cut at :data:`_ARGS_SHOWN` characters) and the policy that asks."""
    shown = json.dumps(_plain(arguments), ensure_ascii=False, indent=1, default=str)
    if len(shown) > _ARGS_SHOWN:
        shown = shown[:_ARGS_SHOWN] + " ...(cut)"
    return (f"Approve a call of the tool {tool!r} (agent {agent!r}, approval policy {policy})?\n"
            f"Arguments:\n{shown}\nAccept to run it; decline or cancel to refuse it.")


class AgentServer:
    """The tools of ``agent`` (its own, less ``disabled_tools``) and, with ``agent_tool``, the
    agent itself as a tool (:func:`seamkit.agent.as_tool.agent_tool`'s name, description and
    input). ``secrets`` (the composition's ``${ENV}`` values) are masked in every result and
    question. ``metadata``: JSON scalars stored with the agent runs' checkpoints.

    Raises ``ValueError`` when the agent's name as a tool clashes with one of its tools' names
    (serve with ``--no-agent-tool`` then)."""

    def __init__(self, agent: Agent, *, agent_tool: bool = True, secrets: Sequence[str] = (),
                 metadata: Mapping[str, Any] | None = None) -> None:
        from seamkit.agent.as_tool import agent_tool as make_agent_tool
        from seamkit.agent.guarding import guards_by_point
        from seamkit.cli.scrub import TextScrubber

        self.agent = agent
        self.metadata = dict(metadata or {})
        self._scrubber = TextScrubber(secrets)
        self._guards: Mapping[str, tuple[Guard, ...]] = guards_by_point(agent.guardrails)
        disabled = set(agent.disabled_tools)
        self.tools: dict[str, ServedTool] = {
            t.schema.name: ServedTool(t.schema) for t in agent.tools if t.schema.name not in disabled
        }
        self._agent_tool: AgentTool | None = None
        if agent_tool:
            at = make_agent_tool(agent)
            if at.name in self.tools:
                raise ValueError(f"the agent {agent.name!r} as a tool would be named {at.name!r}, the name of one "
                                 "of its tools: serve it with --no-agent-tool")
            self._agent_tool = at
            self.tools[at.name] = ServedTool(at.schema, agent=True)
        self._ids = itertools.count(1)

    def list_tools(self) -> list[types.Tool]:
        return [t.as_mcp() for t in self.tools.values()]

    # -- one call -------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ask: Ask | None) -> types.CallToolResult:
        """Run one ``tools/call``; never raises for the call's own failure (an ``isError``
        result). ``asyncio.CancelledError`` (the client cancelled the request) propagates."""
        served = self.tools.get(name)
        if served is None:
            return self._error(f"UnknownToolError: no tool {name!r} is served here (tools: "
                               f"{', '.join(sorted(self.tools)) or 'none'})")
        if arguments is not None and not isinstance(arguments, Mapping):
            return self._error(f"ToolArgumentError: the arguments of {name!r} must be a JSON object")
        args = dict(arguments or {})
        try:
            if served.agent:
                return await self._call_agent(args, ask)
            return await self._call_tool(served.schema, args, ask)
        except Exception as exc:  # a failure of ours or of a component: the client gets its name only
            _log.warning("the call of %r failed: %s: %s", name, type(exc).__name__, self._scrub(str(exc)))
            return self._error(f"{type(exc).__name__}: {exc}")

    async def _call_tool(self, schema: ToolSchema, args: dict[str, Any], ask: Ask | None) -> types.CallToolResult:
        from seamkit.agent.guarding import check
        from seamkit.errors import BudgetExceeded, RunCancelled
        from seamkit.guardrails import GuardContext, GuardrailTripped
        from seamkit.runtime.context import RunContext
        from seamkit.runtime.resources import RunResources
        from seamkit.values import ToolCall, freeze

        agent = self.agent
        call = ToolCall(f"mcp_{next(self._ids)}", schema.name, freeze(args))
        policy = agent.approvals.get(schema.name, "never")
        if policy != "never":
            refused = await self._ask_approval(schema.name, args, policy, ask)
            if refused is not None:
                return self._error(refused)
        ctx = RunContext(resources=RunResources())
        note = ""
        try:
            try:
                if "tool" in self._guards:
                    checked: ToolCall = await check(self._guards["tool"], "tool", call,
                                                    GuardContext("tool", ctx, agent.name, schema), self._report)
                    if checked.arguments != call.arguments:
                        note = ("\n\n(A guardrail changed the arguments of this call before it ran; it ran with: "
                                f"{json.dumps(_plain(checked.arguments), ensure_ascii=False, default=str)})")
                    call = checked
                result = await agent.invoker.call_tool(call, ctx)
                if "tool_result" in self._guards and not result.is_error:
                    result = await check(self._guards["tool_result"], "tool_result", result,
                                         GuardContext("tool_result", ctx, agent.name, schema), self._report)
            except GuardrailTripped as exc:
                what = "failed (failing closed)" if exc.failed else "blocked the call"
                return self._error(f"GuardrailTripped: guardrail {exc.guardrail!r} {what} at the {exc.point} point: "
                                   f"{exc.reason}")
            except (BudgetExceeded, RunCancelled) as exc:
                return self._error(f"{type(exc).__name__}: {exc}")
        finally:
            await ctx.resources.aclose()  # type: ignore[union-attr]  # set above
        return self._result(result, note)

    async def _call_agent(self, args: dict[str, Any], ask: Ask | None) -> types.CallToolResult:
        from seamkit.durability.approvals import Decision, approve, reject
        from seamkit.errors import SeamkitError, ToolArgumentError
        from seamkit.runtime.context import RunContext

        at = self._agent_tool
        assert at is not None
        try:
            valid = at.validate(args)
        except ToolArgumentError as exc:
            return self._error(f"ToolArgumentError: {exc}")
        task = str(valid["task"])
        agent = self.agent
        try:
            result = await agent.run(task, ctx=RunContext(), metadata=self.metadata)
            rounds = 0
            while result.stop_reason == "suspended" and result.pending_approvals and rounds < _MAX_APPROVAL_ROUNDS:
                rounds += 1
                decisions: dict[str, Decision] = {}
                for p in result.pending_approvals:
                    refused = await self._ask_approval(p.tool, p.arguments, p.policy, ask)
                    if refused is not None and ask is None:
                        return self._error(f"{refused} The agent's run {result.run_id} is suspended, waiting for "
                                           f"that approval (seamkit resume {result.run_id}).")
                    decisions[p.call_id] = approve() if refused is None else reject("the person declined it")
                result = await agent.resume(result.run_id, decisions=decisions)
        except SeamkitError as exc:  # BudgetExceeded, GuardrailTripped, ProviderError, OutputValidationError...
            return self._error(f"{type(exc).__name__}: {exc}")
        return self._agent_result(result)

    def _agent_result(self, result: AgentResult) -> types.CallToolResult:
        if result.stop_reason != "completed":
            why = {"max_steps": f"it stopped after {result.steps} model turns without an answer (max_steps)",
                   "suspended": "it waits for a person (an approval or an effect to settle)"}.get(
                       result.stop_reason, str(result.stop_reason))
            return self._error(f"the agent {self.agent.name!r} (run {result.run_id}) gave no answer: {why}")
        from seamkit.runtime.invoker import render_tool_value

        text = render_tool_value(result.output)
        return self._content(text, is_error=False, images=())

    async def _ask_approval(self, tool: str, arguments: Mapping[str, Any], policy: str,
                            ask: Ask | None) -> str | None:
        """``None`` when the person approved the call; else why it was not run."""
        if ask is None:
            return (f"approval required: the tool {tool!r} needs a person's approval (policy {policy}), and this "
                    "MCP client cannot ask for it (it did not declare the elicitation capability); the call "
                    "was not run.")
        answer = await ask(self._scrub(approval_message(self.agent.name, tool, arguments, policy)))
        if answer == "accept":
            return None
        how = "declined" if answer == "decline" else "cancelled"
        return f"not approved: the person {how} the call of {tool!r}; it was not run."

    def _report(self, guard: Guard, point: str, what: str, text: str) -> None:
        """What a guard did besides allow: logged on stderr (the operator's view)."""
        _log.info("guardrail %r: %s at the %s point: %s", guard.name, what, point, self._scrub(text))

    # -- results ----------------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        return self._scrubber.scrub(text) if self._scrubber else text

    def _error(self, text: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=self._scrub(text))], is_error=True)

    def _result(self, result: ToolResult, note: str = "") -> types.CallToolResult:
        return self._content(result.content + note, is_error=result.is_error, images=result.images)

    def _content(self, text: str, *, is_error: bool, images: Sequence[Any]) -> types.CallToolResult:
        """Text (secrets masked) as ``TextContent``; a JSON object also as ``structuredContent``
        (not for errors); inline images as base64 ``ImageContent``, images by URL as a text line."""
        text = self._scrub(text)
        content: list[types.TextContent | types.ImageContent] = [types.TextContent(type="text", text=text)]
        for image in images:
            if image.data is not None:
                content.append(types.ImageContent(type="image", data=base64.b64encode(image.data).decode("ascii"),
                                                  mime_type=image.media_type))
            elif image.url is not None:
                content.append(types.TextContent(type="text", text=f"image ({image.media_type}): {image.url}"))
        structured: dict[str, Any] | None = None
        if not is_error and text.lstrip().startswith("{"):
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            if isinstance(value, dict):
                structured = value
        return types.CallToolResult(content=list(content), structured_content=structured, is_error=is_error)


def _plain(value: Any) -> Any:
    """Frozen containers as plain JSON data (dicts and lists)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value

