"""What ``seamkit mcp serve`` offers and how one call runs: :class:`AgentServer`.

Independent of the transport (stdio, streamable HTTP): the server module hands each
``tools/call`` to :meth:`AgentServer.call` with an :class:`Asking` (how the person behind the
client can be asked for an approval, if at all) and sends back the result it returns.

Approvals are asked with MCP elicitation (a form with no fields: accept runs the call, decline
or cancel refuses it), in either era of the protocol:

- handshake era (up to 2025-11-25): a server-to-client ``elicitation/create`` request while the
  call waits (:attr:`Asking.ask`);
- 2026-07-28 (multi round-trip requests): the call answers ``InputRequiredResult`` with the
  elicitation requests and a ``requestState``; the client retries the call with the answers.
  The state is signed with a key of this server process (HMAC-SHA256), so answers count only for
  the questions this server asked: for a tool, the same tool and arguments; for the agent, the
  calls its suspended run waits for (the retry resumes that run with the decisions).

A client that cannot be asked: a direct call of a tool that needs approval gets an ``isError``
result saying so, and nothing runs (fail closed); in the agent's own run, every call needing
approval is rejected at once (its model is told why) and the run resumed, so that it finishes
(no MCP client could resume a suspended run): the result is the agent's answer with a note on
how many calls were refused and why.

Two kinds of call:

- a tool of the agent, called directly: NOT a run. It is not checkpointed, not in ``seamkit runs
  list``, cannot be resumed, and does not go through the effect ledger (a crash while it runs
  leaves no record of whether it took effect; a client's retry runs it again). It gets a fresh
  :class:`~seamkit._runtime.context.RunContext` (its own run id, its own
  :class:`~seamkit._runtime.resources.RunResources`, closed when the call ends) whose ``"store"``
  service is the agent's checkpoint store, when it has one (so that an MCP tool's pinned
  definitions are those ``seamkit run`` checks). What applies: the approval policy
  (``agent.approvals``; every policy other than ``never`` asks on every call: the server keeps no
  thread to remember an approval in), then the agent's ``tool`` guardrails, the agent's
  middlewares (``agent.invoker.call_tool``), and the ``tool_result`` guardrails;
- the agent as a tool (``{"task": string}``): a real agent run (``agent.run``: its middlewares,
  budgets, ``max_steps``, guardrails and, when the agent has a checkpointer, its checkpoints and
  effect ledger); a run suspended for approval asks the person for each pending call and resumes
  with the decisions.

Nothing a call does escapes as an exception: every failure is an ``isError`` result naming it
(type and message, never a traceback), with the composition's secrets masked.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types

if TYPE_CHECKING:
    from seamkit import Agent, AgentResult, AgentTool
    from seamkit.plugin import Guard
    from seamkit.values import ToolCall, ToolResult, ToolSchema

__all__ = ["APPROVAL_FORM", "NO_ASKING", "AgentServer", "Answer", "Ask", "Asking", "ServedTool", "approval_message"]

_log = logging.getLogger("seamkit_mcp.serve")

#: A person's answer to an approval question (MCP ``ElicitResult.action``).
Answer = Literal["accept", "decline", "cancel"]
#: ``ask(message)``: put ``message`` to the person (MCP elicitation) and return their answer.
Ask = Callable[[str], Awaitable[Answer]]

#: The form an approval question asks for: nothing but the answer (accept, decline or cancel).
APPROVAL_FORM: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class Asking:
    """How one request can put approval questions to the person behind the client. ``ask``: in
    the handshake era, an ``elicitation/create`` request to the client (``None`` when it cannot
    be sent). ``input_required``: a 2026-07-28 client that declared elicitation: the call may
    answer ``InputRequiredResult``; ``responses`` are the answers (input key -> action) and
    ``state`` the ``requestState`` it sent with this request."""

    ask: Ask | None = None
    input_required: bool = False
    responses: Mapping[str, Answer] = field(default_factory=dict)
    state: str | None = None


#: A client that cannot be asked.
NO_ASKING = Asking()

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
    agent itself as a tool (:func:`seamkit._agent.as_tool.agent_tool`'s name, description and
    input). ``secrets`` (the composition's ``${ENV}`` values) are masked in every result and
    question. ``metadata``: JSON scalars stored with the agent runs' checkpoints.

    Raises ``ValueError`` when the agent's name as a tool clashes with one of its tools' names
    (serve with ``--no-agent-tool`` then)."""

    def __init__(self, agent: Agent, *, agent_tool: bool = True, secrets: Sequence[str] = (),
                 metadata: Mapping[str, Any] | None = None) -> None:
        from seamkit import agent_tool as make_agent_tool
        from seamkit.plugin import TextScrubber, guards_by_point

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
        self._key = os.urandom(32)  # signs the request states of this process's questions

    def list_tools(self) -> list[types.Tool]:
        return [t.as_mcp() for t in self.tools.values()]

    async def offered_tools(self) -> list[types.Tool]:
        """What ``tools/list`` answers: :meth:`list_tools` less the tools whose ``prepare(ctx)``
        gives a reason not to offer them now (an MCP tool of the agent whose definition changed
        since it was approved: its new description must not reach the client's model either),
        asked in a context like a direct call's (the agent's store, resources closed after)."""
        from seamkit.plugin import RunContext, RunResources

        preparing = [t for t in self.agent.tools
                     if t.schema.name in self.tools and callable(getattr(t, "prepare", None))]
        if not preparing:
            return self.list_tools()
        ctx = RunContext(resources=RunResources(), services=self._services())
        withheld: set[str] = set()
        try:
            for t in preparing:
                try:
                    reason = await t.prepare(ctx)
                except Exception:  # as the agent run does: the tool stays offered, its calls say why
                    reason = None
                if isinstance(reason, str) and reason:
                    withheld.add(t.schema.name)
                    _log.warning("tool %r is not offered: %s", t.schema.name, self._scrub(reason))
        finally:
            assert ctx.resources is not None
            await ctx.resources.aclose()
        return [t.as_mcp() for name, t in self.tools.items() if name not in withheld]

    # -- one call -------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Mapping[str, Any] | None, asking: Asking = NO_ASKING
                   ) -> types.CallToolResult | types.InputRequiredResult:
        """Run one ``tools/call``; never raises for the call's own failure (an ``isError``
        result). Returns ``InputRequiredResult`` when a 2026-07-28 client must answer approval
        questions first. ``asyncio.CancelledError`` (the client cancelled the request) propagates."""
        served = self.tools.get(name)
        if served is None:
            return self._error(f"UnknownToolError: no tool {name!r} is served here (tools: "
                               f"{', '.join(sorted(self.tools)) or 'none'})")
        if arguments is not None and not isinstance(arguments, Mapping):
            return self._error(f"ToolArgumentError: the arguments of {name!r} must be a JSON object")
        args = dict(arguments or {})
        try:
            if served.agent:
                return await self._call_agent(args, asking)
            return await self._call_tool(served.schema, args, asking)
        except Exception as exc:  # a failure of ours or of a component: the client gets its name only
            _log.warning("the call of %r failed: %s: %s", name, type(exc).__name__, self._scrub(str(exc)))
            return self._error(f"{type(exc).__name__}: {exc}")

    async def _call_tool(self, schema: ToolSchema, args: dict[str, Any], asking: Asking
                         ) -> types.CallToolResult | types.InputRequiredResult:
        from seamkit.errors import BudgetExceeded, RunCancelled
        from seamkit.plugin import GuardContext, GuardrailTripped, RunContext, RunResources
        from seamkit.plugin import check_guards as check
        from seamkit.values import ToolCall, freeze

        agent = self.agent
        call = ToolCall(f"mcp_{next(self._ids)}", schema.name, freeze(args))
        policy = agent.approvals.get(schema.name, "never")
        if policy != "never":
            question = self._scrub(approval_message(agent.name, schema.name, args, policy))
            # the state binds the answer to this question: the same tool with the same arguments
            bound = "tool:" + hashlib.sha256(question.encode("utf-8")).hexdigest()
            answers = await self._answers({"approval": question}, asking, bound)
            if isinstance(answers, types.InputRequiredResult):
                return answers
            if answers is None:
                return self._error(_cannot_ask(schema.name, policy) + " The call was not run.")
            if answers["approval"] != "accept":
                return self._error(_refused(schema.name, answers["approval"]))
        ctx = RunContext(resources=RunResources(), services=self._services())
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
                if "tool_result" in self._guards:  # error results too, as the agent loop checks them
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

    async def _call_agent(self, args: dict[str, Any], asking: Asking
                          ) -> types.CallToolResult | types.InputRequiredResult:
        from seamkit.errors import SeamkitError, ToolArgumentError
        from seamkit.plugin import Decision, RunContext, approve, reject

        at = self._agent_tool
        assert at is not None
        try:
            valid = at.validate(args)
        except ToolArgumentError as exc:
            return self._error(f"ToolArgumentError: {exc}")
        agent = self.agent
        try:
            waiting = self._waiting_run(asking)
            if waiting is not None:  # a 2026-07-28 client answering the questions of a suspended run
                run_id, call_ids = waiting
                result = await agent.resume(run_id, decisions={
                    c: approve() if asking.responses.get(c) == "accept" else reject("the person declined it")
                    for c in call_ids})
            else:
                result = await agent.run(str(valid["task"]), ctx=RunContext(), metadata=self.metadata)
            rounds = 0
            unasked: list[str] = []  # the tools of calls refused because the person cannot be asked
            while result.stop_reason == "suspended" and result.pending_approvals and rounds < _MAX_APPROVAL_ROUNDS:
                rounds += 1
                questions = {p.call_id: self._scrub(approval_message(agent.name, p.tool, p.arguments, p.policy))
                             for p in result.pending_approvals}
                bound = json.dumps({"run": result.run_id, "calls": list(questions)})
                answers = await self._answers(questions, asking, bound, fresh=True)
                if isinstance(answers, types.InputRequiredResult):
                    return answers
                decisions: dict[str, Decision]
                if answers is None:
                    # nobody to ask, and no MCP client can resume a run: refuse the calls now, so that
                    # the run finishes (its model is told why) instead of staying suspended for ever
                    unasked += [p.tool for p in result.pending_approvals]
                    decisions = {c: reject(_UNASKED_REASON) for c in questions}
                else:
                    decisions = {c: approve() if a == "accept" else reject("the person declined it")
                                 for c, a in answers.items()}
                result = await agent.resume(result.run_id, decisions=decisions)
        except SeamkitError as exc:  # BudgetExceeded, GuardrailTripped, ProviderError, OutputValidationError...
            return self._error(f"{type(exc).__name__}: {exc}")
        return self._agent_result(result, _unasked_note(unasked))

    def _services(self) -> dict[str, Any]:
        """The services of a direct call's context: the agent's checkpoint store as ``"store"``
        (when it has a checkpointer), so that what a tool keeps in the run's store (the pinned
        definitions of an MCP tool, above all) is the store ``seamkit run`` of the same file uses:
        without it, an MCP tool's changed definition would be pinned afresh here and run."""
        cp = self.agent.checkpointer
        return {"store": cp.store} if cp is not None and cp.store is not None else {}

    def _waiting_run(self, asking: Asking) -> tuple[str, list[str]] | None:
        """The run and call ids a signed request state of an agent call names (``None`` for none,
        or a state this process did not sign: the call then starts a new run)."""
        if not asking.input_required:
            return None
        payload = self._verified(asking.state)
        if payload is None or not payload.startswith("{"):
            return None
        data = json.loads(payload)
        return str(data["run"]), [str(c) for c in data["calls"]]

    async def _answers(self, questions: Mapping[str, str], asking: Asking, bound: str, *, fresh: bool = False
                       ) -> dict[str, Answer] | types.InputRequiredResult | None:
        """The person's answer to each question (key -> message): asked now (handshake era), taken
        from this request when its state is the one signed for ``bound`` and it answers every key
        (2026-07-28; ``fresh``: never, the questions were just made), or an ``InputRequiredResult``
        asking them. ``None`` when the person cannot be asked."""
        if asking.ask is not None:
            return {key: await asking.ask(message) for key, message in questions.items()}
        if not asking.input_required:
            return None
        if not fresh and self._verified(asking.state) == bound and all(k in asking.responses for k in questions):
            return {key: asking.responses[key] for key in questions}
        return types.InputRequiredResult(
            input_requests={key: types.ElicitRequest(params=types.ElicitRequestFormParams(
                message=message, requested_schema=dict(APPROVAL_FORM))) for key, message in questions.items()},
            request_state=self._sign(bound),
        )

    def _sign(self, payload: str) -> str:
        encoded = base64.urlsafe_b64encode(payload.encode("utf-8")).decode("ascii")
        return f"{encoded}.{hmac.new(self._key, encoded.encode('ascii'), hashlib.sha256).hexdigest()}"

    def _verified(self, state: str | None) -> str | None:
        """The payload of a request state this process signed; ``None`` for anything else."""
        if not state:
            return None
        encoded, _, mac = state.rpartition(".")
        good = hmac.new(self._key, encoded.encode("ascii", "replace"), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(good, mac):
            return None
        return base64.urlsafe_b64decode(encoded.encode("ascii")).decode("utf-8")

    def _agent_result(self, result: AgentResult, note: str = "") -> types.CallToolResult:
        """The agent's answer (``note`` appended: what the client should know about how it came
        about), or an error saying why its run gave none."""
        if result.stop_reason != "completed":
            why = {"max_steps": f"it stopped after {result.steps} model turns without an answer (max_steps)",
                   "suspended": "it waits for a person (an approval or an effect to settle)"}.get(
                       result.stop_reason, str(result.stop_reason))
            return self._error(f"the agent {self.agent.name!r} (run {result.run_id}) gave no answer: {why}{note}")
        from seamkit.plugin import render_tool_value

        text = render_tool_value(result.output)
        if note:  # plain text then: the note is not part of a JSON answer (no structuredContent)
            return types.CallToolResult(content=[types.TextContent(type="text", text=self._scrub(text + note))],
                                        is_error=False)
        return self._content(text, is_error=False, images=())

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


def _cannot_ask(tool: str, policy: str) -> str:
    return (f"approval required: the tool {tool!r} needs a person's approval (policy {policy}), and this MCP "
            "client cannot be asked for it (it declared no elicitation capability, or its connection has no way "
            "back to it).")


#: Why a call of the agent's run was rejected when the client cannot be asked (its model sees it).
_UNASKED_REASON = ("it needs a person's approval, and the person cannot be asked: the MCP client that started "
                   "this run has no way to ask for approvals (no elicitation)")


def _unasked_note(tools: Sequence[str]) -> str:
    """The note on an agent-tool result whose run had ``tools``' calls refused unasked (``""``
    for none)."""
    if not tools:
        return ""
    n = len(tools)
    calls = "1 call" if n == 1 else f"{n} calls"
    names = ", ".join(sorted(set(tools)))
    return (f"\n\n(Note: {calls} of the agent's run needing a person's approval ({names}) "
            f"{'was' if n == 1 else 'were'} refused and not run, because this MCP client cannot be asked for "
            "approval (it declared no elicitation capability, or its connection has no way back to it).)")


def _refused(tool: str, answer: str) -> str:
    how = "declined" if answer == "decline" else "cancelled"
    return f"not approved: the person {how} the call of {tool!r}; it was not run."


def _plain(value: Any) -> Any:
    """Frozen containers as plain JSON data (dicts and lists)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value

