"""``Agent``: a value describing an agent, and its ``run`` / ``stream`` / ``run_sync`` entry points."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from seamkit._agent.controls import gathered_calls
from seamkit._agent.definition import AgentDefinition
from seamkit._agent.loop import Run
from seamkit._agent.result import AgentResult, handoff_chain
from seamkit._agent.task_size import check_task_size, check_text_size
from seamkit._runtime.concurrency import run_sync
from seamkit._runtime.context import RunContext
from seamkit.values import Message, Scope, StreamEvent, TextBlock, Usage

if TYPE_CHECKING:
    from seamkit._agent.kernel import KernelRun
    from seamkit._durability.approvals import Decision
    from seamkit._durability.checkpointer import RunSnapshot
    from seamkit._durability.ledger import UncertainEffect

__all__ = ["Agent", "Task"]


def _turn_id(turn_id: Any) -> str:
    if not isinstance(turn_id, str) or not turn_id.strip() or len(turn_id) > 200:
        raise ValueError(f"turn_id must be non-blank text of at most 200 characters, got {turn_id!r:.80}")
    return turn_id

Task = str | Message | Sequence[Message]

_new_message: Callable[..., Message] = Message.__fast_new__  # type: ignore[attr-defined]
_new_text: Callable[..., TextBlock] = TextBlock.__fast_new__  # type: ignore[attr-defined]


class Agent(AgentDefinition):
    """An agent as a value: build it once, run it many times, concurrently.

    ``model``: the :class:`~seamkit._ports.LLMPort` it talks to. ``prompt``: system prompt (a
    :class:`Prompt` or plain ``str``; ``None`` for none). ``tools``: tools (names must be unique).
    ``output``: ``None``/``str`` for free text, a JSON Schema mapping, a Python type, or an
    :class:`OutputSpec`; validated with one corrective turn. ``middlewares``: wrap every chat and
    tool call, outermost first. ``tool_choice``: for the first model turn (``auto``, ``required``,
    ``none`` or a tool name); with ``reset_tool_choice`` (``True``/``"auto"``) it returns to ``auto``
    after a tool batch so a forced tool cannot loop, with ``"none"`` to ``none`` (the forced call is
    the only one wanted: the next turn answers without tools).
    ``checkpointer``: a :class:`~seamkit._durability.checkpointer.Checkpointer`
    (or a :class:`~seamkit._ports.CheckpointPort`, wrapped in one) makes runs durable: a checkpoint
    after every model turn and tool batch, side-effecting tools through the effect ledger,
    :meth:`resume`. ``approvals``: tool name -> ``never`` / ``every_call`` / ``once_per_run`` /
    ``once_per_thread``; a call that needs approval suspends the run (needs a checkpointer).
    ``max_steps``: model turns before the run stops with stop reason
    ``max_steps``. ``max_parallel_tools``: tool calls of one turn run at most this many at once.
    ``parallel_side_effects``: side-effecting calls of one turn (``ToolSchema.side_effecting``) run
    one after another in the model's order unless this is ``True`` (read-only calls always run
    concurrently, alongside them); results are always in the model's call order.
    ``temperature``, ``max_tokens`` (output tokens), ``seed``: model settings; ``None`` = provider
    default. ``observers`` receive every :class:`~seamkit.values.StreamEvent`.
    ``request_builder``: a :class:`~seamkit._request.RequestBuilder` building each turn's messages
    (a cache-stable prefix with the prompt, grounding and output schema, then the transcript,
    compacted to its budget); the agent's ``prompt`` then moves into the builder (set it on one of
    the two, not both) and the transcript holds no system message. Answers citing sources that
    were never handed to the model add a run warning.
    ``guardrails``: :class:`~seamkit._guardrails.Guard` s (or bare guardrails, acting at every point
    they have a check for) checking the task, each tool call, each tool result and the output (see
    :mod:`seamkit._guardrails`); a block stops the run with
    :class:`~seamkit._guardrails.GuardrailTripped`. With input guards, a durable run's first
    checkpoint is written once the task has passed them (so a redacted task is never stored).
    ``capabilities``: the agent's compiled capabilities (a
    :class:`~seamkit.capabilities.CompiledAgent` from :func:`~seamkit.capabilities.compile_agent`),
    or ``None``. An agent with capabilities runs **turns** (see :mod:`seamkit._agent.kernel`): the
    model proposes intentions, the planner disposes of them, capabilities run under the kernel's
    rules; ``run`` starts a conversation with its first turn and ``resume(run_id, answer=...)``
    takes the next one. It has no tools, output type, guardrails or request builder (the kernel
    writes each request itself). ``capability_policy``: ``policy(capability, input, facts) ->
    reason | None`` refusing intentions (``POLICY_DENIED``). ``capability_ports``: ports (name ->
    object) the capabilities reach the world through, next to the run's services and the
    checkpoint store (``"store"``).
    ``handoffs``: agents this one may hand the conversation to (:class:`~seamkit._agent.handoff.Handoff`
    s, or bare agents: filter ``all``); the model sees a tool ``transfer_to_<name>`` per target, and
    calling it ends this agent's part: the target continues the same run with the transcript
    filtered by the handoff's rule (see :mod:`seamkit._agent.handoff`); ``AgentResult.answered_by``
    says who answered.

    Tool-loop controls (see :mod:`seamkit._agent.controls`): ``max_tool_calls``: tool calls one
    run may make (``None``: no limit); calls past it are not run and their results say so.
    ``max_tool_rounds``: model turns of one run that may call tools (``None``: no limit; below
    ``max_steps``, which stays the hard stop). Once either is reached the model is called again
    with ``tool_choice="none"`` and a note saying the limit was reached, so it answers from what
    it has; the result has ``stopped_early=True`` and ``limit_reached`` naming the limit.
    ``disabled_tools``: names of ``tools`` not offered to the model; a call to one (or to a tool
    it made up) is answered as an unknown tool. A call a person rejects withdraws its tool for
    the rest of the run in the same way. ``mode``: ``answer`` (default) runs until the model
    answers; ``gather`` makes one gathering decision (one model call with tools), runs its calls
    (approvals and guardrails as usual) and returns their results as a context block
    (``output``, text) and as ``result.gathered``, with no answer call; with no tool to offer it
    returns an empty block without calling the model.

    Raises ``TypeError`` when ``capabilities`` is neither ``None`` nor a ``CompiledAgent``
    (``ValueError`` when it is combined with tools, an output type, guardrails or a request builder);
    ``ValueError`` on duplicate tool names (a ``transfer_to_<name>`` tool included), a handoff
    target whose prompt has variables, handoffs on an agent with capabilities, ``max_steps < 1``,
    an unknown approval policy or tool name in ``approvals``, or approvals without a checkpointer;
    for ``max_tool_calls`` or ``max_tool_rounds`` below 1, ``max_tool_rounds >= max_steps``, a
    ``disabled_tools`` name that is no tool of the agent, a ``tool_choice`` naming a disabled tool,
    an unknown ``mode``, and ``gather`` mode with an output type or capabilities.
    """

    def _start(
        self, task: Task, ctx: RunContext | None, history: Sequence[Message], variables: Mapping[str, Any] | None,
        turn_id: str | None = None,
    ) -> Run:
        if self.capabilities is not None:
            return self._start_turn(task, ctx, history, turn_id)  # type: ignore[return-value]
        if turn_id is not None:
            raise ValueError("turn_id is for agents with capabilities")
        transcript: list[Message] = []
        if self.request_builder is not None:
            pass  # the builder writes the prompt into each request's prefix
        elif self._system is not None and not variables:
            transcript.append(self._system)
        else:
            system = self._system_text(variables)
            if system is not None:
                transcript.append(Message.system(system))
        transcript.extend(history)
        if isinstance(task, str):
            # Message.user(task) without its checks (a role it knows, a tuple of blocks: both are)
            transcript.append(_new_message("user", (_new_text(task, "text"),)))
            # a task the model cannot take is refused now: before it is guarded, stored or sent
            check_text_size(task, self.model)
            return self._new_run(ctx, transcript, variables)
        if isinstance(task, Message):
            transcript.append(task)
        elif isinstance(task, (list, tuple)) and task and all(isinstance(m, Message) for m in task):
            transcript.extend(task)
        else:
            raise TypeError(f"task must be a str, a Message or a non-empty list of Messages, got {task!r:.80}")
        # a task the model cannot take is refused now: before it is guarded, stored or sent
        check_task_size(transcript[len(transcript) - (len(task) if isinstance(task, (list, tuple)) else 1):],
                        self.model)
        return self._new_run(ctx, transcript, variables)

    def _new_run(self, ctx: RunContext | None, transcript: list[Message], variables: Mapping[str, Any] | None) -> Run:
        run = Run(self, ctx if ctx is not None else RunContext(), transcript)
        run.check_input = "input" in self._guards
        if self.request_builder is not None:
            run.working = self.request_builder.context(variables, scope=run.ctx.scope)
        return run

    def _start_turn(self, task: Task, ctx: RunContext | None, history: Sequence[Message],
                    turn_id: str | None) -> KernelRun:
        from seamkit._agent.kernel import KernelRun, new_turn_id

        if not isinstance(task, str):
            raise TypeError(f"the task of an agent with capabilities is the person's text (a str), got {task!r:.80}")
        check_task_size([Message.user(task)], self.model)  # before anything is stored or sent
        transcript: list[Message] = []
        if self._system is not None:
            transcript.append(self._system)
        transcript.extend(history)
        return KernelRun(self, ctx if ctx is not None else RunContext(), transcript, task,
                         _turn_id(turn_id) if turn_id is not None else new_turn_id())

    async def run(
        self,
        task: Task,
        *,
        ctx: RunContext | None = None,
        history: Sequence[Message] = (),
        variables: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        turn_id: str | None = None,
    ) -> AgentResult:
        """Run to completion. ``task``: the user's text or message(s); ``history``: earlier
        messages placed after the system prompt; ``variables``: for the prompt template;
        ``metadata``: JSON scalars stored with the run's checkpoints (e.g. the agent file).

        With a checkpointer the run may also end ``suspended`` (see ``pending_approvals``); a
        value the checkpoint codec cannot encode raises :class:`~seamkit.errors.CodecError`.

        Raises :class:`~seamkit.errors.ProviderError` when the model fails,
        :class:`~seamkit.errors.OutputValidationError` when the output still does not validate after
        the corrective turn, :class:`~seamkit.errors.RunCancelled` when the context is cancelled.

        With capabilities, ``task`` is the person's first message and the run is the conversation's
        first turn (``turn_id``: its id, generated when ``None``); ``result.turn`` holds the
        :class:`~seamkit.capabilities._state.TurnResult`. A ``turn_id`` already committed in the run
        ``ctx.run_id`` (a client retrying the first message) returns that turn's stored result
        (``result.turn.replayed``) with no model or capability call, as :meth:`resume` does.
        """
        if self.capabilities is not None and self.checkpointer is not None and ctx is not None:
            # a run id given may name an existing conversation: a retried first turn, or a mistake
            replayed = await self._committed_turn(ctx.run_id, _turn_id(turn_id) if turn_id is not None else None,
                                                  task)
            if replayed is not None:
                return replayed
        run = self._start(task, ctx, history, variables, turn_id)
        if self.observers:
            run.emit = self._notify
        if self.checkpointer is not None:
            await self._begin_or_defer(run, metadata)
        return await run.drive()

    async def _begin_or_defer(self, run: Run, metadata: Mapping[str, Any] | None) -> None:
        """Write the run's first checkpoint now, or (input guards) once the task passed them."""
        if "input" in self._guards:
            run.begin = partial(self._begin, run, metadata)
        else:
            await self._begin(run, metadata)

    async def _begin(self, run: Run, metadata: Mapping[str, Any] | None) -> None:
        from seamkit._durability.ledger import EffectLedger

        cp = self.checkpointer
        ctx = run.ctx
        meta = {"agent": self.name, **(metadata or {})}
        run.handle = await cp.begin(ctx.run_id, run.state(), run.transcript, parent_run_id=ctx.parent_run_id,
                                    metadata=meta)
        self._attach_ledger(run, EffectLedger)

    def _attach_ledger(self, run: Run, ledger_type: Any) -> None:
        cp = self.checkpointer
        ctx = run.ctx
        if ctx.effects is None or ctx.effects.store is None:
            ctx.effects = ledger_type(cp.store, tenant=ctx.scope.tenant)
        run.ledger = ctx.effects

    async def resume(
        self,
        run_id: str,
        *,
        decisions: Mapping[str, Decision] | None = None,
        allow_finished: bool = False,
        steal: bool = False,
        ctx: RunContext | None = None,
        answer: str | None = None,
        turn_id: str | None = None,
    ) -> AgentResult:
        """Continue ``run_id`` from its latest checkpoint (after a crash, or a suspension for
        approval), in this or any other process using the same store. Usage from before is kept.

        ``decisions``: for a suspended run, call id -> :func:`~seamkit._durability.approvals.approve`
        (optionally with edited arguments) or :func:`~seamkit._durability.approvals.reject`; a
        pending call without a decision is rejected and the model sees the rejection.
        A run suspended because a tool call's outcome is unknown (a crash interrupted it) continues
        once a person has settled each such call (:meth:`settle_effect`); it takes no decisions.
        ``allow_finished``: return a ``done`` run's stored result, or continue a ``failed`` one.
        ``steal``: take over a run whose lease another live worker holds. ``ctx``: services,
        clock and cancellation for the continued run (its run id is replaced by ``run_id``).

        Raises :class:`~seamkit.errors.RunNotResumable` (no checkpointer, unknown run, finished,
        decisions for a run that is not suspended or was already resumed, held by another worker,
        claimed by another worker first, a tool call whose outcome is unknown not settled yet);
        ``ValueError`` for a decision naming no pending call;
        :class:`~seamkit.errors.ToolArgumentError` for edited arguments the tool refuses.

        With capabilities: ``answer`` is the person's next message, taken as the conversation's
        next turn (``turn_id``: its id, generated when ``None``); a ``turn_id`` already committed
        returns that turn's stored result (``result.turn.replayed``) with no model or capability
        call. Without an answer, a turn that was interrupted runs again (same id, same text), and
        with ``allow_finished`` so does a turn that failed (from the state it began with; effects
        it completed come back from the effect ledger), and a finished conversation's last result
        is returned. ``decisions`` do not apply.
        """
        import dataclasses

        if self.capabilities is not None:
            return await self._resume_turn(run_id, answer=answer, turn_id=turn_id, allow_finished=allow_finished,
                                           steal=steal, ctx=ctx, decisions=decisions)
        if answer is not None or turn_id is not None:
            raise ValueError("answer and turn_id are for agents with capabilities; use decisions= for approvals")

        from seamkit._durability.approvals import Decision
        from seamkit._durability.ledger import EffectLedger
        from seamkit.errors import RunNotResumable

        cp = self.checkpointer
        if cp is None:
            raise RunNotResumable(run_id, "this agent has no checkpointer")
        if decisions is not None:
            for call_id, d in decisions.items():
                if not isinstance(d, Decision):
                    raise TypeError(f"the decision for {call_id!r} must be approve(...) or reject(...), got {d!r:.60}")
        snap = await cp.latest(run_id)
        settling = snap is not None and snap.status == "suspended" and snap.state.get("waiting_for") == "settlement"
        if settling:
            assert snap is not None
            self._check_settled(snap.state, run_id, decisions)
        elif snap is not None and snap.status == "suspended":
            pending = [p.call_id for p in snap.state.get("pending_approvals") or ()]
            if not decisions:  # None or {}: a loop passing "no decisions" must not reject by accident
                raise RunNotResumable(
                    run_id, f"it waits for a decision on {', '.join(pending)}: pass decisions= (approve or reject "
                    "per call id; a call without a decision is rejected)"
                )
            self.check_decisions(run_id, snap.state, decisions)
        if snap is not None and snap.state.get("tripwire"):
            # what a guardrail stopped stays stopped: a resume would slip past the input guards and
            # send the model the task they blocked
            raise RunNotResumable(run_id, f"a guardrail stopped it ({snap.state.get('status_detail') or 'tripwire'}); "
                                  "start a new run")
        if snap is not None and isinstance(snap.state.get("not_resumable"), str):
            # ended for good by whoever ran it (an interrupted chat turn: not part of its conversation)
            raise RunNotResumable(run_id, str(snap.state["not_resumable"]))
        if allow_finished and snap is not None and snap.status == "done":
            return self._stored_result(snap)
        handle, snap = await cp.claim(
            run_id, allow_finished=allow_finished, require_suspended=decisions is not None, steal=steal,
            snapshot=snap,
        )
        state = snap.state
        scope = state.get("scope")
        if ctx is None:
            ctx = RunContext(run_id=run_id, parent_run_id=snap.parent_run_id)
        else:
            ctx = dataclasses.replace(ctx, run_id=run_id, parent_run_id=snap.parent_run_id)
        if isinstance(scope, Scope):
            ctx.scope = scope
        run = Run(self, ctx, list(snap.transcript))
        run.resumed = True
        run.restore(state, snap.pending)
        run.handle = handle
        self._attach_ledger(run, EffectLedger)
        if self.observers:
            run.emit = self._notify
        if snap.status == "suspended" and not settling:
            run.decisions = dict(decisions or {})
            await run._save("running")
        return await run.drive()

    async def _committed_turn(self, run_id: str, turn_id: str | None, task: Any) -> AgentResult | None:
        """The stored result of ``run_id``'s committed turn ``turn_id``, flagged replayed; ``None``
        when the run is not there. Raises :class:`~seamkit.errors.RunNotResumable` when the run
        exists but the turn is not one of its committed turns (the next turn is a ``resume``), or
        ``task`` is not the message the turn answered."""
        from seamkit._agent.kernel import replayed_result, stored_turn

        assert self.checkpointer is not None
        snap = await self.checkpointer.latest(run_id)
        if snap is None:
            return None
        state = snap.state
        scope = state.get("scope") if isinstance(state.get("scope"), Scope) else Scope()
        stored = await stored_turn(self, run_id, state, scope, turn_id) if turn_id is not None else None
        if stored is None:
            from seamkit.errors import RunNotResumable

            which = f"turn {turn_id} is not one of its committed turns" if turn_id is not None else "run() starts one"
            raise RunNotResumable(run_id, f"the conversation exists and {which}: take the next turn with "
                                  "resume(run_id, answer=..., turn_id=...)")
        return replayed_result(stored, run_id, snap.parent_run_id, snap.transcript, state,
                               task if isinstance(task, str) else None)

    async def _resume_turn(self, run_id: str, *, answer: str | None, turn_id: str | None, allow_finished: bool,
                           steal: bool, ctx: RunContext | None, decisions: Any) -> AgentResult:
        """:meth:`resume` for an agent with capabilities: the next turn, a replay, or the interrupted turn."""
        import dataclasses

        from seamkit._agent.kernel import KernelRun, kernel_state, new_turn_id, replayed_result, stored_turn
        from seamkit._durability.ledger import EffectLedger
        from seamkit.errors import RunNotResumable

        if decisions:
            raise RunNotResumable(run_id, "an agent with capabilities takes the person's answer (answer=), "
                                  "not tool call decisions")
        cp = self.checkpointer
        if cp is None:
            raise RunNotResumable(run_id, "this agent has no checkpointer")
        if answer is not None and (not isinstance(answer, str) or not answer.strip()):
            raise ValueError("answer must be the person's non-blank text")
        snap = await cp.latest(run_id)
        if snap is None:
            raise RunNotResumable(run_id, "no checkpoints for this run id")
        state = snap.state
        found = kernel_state(state)
        if found is None:
            raise RunNotResumable(run_id, "it is not a conversation with capabilities (no kernel state)")
        ks, texts = found
        scope = state.get("scope") if isinstance(state.get("scope"), Scope) else Scope()
        if turn_id is not None:
            turn_id = _turn_id(turn_id)
            stored = await stored_turn(self, run_id, state, scope, turn_id)
            if stored is not None:
                return replayed_result(stored, run_id, snap.parent_run_id, snap.transcript, state, answer)
        # an interrupted turn runs again; so does a failed one, with allow_finished, once its cause is fixed
        interrupted = ks.turn is not None and (snap.status == "running" or (
            snap.status == "failed" and allow_finished and answer is None))
        if answer is None and not interrupted:
            if snap.status == "done" and allow_finished:
                return self._stored_result(snap)
            what = ("waits for the person's answer" if snap.status == "suspended"
                    else f"is {snap.status}")
            raise RunNotResumable(run_id, f"it {what}: pass answer= (seamkit resume RUN --answer TEXT) to take the "
                                  "next turn")
        if interrupted and answer is not None:
            raise RunNotResumable(run_id, f"turn {ks.turn[0] if ks.turn else '?'} was interrupted: resume it without "
                                  "an answer first")
        if ctx is None:
            ctx = RunContext(run_id=run_id, parent_run_id=snap.parent_run_id)
        else:
            ctx = dataclasses.replace(ctx, run_id=run_id, parent_run_id=snap.parent_run_id)
        ctx.scope = scope
        transcript = list(snap.transcript)
        if interrupted:
            assert ks.turn is not None
            run = KernelRun(self, ctx, transcript, ks.turn[1], ks.turn[0], ks, message_logged=True)
        else:
            assert answer is not None
            run = KernelRun(self, ctx, transcript, answer, turn_id if turn_id is not None else new_turn_id(), ks)
        run.resumed = True
        run.restore(state)
        run.adopt(texts)
        # the claiming save writes the turn's first state (its id and text, the person's message)
        handle, snap = await cp.claim(run_id, allow_finished=True, steal=steal, snapshot=snap,
                                      state=run.state(), transcript=run.transcript)
        run.handle = handle
        self._attach_ledger(run, EffectLedger)  # type: ignore[arg-type]
        if self.observers:
            run.emit = self._notify
        return await run.drive()

    @staticmethod
    def _check_settled(state: Mapping[str, Any], run_id: str, decisions: Mapping[str, Decision] | None) -> None:
        from seamkit._durability.ledger import UncertainEffect
        from seamkit.errors import RunNotResumable

        if decisions:
            raise RunNotResumable(run_id, "it waits for a person to settle a tool call whose outcome is unknown, "
                                  "not for approval: decisions do not apply")
        effects = [e for e in state.get("uncertain_effects") or () if isinstance(e, UncertainEffect)]
        open_ = [e.call_id for e in effects if e.waits and e.settled is None]
        if open_:
            # no command line here: how the store is reached is the caller's to say (the CLI prints
            # runnable settle commands itself)
            raise RunNotResumable(
                run_id, f"the outcome of tool call{'s' if len(open_) != 1 else ''} {', '.join(open_)} is unknown: "
                f"check the outside system, then settle {'each' if len(open_) != 1 else 'it'} as applied or not "
                "applied (Agent.settle_effect, or seamkit runs settle)"
            )

    async def settle_effect(
        self, run_id: str, call_id: str, *, applied: bool, result: str | None = None
    ) -> UncertainEffect:
        """Settle a tool call of ``run_id`` whose outcome is unknown: ``applied=True`` (the model is
        told it was applied, with ``result`` when given) or ``False`` (the call runs again when the
        run resumes). A call a killed process left running can be settled before any resume
        (:meth:`~seamkit._durability.checkpointer.Checkpointer.interrupted_effects` lists those). See
        :meth:`~seamkit._durability.checkpointer.Checkpointer.settle_effect` for what is recorded and
        raised; :class:`~seamkit.errors.RunNotResumable` also when this agent has no checkpointer."""
        from seamkit.errors import RunNotResumable

        if self.checkpointer is None:
            raise RunNotResumable(run_id, "this agent has no checkpointer")
        cp = self.checkpointer
        settled: UncertainEffect = await cp.settle_effect(run_id, call_id, applied=applied, result=result)
        return settled

    def check_decisions(self, run_id: str, state: Mapping[str, Any], decisions: Mapping[str, Decision]) -> None:
        """Check ``decisions`` for the suspended run ``run_id`` whose latest checkpoint's state is
        ``state`` (:attr:`~seamkit._durability.checkpointer.RunSnapshot.state`), as :meth:`resume`
        does before it changes anything, so a caller that only hands them on (a queued
        continuation) can refuse bad ones first: each decision names a pending call, an approved
        call's tool is one the agent holding the conversation (this one or a handoff target) has,
        and edited arguments pass that tool's parameter schema.

        :raises ValueError: a decision for no pending call, or an approval of a tool the holder
            does not have.
        :raises ~seamkit.errors.ToolArgumentError: edited arguments the tool's schema refuses.
        :raises ~seamkit.errors.RunNotResumable: the conversation is held by an agent that is not
            reachable from this one.
        """
        self._holder(run_id, state)._check_decisions(state, decisions)

    def _stored_result(self, snap: RunSnapshot) -> AgentResult:
        st = snap.state
        usage = st.get("usage")
        return AgentResult(
            st.get("output"),
            snap.transcript,
            usage if isinstance(usage, Usage) else Usage(),
            st.get("stop_reason") or "completed",
            snap.run_id,
            snap.parent_run_id,
            int(st.get("step", 0)),
            tuple(st.get("warnings") or ()),
            (),
            tuple(e for e in st.get("uncertain_effects") or () if getattr(e, "settled", "") is None),
            answered_by=str(st.get("agent") or self.name),
            handoffs=handoff_chain(st.get("handoffs") or ()),
            stopped_early=st.get("limit_reached") is not None,
            limit_reached=st.get("limit_reached"),
            gathered=gathered_calls(snap.transcript) if self.mode == "gather" else (),
        )

    def _notify(self, event: StreamEvent) -> None:
        for o in self.observers:
            o.on_event(event)

    async def stream(
        self,
        task: Task,
        *,
        ctx: RunContext | None = None,
        history: Sequence[Message] = (),
        variables: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        turn_id: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Run, yielding :class:`~seamkit.values.StreamEvent` as they happen; the last event is
        ``run_finished`` with the :class:`AgentResult` in ``data["result"]``. Raises what
        :meth:`run` raises. Closing the iterator early cancels the run."""
        import asyncio

        run = self._start(task, ctx, history, variables, turn_id)
        queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
        observers = self.observers

        def emit(event: StreamEvent) -> None:
            queue.put_nowait(event)
            for o in observers:
                o.on_event(event)

        run.emit = emit

        async def drive() -> AgentResult:
            try:
                if self.checkpointer is not None:
                    await self._begin_or_defer(run, metadata)
                return await run.drive()
            finally:
                queue.put_nowait(None)

        task_ = asyncio.ensure_future(drive())
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
            await task_
        finally:
            if not task_.done():
                task_.cancel()
                try:
                    await task_
                except (asyncio.CancelledError, Exception):
                    pass

    def run_sync(
        self,
        task: Task,
        *,
        ctx: RunContext | None = None,
        history: Sequence[Message] = (),
        variables: Mapping[str, Any] | None = None,
    ) -> AgentResult:
        """:meth:`run` from synchronous code (works inside a running event loop too)."""
        return run_sync(self.run(task, ctx=ctx, history=history, variables=variables))
