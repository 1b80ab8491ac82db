"""The agent loop. It owns control flow: model turn, tool batch, approvals, checkpoints, output
validation, stop.

Capabilities (retry, budgets, compaction, ...) are middlewares around the calls it makes; they
never drive it. The next step is derived from the transcript (an assistant turn with tool calls
and no results yet means a tool batch is due), so a run resumed from any checkpoint continues
exactly where it stopped.

Unanswered tool calls. Providers reject a conversation in which an assistant tool call has no
result, or a result has no call (OpenAI: every ``tool_calls`` entry needs a following ``tool``
message, and a ``tool`` message must answer a call of the assistant message before it; Anthropic:
every ``tool_use`` needs a ``tool_result`` in the next user turn, and every ``tool_result`` a
``tool_use`` in the turn before). The rule: only the calls of the *last* message of the
transcript a run starts from are due (the loop runs them: a run resumed after its model turn, or a
task that ends with an assistant turn asking for tools). Every other call gets exactly one result
right after its assistant turn in each request (:func:`answer_unanswered_calls`): its own result
moved there when it comes later, else :data:`UNANSWERED_TEMPLATE` as an error result; a result
that answers no call is left out. The run gets a warning naming the calls answered as unknown and
the results left out: a ``history=`` with an interrupted tool turn, an edited transcript, a
resumed ``seamkit.ask`` session. The transcript itself keeps the messages as handed in (a durable
run's log is append-only); the paired messages exist only in the requests, built in one place
that every path (``run``, ``stream``, ``resume``, ``seamkit.ask``, a request builder) goes through.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from seamkit._accumulate import Accumulator, checked_stream, stream_failed
from seamkit._agent.as_tool import take_child_usage
from seamkit._agent.child_runs import CALL_KEY
from seamkit._agent.controls import (
    Limit,
    gathered_calls,
    limit_note,
    limit_result,
    render_gathered,
    unknown_tool_result,
)
from seamkit._agent.guarding import check
from seamkit._agent.handoff import handoff_view
from seamkit._agent.result import AgentResult, StopReason, handoff_chain
from seamkit._durability.approvals import Decision, PendingApproval, approve
from seamkit._guardrails import Guard, GuardContext, GuardrailTripped, Point
from seamkit._lazy import lazy_module
from seamkit._middleware import Call
from seamkit._runtime.concurrency import gather_bounded
from seamkit._runtime.context import RunContext, _running_loop, owning_resources
from seamkit._runtime.invoker import render_tool_value, unusable_arguments_result
from seamkit._runtime.resources import RunResources
from seamkit.errors import (
    EffectNotApplied,
    EffectUncertain,
    InfrastructureUnavailable,
    OutputValidationError,
    RunCancelled,
    RunNotResumable,
    SeamkitError,
    StoreUnavailable,
    ToolUnavailable,
)
from seamkit.values import (
    EMPTY,
    ChatRequest,
    FrozenDict,
    LLMResult,
    Message,
    MessageLog,
    MessageSnapshot,
    Scope,
    StreamEvent,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSchema,
    Usage,
    thaw,
)

if TYPE_CHECKING:
    from seamkit._agent.definition import AgentDefinition
    from seamkit._durability.checkpointer import RunHandle
    from seamkit._durability.ledger import EffectLedger, UncertainEffect
    from seamkit._request.builder import BuiltRequest, WorkingContext

if TYPE_CHECKING:
    import asyncio
    import logging
else:  # imported on first use: a third of a usable agent's import time (issue 19)
    asyncio = lazy_module("asyncio", globals())
    logging = lazy_module("logging", globals())

__all__ = ["Run", "CORRECTIVE_TEMPLATE", "EDITED_TEMPLATE", "GUARDED_TEMPLATE", "REJECTED_TEMPLATE",
           "UNANSWERED_TEMPLATE", "answer_unanswered_calls"]


CORRECTIVE_TEMPLATE = (
    "Your answer did not match the required output format:\n{problems}\n"
    "Reply again with only a JSON value that satisfies the schema."
)
REJECTED_TEMPLATE = "A person rejected this tool call; it was not run."
#: The run warning for a request whose tool schemas left no room in the request builder's budget.
TOOLS_DROPPED_WARNING = ("the tool schemas left no room in the input budget (budget_tokens): the model answered "
                         "without tools")
#: The run warning for a final answer the model stopped at its output-token limit.
LENGTH_WARNING = "the answer was cut off at max_tokens (finish_reason length)"
EDITED_TEMPLATE = "A person approved this call with edited arguments; it ran with: {arguments}"
#: The note on the result of a tool call whose arguments a guardrail rewrote.
GUARDED_TEMPLATE = "A guardrail changed the arguments of this call before it ran; it ran with: {arguments}"
#: The error result a request carries for a tool call that has no result in the transcript and
#: is not due (see the module docstring): whether it ran is not known.
UNANSWERED_TEMPLATE = (
    "No result was recorded for this tool call: the conversation went on without one. Whether it ran "
    "is unknown; do not assume it did."
)
_APPROVAL_SCOPE_PREFIX = "seamkit.approvals:"
_new_request: Callable[..., ChatRequest] = ChatRequest.__fast_new__  # type: ignore[attr-defined]
#: a fresh run's usage (frozen: shared by every run, and told apart by identity)
_NO_USAGE = Usage()
_new_result: Callable[..., AgentResult] = AgentResult.__fast_new__  # type: ignore[attr-defined]
T = TypeVar("T")


def answer_unanswered_calls(
    messages: Sequence[Message], *, last_is_due: bool = True
) -> tuple[list[Message], list[ToolCall], list[ToolResult]]:
    """``messages`` as a request must carry them: every tool call answered by exactly one result,
    right after its assistant turn; ``messages`` itself is not changed. Returns ``(messages,
    calls answered as unknown, results left out)``.

    A result stays where it is when it follows its call's assistant turn in the ``tool`` messages
    right after it. Each result answers the latest call before it with its ``call_id`` that has
    none yet (local providers reuse call ids across turns), so:

    - a result further on (after another user turn, say) is moved to its call;
    - a call with no result gets an error result (:data:`UNANSWERED_TEMPLATE`);
    - a result that answers no call (an unknown ``call_id``, one placed before its call, a second
      result for a call) is left out: providers reject it (OpenAI: a ``tool`` message must answer
      a ``tool_calls`` entry of the assistant message before it; Anthropic: each ``tool_result``
      must match a ``tool_use`` of the previous assistant turn).

    Results added after a turn (moved or synthetic, in the order of its calls) join the last
    ``tool`` message right after it, or follow it as a new ``tool`` message; a message left with
    no content is dropped. Every other message, and the order of all messages, is kept.
    ``last_is_due``: the calls of a final assistant message are left alone (the loop runs them),
    and a result with their id before them is left out.
    """
    n = len(messages)
    due = n - 1 if last_is_due and n and messages[-1].role == "assistant" else -1
    # pass 1: which call (by the index of its assistant turn) each result answers
    open_calls: dict[str, list[int]] = {}  # call id -> indexes of turns with that call unanswered
    answers: dict[int, dict[str, tuple[int, int]]] = {}  # turn -> call id -> (message, block) of its result
    placed: set[tuple[int, int]] = set()  # results already right after their turn
    left_out: list[ToolResult] = []
    group_of = -1  # the turn whose tool messages right after it we are in, else -1
    for i, m in enumerate(messages):
        role = m.role
        if role != "tool":
            group_of = -1
        for j, b in enumerate(m.content):
            if type(b) is ToolCall and role == "assistant":
                if i != due:
                    open_calls.setdefault(b.id, []).append(i)
            elif type(b) is ToolResult:
                turns = open_calls.get(b.call_id)
                if not turns:
                    left_out.append(b)
                    continue
                turn = turns.pop()
                answers.setdefault(turn, {})[b.call_id] = (i, j)
                if turn == group_of:
                    placed.add((i, j))
        if role == "assistant" and i != due and any(type(b) is ToolCall for b in m.content):
            group_of = i
    if not left_out and not any(open_calls.values()) and all(
        pos in placed for got in answers.values() for pos in got.values()
    ):
        return list(messages), [], []
    # pass 2: rebuild, each turn's missing results added where its tool messages end
    out: list[Message] = []
    added: list[ToolCall] = []
    owed: list[ToolResult] = []  # results the turn being closed still needs

    def close_turn() -> None:
        if not owed:
            return
        if out[-1].role == "tool":
            out[-1] = Message("tool", out[-1].content + tuple(owed))
        else:
            out.append(Message("tool", tuple(owed)))
        owed.clear()

    for i, m in enumerate(messages):
        if m.role != "tool":
            close_turn()
        if any(type(b) is ToolResult for b in m.content):
            kept = tuple(b for j, b in enumerate(m.content) if type(b) is not ToolResult or (i, j) in placed)
            if not kept:
                continue
            m = m if len(kept) == len(m.content) else Message(m.role, kept)
        out.append(m)
        if m.role == "assistant" and i != due:
            got = answers.get(i, {})
            for c in m.content:
                if type(c) is not ToolCall:
                    continue
                pos = got.get(c.id)
                if pos is None:
                    owed.append(ToolResult(c.id, c.name, UNANSWERED_TEMPLATE, is_error=True))
                    added.append(c)
                elif pos not in placed:
                    owed.append(messages[pos[0]].content[pos[1]])  # type: ignore[arg-type]
    close_turn()
    return out, added, left_out


def _as_json(value: Any) -> str:
    """A typed answer as JSON text (a ``str`` is a JSON string, not the text itself)."""
    return json.dumps(value) if isinstance(value, str) else render_tool_value(value)


def _with_text(message: Message, text: str) -> Message:
    """``message`` with its text blocks replaced by one holding ``text`` (other blocks kept)."""
    return Message(message.role, (TextBlock(text), *(b for b in message.content if type(b) is not TextBlock)))


def _noted(result: ToolResult, note: str) -> ToolResult:
    """``result`` with ``note`` (what ran, when it is not what the model asked) before its content."""
    return ToolResult(result.call_id, result.name, f"{note}\n{result.content}", result.is_error)


def _arguments_json(arguments: Any) -> str:
    return json.dumps(thaw(arguments), ensure_ascii=False, default=str)


class Run:
    """One run of an agent. ``drive()`` runs it; ``emit`` (optional) receives stream events.

    With a checkpointer (``handle``), a checkpoint is written after every model turn and every
    tool batch, tool results are recorded as they finish, side-effecting tools run through the
    effect ledger, and a call that needs approval suspends the run. A side-effecting call whose
    outcome is unknown is recorded in ``uncertain_effects`` (and a warning); when an earlier attempt
    of it was interrupted, the run suspends until a person settles it."""

    __slots__ = (
        "agent",
        "answered",
        "approved_tools",
        "batch_task",
        "begin",
        "cancel_requested",
        "check_input",
        "corrected",
        "ctx",
        "decisions",
        "emit",
        "entry",
        "guards",
        "handle",
        "handoffs",
        "in_turn",
        "input_task",
        "input_text",
        "ledger",
        "limit",
        "listening",
        "pending",
        "pending_approvals",
        "prepared",
        "resumed",
        "sent",
        "sent_upto",
        "step",
        "steps_before",
        "tool_calls_used",
        "tool_choice",
        "tool_rounds_used",
        "transcript",
        "uncertain_effects",
        "unprepared",
        "usage",
        "warnings",
        "withdrawn",
        "working",
    )

    def __init__(self, agent: AgentDefinition, ctx: RunContext, transcript: list[Message]) -> None:
        self.agent = agent
        self.entry = agent  # the agent the run started with (``agent`` is who holds it now: handoffs)
        self.resumed = False  # continues from a checkpoint (Agent.resume)
        self.handoffs: list[dict[str, Any]] = []  # see seamkit._agent.handoff
        self.steps_before = 0  # model turns taken before the holder took over
        self.ctx = ctx
        self.transcript = transcript
        self.usage = _NO_USAGE
        self.step = 0
        self.emit: Callable[[StreamEvent], None] | None = None
        self.warnings: list[str] = []
        self.tool_choice = agent.tool_choice if agent.invoker.tools.schemas else "none"
        self.corrected = False
        self.handle: RunHandle | None = None
        self.ledger: EffectLedger | None = None
        self.pending: Mapping[str, Any] = EMPTY  # tool call id -> ToolResult recorded before a crash
        self.decisions: Mapping[str, Decision] | None = None
        self.pending_approvals: tuple[PendingApproval, ...] = ()
        self.approved_tools: list[str] = []
        self.in_turn = False  # a model turn is in flight (counted in step, not in the transcript yet)
        self.working: WorkingContext | None = None  # with a request builder: the run's working context
        self.uncertain_effects: list[UncertainEffect] = []  # by call id, settled ones included
        # (n, messages): the first n transcript messages as requests send them, unanswered calls
        # answered (None when none needed it)
        self.answered: tuple[int, tuple[Message, ...]] | None = None
        # the messages requests send, shared by every request (seamkit.values.MessageLog): each
        # turn appends the transcript's new messages instead of copying it; ``sent_upto``: the
        # transcript messages it holds. ``None``: built again at the next request (the transcript
        # changed in place, a handoff, the unanswered calls answered again)
        self.sent: MessageLog | None = None
        self.sent_upto = 0
        self.batch_task: asyncio.Task[Any] | None = None  # the task running a tool batch now
        self.cancel_requested = False  # the cancellation token cancelled batch_task
        # _on_cancel is on the token's callbacks (from the first tool batch until drive() returns:
        # between batches it finds no batch_task and does nothing)
        self.listening = False
        self.guards = agent._guards  # point -> the guards acting there
        self.check_input = False  # the input point's guards are due (a fresh run with input guards)
        self.input_task: asyncio.Task[Any] | None = None  # parallel input guards, while they run
        self.input_text = ""  # the task's text the parallel input guards check
        # writes the run's first checkpoint; set when that waits for the input guards
        self.begin: Callable[[], Awaitable[None]] | None = None
        # tool-loop controls (seamkit._agent.controls): the calls and tool rounds this run made,
        # the tools withdrawn (a person rejected a call), the limit reached (then no more tools)
        self.tool_calls_used = 0
        self.tool_rounds_used = 0
        # tool name -> the step whose call a person rejected: withdrawn from the turns after it
        # (the other calls of that step's batch are decided by their own decisions)
        self.withdrawn: dict[str, int] = {}
        self.limit: Limit | None = None
        # tool name -> why it is not offered in this run (its prepare() said so; not checkpointed:
        # a resumed run asks again), and the agents whose tools were asked (handoffs: each holder)
        self.unprepared: dict[str, str] = {}
        self.prepared: set[int] = set()

    # -- durable state ------------------------------------------------------------------------

    def state(self, **extra: Any) -> dict[str, Any]:
        """The run's state as checkpointed (everything but the transcript, which is logged)."""
        s: dict[str, Any] = {
            "agent": self.agent.name,
            "step": self.step,
            "usage": self.usage,
            "tool_choice": self.tool_choice,
            "corrected": self.corrected,
            "warnings": list(self.warnings),
            "scope": self.ctx.scope,
            "approved_tools": list(self.approved_tools),
            "pending_approvals": list(self.pending_approvals),
            "decisions": dict(self.decisions) if self.decisions is not None else None,
        }
        if self.working is not None:
            s["prompt_variables"] = self.working.variables
        if self.handoffs:
            s["handoffs"] = list(self.handoffs)
        if self.tool_calls_used or self.tool_rounds_used or self.withdrawn or self.limit is not None:
            s.update(tool_calls_used=self.tool_calls_used, tool_rounds_used=self.tool_rounds_used,
                     withdrawn_tools=dict(self.withdrawn), limit_reached=self.limit)
        if self.uncertain_effects:
            from seamkit._durability.ledger import effects_detail

            s["uncertain_effects"] = list(self.uncertain_effects)
            detail = effects_detail(self.uncertain_effects)
            if detail:
                s["status_detail"] = detail
        s.update(extra)
        return s

    def restore(self, state: Mapping[str, Any], pending: Mapping[str, Any]) -> None:
        """Continue from a checkpointed ``state`` (see :meth:`state`)."""
        self.step = int(state.get("step", 0))
        usage = state.get("usage")
        self.usage = usage if isinstance(usage, Usage) else Usage()
        self.tool_choice = str(state.get("tool_choice", self.tool_choice))
        self.corrected = bool(state.get("corrected", False))
        self.warnings = list(state.get("warnings") or ())
        self.approved_tools = list(state.get("approved_tools") or ())
        self.pending_approvals = tuple(state.get("pending_approvals") or ())
        decisions = state.get("decisions")
        self.decisions = dict(decisions) if decisions is not None else None
        self.pending = dict(pending)
        self.tool_calls_used = int(state.get("tool_calls_used", 0))
        self.tool_rounds_used = int(state.get("tool_rounds_used", 0))
        self.withdrawn = {str(k): int(v) for k, v in (state.get("withdrawn_tools") or {}).items()}
        limit = state.get("limit_reached")
        self.limit = limit if limit in ("max_tool_calls", "max_tool_rounds") else None
        from seamkit._durability.ledger import UncertainEffect

        self.uncertain_effects = [e for e in state.get("uncertain_effects") or () if isinstance(e, UncertainEffect)]
        if state.get("handoffs"):
            self.handoffs = [dict(h) for h in state["handoffs"]]
            self.steps_before = int(self.handoffs[-1].get("step", 0))
            self._hold(self.agent._holder(self.ctx.run_id, state))
        builder = self.agent.request_builder
        if builder is not None:
            self.working = builder.context(state.get("prompt_variables"), scope=self.ctx.scope)

    async def _save(self, status: str, *, lease: bool = True, wait: bool = True, **extra: Any) -> bool:
        """Checkpoint the run; ``False`` when the snapshot was skipped (it held a secret).
        ``wait=False``: stored with the next awaited save, or as soon as the event loop runs other
        work (:class:`~seamkit._durability.checkpointer.RunHandle`): one store hand-off a step."""
        if self.handle is None:
            return False
        saved = await self.handle.save(status, self.state(**extra), self.transcript, lease=lease, wait=wait)
        if not saved:
            why = self.handle.skipped[-1] if self.handle.skipped else "it held a secret"
            if why not in self.warnings:
                self.warnings.append(why)
            from seamkit._durability.records import FINISHED_STATUSES

            if status in FINISHED_STATUSES:
                await self._save_redacted(status, why, extra)
        return saved

    async def _save_redacted(self, status: str, why: str, extra: Mapping[str, Any]) -> None:
        """The run is over but its snapshot held a secret: record that it is over, without the
        messages, output or error text that held it, so it never looks unfinished (``running``)
        and is never resumed to run again."""
        handle = self.handle
        assert handle is not None
        ended = "failed" if status == "failed" else "ended"
        header: dict[str, Any] = {
            "agent": self.agent.name, "step": self.step, "usage": self.usage,
            "stop_reason": extra.get("stop_reason"), "output": None, "redacted": why,
            "status_detail": f"the run {ended}, but its final checkpoint was not saved ({why}): "
                             "the messages and values after the last saved one are not stored",
        }
        tries = [header]
        if extra.get("error") is not None:  # the error text itself may be what held the secret
            tries.insert(0, {**header, "error": extra["error"]})
        for state in tries:
            if await handle.save(status, state, self.transcript[: handle.logged], lease=False):
                return

    # -- events and results -------------------------------------------------------------------

    def _event(self, kind: str, **fields: object) -> None:
        emit = self.emit
        if emit is not None:
            emit(StreamEvent(kind, self.ctx.run_id, self.step, **fields))  # type: ignore[arg-type]

    def _result(self, output: object, reason: StopReason) -> AgentResult:
        ctx = self.ctx
        if ctx.warnings:
            self._take_warnings()
        agent = self.agent
        uncertain = self.uncertain_effects
        # every field, in AgentResult's order, each of its type already (it has no __post_init__
        # nor coercion): the positional constructor without keyword matching, once a run
        return _new_result(
            output,
            tuple(self.transcript),
            self.usage,
            reason,
            ctx.run_id,
            ctx.parent_run_id,
            self.step,
            tuple(self.warnings) if self.warnings else (),
            self.pending_approvals,
            tuple(e for e in uncertain if e.settled is None) if uncertain else (),
            None,  # turn: a capability turn's (seamkit._agent.kernel), never the loop's
            agent.name,  # answered_by
            handoff_chain(self.handoffs) if self.handoffs else (),
            self.limit is not None,  # stopped_early
            self.limit,  # limit_reached
            gathered_calls(self.transcript) if agent.mode == "gather" else (),
            tuple(self.working.seen) if self.working is not None else (),  # citation_ids
        )

    async def _finish(
        self, output: object, reason: StopReason, *, batch: tuple[ToolResult, ...] | None = None
    ) -> AgentResult:
        """End the run with a checkpoint. ``batch``: the tool batch's results when the run suspends
        because a call of it waits for a person to settle its outcome."""
        if self.handle is not None:
            status = "suspended" if reason == "suspended" else "done"
            if batch is not None:
                saved = await self._suspend_for_settlement(batch)
            else:
                saved = await self._save(status, output=output, stop_reason=reason)
            if not saved and reason == "suspended":
                why = self.handle.skipped[-1] if self.handle.skipped else "it was not saved"
                what = ("a person must settle a tool call whose outcome is unknown" if batch is not None
                        else "it needs a person's approval")
                ran = "" if batch is not None else "; no tool call of that turn ran"
                raise RunNotResumable(self.ctx.run_id, f"{what}, but it could not be checkpointed ({why}){ran}")
        result = self._result(output, reason)
        if self.emit is not None:
            self._event("run_finished", data=FrozenDict(stop_reason=reason, result=result))
        return result

    async def drive(self) -> AgentResult:
        """Run until the output validates, ``max_steps`` is reached or a call needs approval.

        On an exception the checkpoint (if any) is marked ``failed`` (the error in its state) and
        the exception propagates. An interruption (cancellation, Ctrl-C) is not a failure: the run
        stays ``running`` with its lease released, so a plain resume continues it.

        The run's resources (``ctx.resources``, see :mod:`seamkit._runtime.resources`) are created
        here unless the context brings them, and then closed here on every exit path. Middlewares
        wrapping runs (``invoker.run_middlewares``) wrap all of it."""
        try:
            middlewares = self.agent.invoker.run_middlewares
            if not middlewares:
                if self._plain():  # nothing to checkpoint, guard or hand over: _drive_all's own fast path
                    # owning_resources(self.ctx, self._drive), written out: one coroutine fewer a run
                    ctx = self.ctx
                    if ctx.resources is not None:
                        result = await self._drive()
                    else:
                        ctx.resources = resources = RunResources()
                        try:
                            result = await self._drive()
                        finally:
                            ctx.resources = None
                            if not resources.close_if_idle():
                                await resources.aclose()
                    assert result is not None  # no handoffs: only a holder with handoff tools returns None
                    return result
                return await owning_resources(self.ctx, self._drive_all)
            from seamkit._agent.run_call import drive_through

            return await drive_through(middlewares, self.agent, self.ctx, self.transcript,
                                       partial(owning_resources, self.ctx, self._drive_all), resumed=self.resumed)
        finally:
            if self.listening:  # a token that outlives the run (a caller's) keeps nothing of it
                self.listening = False
                self.ctx.cancellation.remove_callback(self._on_cancel)

    def _plain(self) -> bool:
        """No checkpoint, deferred begin, guard or handoff: the run is one :meth:`_drive`."""
        return self.handle is None and self.begin is None and not self.guards and not self.agent.handoffs

    async def _drive_all(self) -> AgentResult:
        if self._plain():
            result = await self._drive()
            assert result is not None  # no handoffs: only a holder with handoff tools returns None
            return result
        try:
            if self.emit is not None:
                self._event("run_started", data=FrozenDict(agent=self.agent.name))
            while True:  # each handoff ends one agent's part: the next holder drives on
                result = await self._drive(started=True)
                if result is not None:
                    return result
        except BaseException as exc:
            task = self.input_task
            if task is not None and not task.done():
                task.cancel()
                try:  # let it finish cancelling: a task left pending is reported when the loop closes
                    await asyncio.wait({task}, timeout=5)
                except BaseException:
                    pass
            if self.in_turn:  # the interrupted turn left nothing behind: it is not a step taken
                self.step -= 1
                self.in_turn = False
            try:
                if self.handle is None and isinstance(exc, GuardrailTripped):
                    # an input guard stopped it before its first checkpoint: write one saying why
                    await self._begun()
                why = f"{type(exc).__name__}: {exc}"[:2000]
                if self.handle is None:  # not durable, or stopped before its first checkpoint
                    pass
                elif isinstance(exc, (RunCancelled, KeyboardInterrupt, asyncio.CancelledError, StoreUnavailable,
                                      InfrastructureUnavailable)):
                    # not the run's failure: interrupted, or a store (a broker) it needs went away (a
                    # blip the store is already back from when this is written); the run stays resumable
                    await self._save("running", lease=False, interrupted=why)
                elif isinstance(exc, GuardrailTripped):
                    await self._save("failed", error=why, tripwire=exc.detail(), status_detail=str(exc)[:2000])
                else:
                    fc = getattr(exc, "failure_class", None)
                    # the class travels with the error text: a caller waiting on this run from
                    # elsewhere (a queued child's parent) tells its model what kind of failure it was
                    await self._save("failed", error=why, failure_class=str(fc) if fc is not None else None)
            except BaseException:  # the original exception is what the caller must see
                pass
            raise

    async def _begun(self) -> None:
        """Write the run's first checkpoint if that was deferred (see ``begin``)."""
        begin = self.begin
        if begin is not None:
            self.begin = None
            await begin()

    async def _drive(self, *, started: bool = False) -> AgentResult | None:
        """Drive the current holder's part of the run; ``None`` when it handed the conversation
        over (``started``: ``run_started`` was already sent)."""
        agent = self.agent
        ctx = self.ctx
        invoker = agent.invoker
        spec = agent.output_spec
        schemas = invoker.tools.schemas
        output_schema = spec.schema if spec is not None else None
        emit = self.emit
        cancellation = ctx.cancellation
        model = agent.model
        durable = self.handle is not None
        if emit is not None and not started:
            self._event("run_started", data=FrozenDict(agent=agent.name))
        # the first turn's events wait while parallel input guards run: sent if the task passes
        held: list[StreamEvent] | None = None
        send = emit
        if self.check_input:
            self.check_input = False
            await self._check_input()
            if self.input_task is not None and emit is not None:
                held = []
                self.emit = emit = held.append
        if self.begin is not None and self.input_task is None:
            await self._begun()
        if id(agent) not in self.prepared:
            self.prepared.add(id(agent))
            for t in invoker.tools:  # (a loop, not any() over a generator: every run passes here)
                if callable(getattr(t, "prepare", None)):
                    await self._prepare_tools(agent)
                    break
        guard_output = "output" in self.guards
        chat = invoker._chat
        direct = not invoker.has_chat_middleware and not invoker.middlewares
        meta = EMPTY
        transcript = self.transcript

        # the transcript says what is due: an assistant turn whose tool calls have no results yet
        # (a run resumed after its model turn) starts with the tool batch
        last = transcript[-1] if transcript else None
        calls = last.tool_calls if last is not None and last.role == "assistant" else ()
        self._answer_unanswered()
        while True:
            if calls:
                if cancellation.cancelled:
                    cancellation.raise_if_cancelled()
                if len(calls) == 1 and self._bare_batch():
                    # _run_batch's and _run_plain's path for one call with nothing to check,
                    # record, decide or count, without their two coroutines (W1/W2)
                    call = calls[0]
                    token = CALL_KEY.set(f"{ctx.run_id}:{self.step}:{call.id}")
                    try:
                        results: tuple[ToolResult, ...] | None = (
                            await self._cancellable(invoker.call_tool(call, ctx, meta)),)
                    finally:
                        CALL_KEY.reset(token)
                    if ctx.warnings:
                        self._take_warnings()
                else:
                    results = await self._cancellable(self._run_batch(calls, meta))
                ran, calls = calls, ()
                child_usage = take_child_usage(ctx) if ctx.state else None
                if child_usage is not None:  # agents run as tools (seamkit._agent.as_tool)
                    self.usage = self.usage + child_usage
                if results is None:
                    return await self._finish(None, "suspended")
                if self.uncertain_effects and self._waits_for_settlement():
                    return await self._finish(None, "suspended", batch=results)
                transcript.append(Message("tool", results))
                if agent.reset_tool_choice and self.tool_choice not in ("auto", "none"):
                    # "none": the forced call was the one wanted; the next turn answers without
                    # tools (a small model offered them again tends to repeat the call)
                    self.tool_choice = "none" if agent.reset_tool_choice == "none" else "auto"
                handed = bool(agent._handoff_tools) and self._hand_off(ran, results)
                if durable:  # stored with the next model turn's save (or when the run first waits)
                    await self._save("running", wait=handed)
                if handed:
                    return None
                continue

            tools, choice, note = self._offer(schemas)
            if agent.mode == "gather" and (self.step or not tools or (transcript and transcript[-1].role == "tool")):
                # gathered (or nothing to gather with): the results are the output, no answer call
                return await self._finish(render_gathered(gathered_calls(transcript)), "completed")
            if self.step - self.steps_before >= agent.max_steps:
                return await self._finish(None, "max_steps")
            if cancellation.cancelled:
                cancellation.raise_if_cancelled()
            self.step += 1
            self.in_turn = True
            step = self.step
            messages = self._messages()
            built = None if agent.request_builder is None else await self._build(messages, tools, output_schema)
            if built is not None and built.without_tools:
                tools, choice = (), "none"
            # every field is of its type already (tuples, FrozenDicts, the agent's checked settings)
            outgoing = messages if built is None else built.messages
            request = _new_request(
                outgoing + note if note else outgoing,  # (no note: the snapshot itself, not a concatenation)
                tools,
                choice,
                output_schema,
                agent.temperature,
                agent.max_tokens,
                agent.seed,
                (),
                agent.model_extra,
                EMPTY if built is None else built.metadata,
            )
            if direct:
                stream = model.stream(request)
                # a broken provider is a classified error naming it: checked here below when
                # nothing but the accumulator runs in the loop, else (observers, which may raise
                # errors of their own, see every delta) by checked_stream
                if emit is not None or not hasattr(stream, "__aiter__"):
                    stream = checked_stream(stream, model.provider, model.model)
            else:
                meta = FrozenDict(step=step, agent=agent.name)
                stream = chat(Call("chat", request, ctx, meta, model))
            acc = Accumulator(model.provider, model.model)
            # with output guards, a turn's events wait until it is known not to be an unchecked
            # answer (streamed text would show what the guards then block or redact)
            unchecked: list[StreamEvent] | None = None
            if emit is not None and guard_output:
                outer, unchecked = emit, []
                self.emit = emit = unchecked.append
            try:
                async for d in stream:
                    acc.add(d)
                    if emit is not None:
                        if d.text:
                            self._event("text", text=d.text)
                        if d.reasoning:
                            self._event("reasoning", text=d.reasoning)
                        if d.partial_output is not None:  # set by a middleware (output_coerce)
                            self._event("partial_output", partial_output=d.partial_output)
            except SeamkitError:
                raise
            except Exception as exc:
                if not direct or emit is not None:
                    raise  # a middleware's or observer's own error; checked_stream named the provider's
                raise stream_failed(exc, model.provider, model.model) from exc
            if unchecked is not None:
                self.emit = emit = outer
            result = acc.result()
            usage = result.usage
            # the first turn's usage is the run's so far (what Usage() + usage returns), no sum
            self.usage = usage if self.usage is _NO_USAGE and type(usage) is Usage else self.usage + usage
            for w in result.warnings:
                # once per run: providers repeat a standing warning (unpriced model, a degraded
                # mode) on every call, and one provider instance serves many runs
                if w not in self.warnings:
                    self.warnings.append(w)
            if self.input_task is not None:
                try:
                    kept = await self._settle_input()
                finally:
                    self.emit = emit = send
                if held and emit is not None:
                    for event in held:  # an answer to a rewritten task is dropped; what the guards did is not
                        if kept or event.kind == "guardrail":
                            emit(event)
                held = None
                if not kept:  # a guard rewrote the task: this answer was to the old one
                    self.in_turn = False
                    continue
            transcript.append(result.message)
            self.in_turn = False
            if unchecked is not None:
                unchecked.append(StreamEvent("model_result", self.ctx.run_id, step, result=result))
            elif emit is not None:
                self._event("model_result", result=result)

            calls = result.message.tool_calls
            if calls:
                if unchecked:
                    self._release(unchecked, result)
                for c in calls:
                    if c.arguments_error is not None:
                        self.warnings.append(f"tool call {c.id} ({c.name}) was not run: {c.arguments_error}")
                if durable:
                    await self._save("running")
                continue
            if agent.mode == "gather":  # the gathering decision called no tool: nothing gathered
                if unchecked:
                    self._release(unchecked, result)
                continue

            if result.finish_reason == "length" and LENGTH_WARNING not in self.warnings:
                self.warnings.append(LENGTH_WARNING)
            text = result.message.text
            if self.working is not None and self.working.seen:
                self._check_citations(text)
            if spec is None:
                if guard_output:
                    text = await self._check_output(text)
                    if unchecked:
                        self._release(unchecked, result)
                if self.handle is None and self.emit is None:  # nothing to save or send: _finish's result
                    return self._result(text, "completed")
                return await self._finish(text, "completed")
            try:
                output = spec.parse(text)
            except OutputValidationError as exc:
                if self.corrected:
                    raise
                self.corrected = True
                problems = "\n".join(f"- {p}" for p in exc.problems)
                transcript.append(Message("user", (TextBlock(CORRECTIVE_TEMPLATE.format(problems=problems)),)))
                if durable:
                    await self._save("running")
                continue
            if guard_output:
                output = await self._check_output(output)
                if unchecked:
                    self._release(unchecked, result)
            if emit is not None:
                self._event("output", output=output)
            return await self._finish(output, "completed")

    # -- handoffs -----------------------------------------------------------------------------

    def _hand_off(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> bool:
        """After a tool batch: when it holds a ``transfer_to_<name>`` call that ran (the first in
        the model's order), the target holds the conversation from now on; ``True`` then."""
        table = self.agent._handoff_tools
        for c, r in zip(calls, results, strict=True):
            h = table.get(c.name)
            if h is not None and not r.is_error:
                break
        else:
            return False
        target = h.agent
        self.handoffs.append({"from": self.agent.name, "to": target.name, "at": len(self.transcript),
                              "step": self.step, "filter": h.filter})
        self._hold(target)
        self.tool_choice = target.tool_choice if target.invoker.tools.schemas else "none"
        self.corrected = False
        self.steps_before = self.step
        if self.emit is not None:
            self._event("handoff", data=FrozenDict(**{"from": self.handoffs[-1]["from"], "to": target.name,
                                                       "filter": h.filter}))
        return True

    def _hold(self, agent: AgentDefinition) -> None:
        """``agent`` holds the conversation: its tools, guards, request builder and output."""
        self.agent = agent
        self.guards = agent._guards
        builder = agent.request_builder
        self.working = builder.context(scope=self.ctx.scope) if builder is not None else None
        self.answered = None
        self.sent = None

    def _system_of(self, name: str) -> Message | None:
        """The system message of the agent called ``name`` for a handoff view (``None`` when it has
        no prompt or a request builder writes it)."""
        from seamkit._agent.handoff import find_agent

        agent = self.agent if self.agent.name == name else find_agent(self.entry, name)
        if agent is None or agent.request_builder is not None:
            return None
        return agent._system

    # -- guardrails ---------------------------------------------------------------------------

    def _guard_context(self, point: Point, tool: ToolSchema | None = None) -> GuardContext:
        return GuardContext(point, self.ctx, self.agent.name, tool, self._guard_chat)

    async def _guard_chat(self, model: Any, request: ChatRequest) -> Any:
        """A guard's own model call (:meth:`GuardContext.chat`): through the agent's chat
        middlewares, its usage added to the run's."""
        from seamkit._runtime.invoker import Invoker
        from seamkit._tools.registry import ToolRegistry

        invoker = Invoker(model, ToolRegistry(), self.agent.middlewares)
        result = await invoker.chat(request, self.ctx, FrozenDict(purpose="guardrail"))
        self.usage = self.usage + result.usage
        return result

    def _report(self, guard: Guard, point: Point, what: str, text: str) -> None:
        """Record what a guard did that is not allow-and-pass: a ``guardrail`` event, and for a
        flag or an advisory block or failure a run warning."""
        if what != "rewrite":
            label = {"flag": "flagged", "block": "would block (advisory)", "failed": "failed (advisory)"}[what]
            warning = f"guardrail {guard.name!r} {label} at the {point} point: {text}"
            if warning not in self.warnings:
                self.warnings.append(warning)
        if self.emit is not None:
            self._event("guardrail", data=FrozenDict(guardrail=guard.name, point=point, action=what, reason=text))

    def _task_index(self) -> int | None:
        """Where the user's task is: the last user message of the transcript."""
        for i in range(len(self.transcript) - 1, -1, -1):
            if self.transcript[i].role == "user":
                return i
        return None

    async def _check_input(self) -> None:
        """Run the input point's guards on the task: the others now (a rewrite replaces the task's
        text), the ``parallel`` ones in ``input_task``, alongside the first model call."""
        i = self._task_index()
        text = self.transcript[i].text if i is not None else ""
        guards = self.guards["input"]
        last = self.transcript[-1] if self.transcript else None
        now: tuple[Guard, ...]
        later: tuple[Guard, ...]
        if last is not None and last.role == "assistant" and last.tool_calls:
            now, later = guards, ()  # the run starts with a tool batch: nothing may run before the checks
        else:
            now = tuple(g for g in guards if not g.parallel)
            later = tuple(g for g in guards if g.parallel)
        if now:
            new = await check(now, "input", text, self._guard_context("input"), self._report)
            if new != text:
                self._replace_task(i, new)
                text = new
        if later:
            self.input_text = text
            self.input_task = asyncio.ensure_future(
                check(later, "input", text, self._guard_context("input"), self._report))

    async def _settle_input(self) -> bool:
        """Wait for the parallel input guards after the first model call; ``False`` when they
        rewrote the task (that call's answer is then dropped). Raises :class:`GuardrailTripped`
        for a block. Writes the deferred first checkpoint."""
        task = self.input_task
        assert task is not None
        try:
            new = await task
        finally:
            self.input_task = None
        kept = new == self.input_text
        if not kept:
            self._replace_task(self._task_index(), new)
        await self._begun()
        return bool(kept)

    def _replace_task(self, i: int | None, text: str) -> None:
        """The task (message ``i``) with its text replaced by ``text`` (other blocks kept)."""
        if i is None:
            self.transcript.append(Message.user(text))
            return
        self.transcript[i] = _with_text(self.transcript[i], text)
        self.sent = None  # requests already sent keep the old task; the next ones have the new one
        if self.answered is not None and i < self.answered[0]:
            self._answer_unanswered()

    async def _check_output(self, output: Any) -> Any:
        """Run the output point's guards; a rewritten answer also replaces the final assistant
        message's text (so the transcript and checkpoint hold what was returned)."""
        new = await check(self.guards["output"], "output", output, self._guard_context("output"), self._report,
                          self._output_as_returned)
        if new is not output and new != output:
            text = new if isinstance(new, str) and self.agent.output_spec is None else _as_json(new)
            self.transcript[-1] = _with_text(self.transcript[-1], text)
            self.sent = None
        return new

    def _release(self, events: list[StreamEvent], result: LLMResult) -> None:
        """Send a turn's held events once its answer passed the output guards (or it asked for
        tools); when a guard rewrote the answer, its text and model result events carry the
        rewritten final message instead of the streamed pieces. (A typed answer that did not
        validate is never released: the guards never saw it.)"""
        emit = self.emit
        assert emit is not None
        final = self.transcript[-1]
        if final is result.message:
            for event in events:
                emit(event)
            return
        checked = dataclasses.replace(result, message=final)
        text_sent = False
        for event in events:
            if event.kind not in ("text", "partial_output", "model_result"):
                emit(event)
                continue
            if not text_sent:  # the streamed pieces become one text event of the checked answer
                emit(StreamEvent("text", event.run_id, event.step, text=final.text))
                text_sent = True
            if event.kind == "model_result":
                emit(dataclasses.replace(event, result=checked))

    def _output_as_returned(self, value: Any) -> Any:
        """A rewritten answer as the run returns it: text for a free-text agent; for a typed one,
        the value parsed again through the output type (so a rewrite cannot hand back something
        the agent's type or schema refuses). Raises ``TypeError`` or
        :class:`~seamkit.errors.OutputValidationError`."""
        spec = self.agent.output_spec
        if spec is None:
            if not isinstance(value, str):
                raise TypeError(f"a rewrite of a text answer must be text (str), got {type(value).__name__}")
            return value
        return spec.parse(_as_json(value))

    async def _check_calls(self, calls: Sequence[ToolCall]) -> tuple[list[ToolCall], dict[str, str]]:
        """Run the tool point's guards on each call (concurrently; calls whose arguments could not
        be decoded are not run, so not checked). Returns the calls to run and, for calls a guard
        rewrote, the note their results carry. Raises :class:`GuardrailTripped` for a block (no
        call of the batch has run then)."""
        guards = self.guards["tool"]
        tools = self.agent.invoker.tools

        async def one(c: ToolCall) -> ToolCall:
            if c.arguments_error is not None:
                return c
            t = tools.get(c.name)
            checked: ToolCall = await check(guards, "tool", c, self._guard_context("tool", t.schema if t else None),
                                            self._report)
            return checked

        if len(calls) == 1:
            checked = [await one(calls[0])]
        else:
            checked = list(await asyncio.gather(*(one(c) for c in calls)))
        notes = {
            new.id: GUARDED_TEMPLATE.format(arguments=_arguments_json(new.arguments))
            for old, new in zip(calls, checked, strict=True) if new is not old and new.arguments != old.arguments
        }
        return checked, notes

    async def _check_result(self, result: ToolResult) -> ToolResult:
        """Run the tool_result point's guards on one tool's result."""
        guards = self.guards.get("tool_result")
        if not guards:
            return result
        t = self.agent.invoker.tools.get(result.name)
        checked: ToolResult = await check(guards, "tool_result", result,
                                          self._guard_context("tool_result", t.schema if t else None), self._report)
        return checked

    # -- cancellation -------------------------------------------------------------------------

    async def _cancellable(self, work: Awaitable[T]) -> T:
        """Await ``work`` (a tool batch) so that ``ctx.cancellation.cancel()`` stops it in flight:
        the token cancels this task, so async tools are cancelled (their ``finally`` blocks run)
        and tools in worker threads see the token; then :class:`~seamkit.errors.RunCancelled` is
        raised with the token's reason. A cancellation of this task by anyone else stays an
        ``asyncio.CancelledError``; the two are told apart by counting cancel requests
        (``Task.cancelling()``)."""
        task = asyncio.current_task()
        if task is None:
            return await work
        token = self.ctx.cancellation
        self.batch_task = task
        self.cancel_requested = False
        if not self.listening:  # once per drive(), not per batch (removed when drive() returns)
            self.listening = True
            token.add_callback(self._on_cancel)
        try:
            result = await work
        except asyncio.CancelledError:
            if self.cancel_requested and task.uncancel() == 0:
                raise RunCancelled(token.reason or "cancelled") from None
            raise
        finally:
            self.batch_task = None
        if self.cancel_requested:
            # the token fired as the batch ended: withdraw the request (Python < 3.13 keeps a
            # pending one after uncancel(), so let it arrive here); the run stops at the next
            # check between steps, with these results kept
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                pass
            task.uncancel()
        return result

    def _on_cancel(self) -> None:
        """The token's callback (called in the thread that cancelled it): cancel the batch's
        task on its own event loop."""
        task = self.batch_task
        if task is None:
            return
        loop = task.get_loop()
        if _running_loop() is loop:
            self._stop_batch(task)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._stop_batch, task)

    def _stop_batch(self, task: asyncio.Task[Any]) -> None:
        # the batch may have ended (and another begun) before a stop scheduled from another
        # thread arrives: only the batch still running in that task is stopped
        if self.batch_task is task and not self.cancel_requested and not task.done():
            self.cancel_requested = True
            task.cancel(f"run cancelled: {self.ctx.cancellation.reason}")

    # -- request building ---------------------------------------------------------------------

    def _answer_unanswered(self) -> None:
        """Pair the tool calls and results of the transcript the run starts from as requests must
        carry them (:func:`answer_unanswered_calls`; see the module docstring), with a warning for
        each call answered as unknown and each result left out."""
        transcript = self.transcript
        self.sent = None
        for m in transcript:
            if m.role == "assistant" or m.role == "tool":
                break
            for b in m.content:  # (no generator per message: every run starts here)
                if type(b) is ToolResult:
                    break
            else:
                continue
            break
        else:  # no tool call nor result (a fresh task): nothing to pair
            self.answered = None
            return
        out, added, left_out = answer_unanswered_calls(transcript)
        if len(out) == len(transcript) and all(a is b for a, b in zip(out, transcript, strict=True)):
            self.answered = None
            return
        self.answered = (len(transcript), tuple(out))
        whys: list[str] = []
        if added:
            ids = ", ".join(f"{c.id} ({c.name})" for c in added)
            whys.append(f"tool calls without a result were answered as unknown outcomes in each request: {ids}")
        if left_out:
            ids = ", ".join(f"{r.call_id} ({r.name})" for r in left_out)
            whys.append(f"tool results that answer no tool call before them were left out of each request: {ids}")
        for why in whys:
            if why not in self.warnings:
                self.warnings.append(why)

    def _messages(self) -> MessageSnapshot:
        """The transcript as a request sends it (unanswered calls answered; after a handoff, as
        its filter shows it to the holder), as an immutable snapshot sharing the run's request log:
        O(messages added since the last request), not O(transcript).

        The log starts from what the first request after the run started (or after a handoff, or
        after a change of the transcript in place) sends; later requests add the transcript's new
        messages as they are. Those are the loop's own (a model turn, its tool results, a
        corrective turn), already paired as requests need: pairing them again would change
        nothing (:func:`answer_unanswered_calls` leaves a well-paired turn where it is)."""
        transcript = self.transcript
        sent = self.sent
        n = len(transcript)
        if sent is None or n < self.sent_upto:
            if self.handoffs:
                view = handoff_view(transcript, self.handoffs, self._system_of)
                sent = MessageLog(answer_unanswered_calls(view)[0])
                self.sent_upto = n
            elif self.answered is not None:
                upto, head = self.answered
                sent = MessageLog(head)
                self.sent_upto = upto
            else:
                sent = MessageLog()
                self.sent_upto = 0
            self.sent = sent
        upto = self.sent_upto
        if n > upto:
            sent.extend(transcript[upto:] if upto else transcript)
            self.sent_upto = n
        return sent.snapshot()

    async def _build(self, messages: Sequence[Message], tools: tuple[ToolSchema, ...],
                     output_schema: Any) -> BuiltRequest:
        builder = self.agent.request_builder
        assert builder is not None
        if self.working is None:
            self.working = builder.context(scope=self.ctx.scope)
        built = await builder.build(self.working, messages, tools=tools, output_schema=output_schema, ctx=self.ctx)
        fitting = built.fitting
        if fitting is not None:
            if fitting.without_tools and TOOLS_DROPPED_WARNING not in self.warnings:
                self.warnings.append(TOOLS_DROPPED_WARNING)
            if fitting.tokens_after < fitting.tokens_before:  # said only when it made the request smaller
                self._event("context_condensed", data=fitting.as_data())
        return built

    # -- tool-loop controls (seamkit._agent.controls) ------------------------------------------

    async def _prepare_tools(self, agent: AgentDefinition) -> None:
        """Ask each tool of ``agent`` that has ``prepare(ctx)`` whether it may be offered in this
        run (concurrently, before its first model turn): a tool answering a reason is not offered
        (a call to it is answered as an unknown tool) and the reason becomes a run warning. A
        ``prepare`` that raises leaves its tool offered: its calls report the failure."""
        self.prepared.add(id(agent))  # (the caller may have added it: asked once either way)
        preparing = [t for t in agent.invoker.tools if callable(getattr(t, "prepare", None))]
        if not preparing:
            return

        async def ask(t: Any) -> tuple[str, Any]:
            try:
                return t.schema.name, await t.prepare(self.ctx)
            except Exception as exc:  # the tool's own failure; a call to it will say what it is
                logging.getLogger("seamkit.agent").debug("prepare() of tool %s failed: %s: %s", t.schema.name,
                                                         type(exc).__name__, exc)
                return t.schema.name, None

        for name, reason in await asyncio.gather(*(ask(t) for t in preparing)):
            if isinstance(reason, str) and reason:
                self.unprepared[name] = reason
                if reason in self.ctx.warnings:  # the tool warned with it too: say it once
                    self.ctx.warnings.remove(reason)
                self.ctx.warn(f"tool {name!r} is not offered in this run: {reason}")
        self._take_warnings()

    def _offer(self, schemas: tuple[ToolSchema, ...]) -> tuple[tuple[ToolSchema, ...], str, tuple[Message, ...]]:
        """The next model turn's tools, tool choice and note (messages sent after the transcript,
        in the request only): the agent's tools less the withdrawn ones; once a limit is reached,
        ``tool_choice="none"`` and the note saying so (the tools stay defined: the transcript
        holds calls to them, and some providers refuse tool blocks without definitions)."""
        if not self.withdrawn and not self.unprepared and self.limit is None:
            return schemas, self.tool_choice if schemas else "none", ()  # nothing withdrawn, no limit
        withdrawn: Mapping[str, object] = self.withdrawn
        if self.unprepared:
            withdrawn = {**self.unprepared, **self.withdrawn}
        tools = tuple(t for t in schemas if t.name not in withdrawn) if withdrawn else schemas
        if self.limit is not None:
            n = getattr(self.agent, self.limit)
            return tools, "none", (limit_note(self.limit, n),)
        choice = self.tool_choice
        if not tools:
            choice = "none"
        elif choice not in ("auto", "required", "none") and choice in withdrawn:
            choice = "auto"
        return tools, choice, ()

    def _bare_batch(self) -> bool:
        """Whether a tool batch runs its calls with nothing around them: no tool withheld or
        limited, no checkpoint, approval, guard, event or tool-round count (what
        :meth:`_run_batch` and :meth:`_run_plain` then do is call each tool under its call key)."""
        agent = self.agent
        return (self.handle is None and self.emit is None and not self.guards and not agent.approvals
                and not agent.disabled_tools and not self.unprepared and not self.withdrawn
                and agent.max_tool_calls is None and agent.max_tool_rounds is None and self.limit is None)

    async def _run_batch(self, calls: tuple[ToolCall, ...], meta: FrozenDict) -> tuple[ToolResult, ...] | None:
        """:meth:`_run_tools` with the tool-loop controls: a call to a disabled or withdrawn tool
        is answered as an unknown tool, a call past ``max_tool_calls`` (or after a limit was
        reached) with the limit's result; the others run. Results in the model's call order;
        ``None`` when the run must suspend for approval. Counts the calls and the round, and
        notes a limit reached."""
        agent = self.agent
        unavailable: frozenset[str] = frozenset()
        if agent.disabled_tools or self.unprepared or self.withdrawn:
            unavailable = frozenset(agent.disabled_tools)
            if self.unprepared:
                unavailable = unavailable | frozenset(self.unprepared)
            if self.withdrawn:
                step = self.step
                unavailable = unavailable | frozenset(n for n, at in self.withdrawn.items() if at < step)
        cap = agent.max_tool_calls
        if not unavailable and cap is None and self.limit is None:
            if self.handle is None and not agent.approvals:  # nothing to record or decide
                results: tuple[ToolResult, ...] | None = await self._run_plain(calls, meta)
            else:
                results = await self._run_tools(calls, meta)
            if self.ctx.warnings:
                self._take_warnings()  # kept with the batch's checkpoint
            if results is not None and agent.max_tool_rounds is not None:
                self._count(len(calls))
            return results
        left = None if cap is None else cap - self.tool_calls_used
        refused: dict[str, ToolResult] = {}
        allowed: list[ToolCall] = []
        for c in calls:
            if c.name in unavailable:
                offered = [n for n in agent.invoker.tools.names if n not in unavailable]
                refused[c.id] = unknown_tool_result(c, offered)
            elif self.limit is not None:
                refused[c.id] = limit_result(c, self.limit, getattr(agent, self.limit))
            elif left is not None and len(allowed) >= left:
                refused[c.id] = limit_result(c, "max_tool_calls", cap or 0)
            else:
                allowed.append(c)
        if refused and self.pending_approvals:
            # a call that waited for a person and is now refused (its tool is not offered in this
            # run, a limit was reached) is no longer waiting: its decision has nothing to decide
            self.pending_approvals = tuple(p for p in self.pending_approvals if p.call_id not in refused)
            if not self.pending_approvals:
                self.decisions = None
        ran: tuple[ToolResult, ...] = ()
        if allowed:
            got = await self._run_tools(tuple(allowed), meta)
            self._take_warnings()
            if got is None:
                return None
            ran = got
        if self.emit is not None:
            for r in refused.values():
                self._event("tool_result", tool_result=r)
        by_id = {r.call_id: r for r in ran}
        self._count(len(allowed))
        return tuple(refused[c.id] if c.id in refused else by_id[c.id] for c in calls)

    def _take_warnings(self) -> None:
        """Move what the batch's tools said with ``ctx.warn`` into the run's warnings (before the
        batch's checkpoint, so they are kept with it)."""
        said = self.ctx.warnings
        if said:
            for w in said:
                if w not in self.warnings:
                    self.warnings.append(w)
            said.clear()

    def _count(self, ran: int) -> None:
        """Count a finished tool batch (``ran`` calls passed on to run) and note a limit it reached."""
        if self.limit is not None:
            return
        agent = self.agent
        self.tool_calls_used += ran
        self.tool_rounds_used += 1
        if agent.max_tool_calls is not None and self.tool_calls_used >= agent.max_tool_calls:
            self.limit = "max_tool_calls"
        elif agent.max_tool_rounds is not None and self.tool_rounds_used >= agent.max_tool_rounds:
            self.limit = "max_tool_rounds"
        else:
            return
        then = ("calls past it were not run" if agent.mode == "gather"
                else "the model was asked to answer without tools")
        why = f"stopped early: {self.limit} ({getattr(agent, self.limit)}) was reached; {then}"
        if why not in self.warnings:
            self.warnings.append(why)

    def _check_citations(self, text: str) -> None:
        assert self.working is not None
        unknown = self.working.unknown_citations(text)
        if unknown:
            why = f"the answer cites sources that were not given to the model: {', '.join(unknown)}"
            if why not in self.warnings:
                self.warnings.append(why)

    # -- tool batches -------------------------------------------------------------------------

    def _thread_scope(self) -> Scope | None:
        s = self.ctx.scope
        if s.thread is None:
            return None
        return Scope(tenant=_APPROVAL_SCOPE_PREFIX + s.tenant, user=None, thread=s.thread)

    async def _approved_before(self, tool: str, policy: str) -> bool:
        if policy == "every_call":
            return False
        if tool in self.approved_tools:
            return True
        if policy == "once_per_thread":
            scope = self._thread_scope()
            store = self.ledger.store if self.ledger is not None else None
            if scope is not None and store is not None:
                return bool(await store.get(scope, f"{self.agent.name}:{tool}", False))
        return False

    async def _remember_approval(self, tool: str, policy: str) -> None:
        if policy == "every_call":
            return
        if tool not in self.approved_tools:
            self.approved_tools.append(tool)
        if policy == "once_per_thread":
            scope = self._thread_scope()
            store = self.ledger.store if self.ledger is not None else None
            if scope is not None and store is not None:
                await store.set(scope, f"{self.agent.name}:{tool}", True)

    async def _run_tools(self, calls: tuple[ToolCall, ...], meta: FrozenDict) -> tuple[ToolResult, ...] | None:
        """Run one turn's tool calls; ``None`` when the run must suspend for approval."""
        agent = self.agent
        emit = self.emit
        if self.handle is None and not agent.approvals:
            return await self._run_plain(calls, meta)
        done: dict[str, ToolResult] = {}
        if self.pending:
            for c in calls:
                r = self.pending.get(c.id)
                if isinstance(r, ToolResult):
                    done[c.id] = r
                    if self.handle is not None:  # keep it recorded against the current version
                        await self.handle.record_write(c.id, r)
            self.pending = EMPTY
        for c in calls:
            if c.arguments_error is not None and c.id not in done:
                # nothing to run, approve or record: the model is told to call again
                done[c.id] = unusable_arguments_result(c)
        approvals = agent.approvals
        # calls recorded as waiting for a person are decided by the decisions, whatever the
        # resuming agent's own approval policies say (a rejected call never runs)
        waiting = {p.call_id: p for p in self.pending_approvals}
        edited: dict[str, FrozenDict] = {}
        to_run: list[ToolCall] = []
        if approvals or waiting:
            decisions = self.decisions
            need: list[PendingApproval] = []
            for c in calls:
                if c.id in done:
                    continue
                held = waiting.get(c.id)
                policy = held.policy if held is not None else approvals.get(c.name, "never")
                if held is None and (policy == "never" or await self._approved_before(c.name, policy)):
                    to_run.append(c)
                    continue
                if decisions is None:
                    need.append(PendingApproval(c.id, c.name, c.arguments, policy))
                    continue
                d = decisions.get(c.id)
                if d is None or not d.approved:
                    self.withdrawn.setdefault(c.name, self.step)  # rejected: not offered again in this run
                    reason = f" Reason: {d.reason}" if d is not None and d.reason else ""
                    done[c.id] = ToolResult(c.id, c.name, REJECTED_TEMPLATE + reason, is_error=True)
                    continue
                await self._remember_approval(c.name, policy)
                if d.arguments is not None and d.arguments != c.arguments:
                    edited[c.id] = d.arguments
                    c = ToolCall(c.id, c.name, d.arguments)
                to_run.append(c)
            if need:
                self.pending_approvals = tuple(need)
                if emit is not None:
                    for p in need:
                        self._event("approval_requested", data=FrozenDict(pending=p))
                return None
            self.decisions = None
            self.pending_approvals = ()
        else:
            to_run = [c for c in calls if c.id not in done]
        guarded: dict[str, str] = {}
        if "tool" in self.guards and to_run:
            to_run, guarded = await self._check_calls(to_run)

        if emit is not None:
            for c in to_run:
                self._event("tool_call", tool_call=c)
        if len(to_run) == 1:
            done[to_run[0].id] = await self._call(to_run[0], meta)
        elif to_run:
            ran = await self._batch(to_run, partial(self._call, meta=meta))
            for c, r in zip(to_run, ran, strict=True):
                done[c.id] = r
        for call_id, arguments in edited.items():
            # the transcript keeps the model's call; its result says what actually ran
            r = done[call_id]
            done[call_id] = _noted(r, EDITED_TEMPLATE.format(arguments=_arguments_json(arguments)))
        for call_id, note in guarded.items():
            done[call_id] = _noted(done[call_id], note)
        results = tuple(done[c.id] for c in calls)
        if emit is not None:
            for r in results:
                self._event("tool_result", tool_result=r)
        return results

    async def _run_plain(self, calls: tuple[ToolCall, ...], meta: FrozenDict) -> tuple[ToolResult, ...]:
        """A tool batch of a run without checkpoints or approvals: nothing to record or decide."""
        invoker = self.agent.invoker
        ctx = self.ctx
        emit = self.emit
        guards = self.guards
        guarded: dict[str, str] | None = None
        if guards and "tool" in guards:
            checked, guarded = await self._check_calls(calls)
            calls = tuple(checked)
        if emit is not None:
            for c in calls:
                self._event("tool_call", tool_call=c)
        if len(calls) == 1 and (not guards or "tool_result" not in guards):
            # the common turn: one call, run here (what _keyed does, without its two partials)
            call = calls[0]
            token = CALL_KEY.set(f"{ctx.run_id}:{self.step}:{call.id}")
            try:
                results: tuple[ToolResult, ...] = (await invoker.call_tool(call, ctx, meta),)
            finally:
                CALL_KEY.reset(token)
        else:
            call_tool = partial(self._keyed, partial(invoker.call_tool, ctx=ctx, meta=meta))
            if not guards or "tool_result" not in guards:
                results = tuple(await self._batch(calls, call_tool))
            else:
                run = partial(self._call_checked, call_tool)
                results = tuple(await self._batch(calls, run))
        if guarded:
            results = tuple(_noted(r, guarded[r.call_id]) if r.call_id in guarded else r for r in results)
        if emit is not None:
            for r in results:
                self._event("tool_result", tool_result=r)
        return results

    async def _call_checked(self, run: Callable[[ToolCall], Awaitable[ToolResult]], call: ToolCall) -> ToolResult:
        """``run(call)``, its result through the tool_result point's guards (a call whose arguments
        could not be decoded did not run: its result is the host's, not checked)."""
        result = await run(call)
        return result if call.arguments_error is not None else await self._check_result(result)

    async def _batch(
        self, calls: Sequence[ToolCall], run: Callable[[ToolCall], Awaitable[ToolResult]]
    ) -> list[ToolResult]:
        """``run`` each of one turn's ``calls``; results in the model's call order.

        Read-only calls run concurrently (at most ``max_parallel_tools`` at once). Side-effecting
        ones run one after another, in the model's order, alongside them: the model wrote them
        in one turn without seeing any outcome, and two writes racing (or a payment and the
        email announcing it) is rarely what it meant. ``parallel_side_effects`` lets them run
        concurrently too."""
        agent = self.agent
        limit = agent.max_parallel_tools
        serial: list[int] = []
        if not agent.parallel_side_effects:
            tools = agent.invoker.tools
            for i, c in enumerate(calls):
                t = tools.get(c.name)
                if t is not None and t.schema.side_effecting and c.arguments_error is None:
                    serial.append(i)
        if len(serial) < 2:
            return await gather_bounded([partial(run, c) for c in calls], limit=limit)
        in_order = frozenset(serial)
        rest = [i for i in range(len(calls)) if i not in in_order]

        async def one_after_another() -> list[ToolResult]:
            return [await run(calls[i]) for i in serial]

        factories: list[Callable[[], Awaitable[Any]]] = [one_after_another]
        factories.extend(partial(run, calls[i]) for i in rest)
        ran = await gather_bounded(factories, limit=limit)
        results: list[ToolResult | None] = [None] * len(calls)
        for i, r in zip(serial, ran[0], strict=True):
            results[i] = r
        for i, r in zip(rest, ran[1:], strict=True):
            results[i] = r
        return results  # type: ignore[return-value]  # every slot is filled

    async def _keyed(self, run: Callable[[ToolCall], Awaitable[ToolResult]], call: ToolCall) -> ToolResult:
        """``run(call)`` with the call's key as :func:`~seamkit._agent.child_runs.current_call_key`
        (an agent tool derives its child's run id from it: the same after a resume)."""
        token = CALL_KEY.set(f"{self.ctx.run_id}:{self.step}:{call.id}")
        try:
            return await run(call)
        finally:
            CALL_KEY.reset(token)

    async def _call(self, call: ToolCall, meta: FrozenDict) -> ToolResult:
        token = CALL_KEY.set(f"{self.ctx.run_id}:{self.step}:{call.id}")
        try:
            return await self._call_keyed(call, meta)
        finally:
            CALL_KEY.reset(token)

    async def _call_keyed(self, call: ToolCall, meta: FrozenDict) -> ToolResult:
        invoker = self.agent.invoker
        ledger = self.ledger
        if ledger is not None and self.handle is not None:
            t = invoker.tools.get(call.name)
            if t is not None and t.schema.side_effecting:
                return await self._call_effect(ledger, call, t.schema.idempotent, meta)
        result = await invoker.call_tool(call, self.ctx, meta)
        if "tool_result" in self.guards and call.arguments_error is None:
            result = await self._check_result(result)
        if self.handle is not None:  # stored with the next awaited save, or when the event loop runs other work
            await self.handle.record_write(call.id, result, wait=False)
        return result

    async def _call_effect(
        self, ledger: EffectLedger, call: ToolCall, idempotent: bool, meta: FrozenDict
    ) -> ToolResult:
        """A side-effecting call through the effect ledger. Its idempotency key (``ctx.idempotency_key``
        for the tool) is ``<run id>:<step>:<call id>``: the same for every attempt of this call (the
        step is restored on resume), different for every other call (the step too, because providers,
        local ones above all, may reuse call ids across turns)."""
        from seamkit._durability.ledger import UNCERTAIN_TEMPLATE, UncertainEffect, effect_key

        assert self.handle is not None
        invoker = self.agent.invoker
        key = effect_key(self.ctx.run_id, self.step, call.id)
        ctx = dataclasses.replace(self.ctx, idempotency_key=key)
        attempted = False

        async def attempt() -> ToolResult:
            nonlocal attempted
            attempted = True
            return await invoker.call_effect(call, ctx, meta)

        try:
            result: ToolResult = await ledger.run(key, attempt, idempotent=idempotent)
        except EffectNotApplied as exc:
            # certainly not applied (it never started, or the tool said so): the model may try again
            cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
            if isinstance(cause, ToolUnavailable) and cause.stop_run:
                raise cause from None  # configured to stop the run; nothing was applied
            result = ToolResult(call.id, call.name, f"{type(cause).__name__}: {cause}", is_error=True)
        except EffectUncertain as exc:
            # not attempted here: an earlier attempt was interrupted before its result was recorded,
            # so nobody has told the model anything; the run waits for a person to settle it
            effect = UncertainEffect(call.id, call.name, key, exc.reason, call.arguments, waits=not attempted)
            self._note_uncertain(effect)
            result = ToolResult(call.id, call.name, UNCERTAIN_TEMPLATE.format(reason=exc.reason), is_error=True)
            if effect.waits:
                return result  # not recorded: the call is decided once it is settled
        if "tool_result" in self.guards:
            result = await self._check_result(result)
        await self.handle.record_write(call.id, result, wait=False)  # (the ledger has its receipt already)
        return result

    def _note_uncertain(self, effect: UncertainEffect) -> None:
        from seamkit._durability.ledger import uncertain_warning

        for i, e in enumerate(self.uncertain_effects):
            if e.call_id == effect.call_id:
                old = uncertain_warning(self.ctx.run_id, e)
                if old in self.warnings:
                    self.warnings.remove(old)
                self.uncertain_effects[i] = effect
                break
        else:
            self.uncertain_effects.append(effect)
        self.warnings.append(uncertain_warning(self.ctx.run_id, effect))

    def _waits_for_settlement(self) -> bool:
        return any(e.waits and e.settled is None for e in self.uncertain_effects)

    async def _suspend_for_settlement(self, batch: tuple[ToolResult, ...]) -> bool:
        """Checkpoint the run as ``suspended`` until a person settles the calls of ``batch`` whose
        outcome is unknown; the batch's other results are recorded against that checkpoint, so the
        resumed run reruns only the settled calls. Those calls ran, so any approval they needed was
        given: it is kept for them. ``False`` when the snapshot held a secret."""
        assert self.handle is not None
        waiting = {e.call_id: e for e in self.uncertain_effects if e.waits and e.settled is None}
        self.pending_approvals = ()
        # (approvals of the resuming agent decide whether these are consulted at all)
        self.decisions = {cid: approve(e.arguments) for cid, e in waiting.items()} if self.agent.approvals else None
        saved = await self._save("suspended", stop_reason="suspended", waiting_for="settlement")
        if saved:
            for r in batch:
                if r.call_id not in waiting:
                    await self.handle.record_write(r.call_id, r)
        return saved
