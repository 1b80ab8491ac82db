"""One turn of an agent with capabilities: the model proposes intentions, the planner disposes of
them, the capabilities run under the kernel's rules, the reducer updates what is known.

A conversation with capabilities is a durable run (its run id is the conversation id); each
person's message is a **turn**, with a ``turn_id`` (given by the caller for idempotent retries, or
generated). A turn:

1. **Replay.** A committed turn id returns its stored :class:`~seamkit.capabilities._state.TurnResult`
   (``replayed=True``) with no model or capability call.
2. **Confirmation.** When a confirmation is open, the message answers it: a plain yes or no
   (``yes``, ``ok``, ``go ahead`` / ``no``, ``cancel``...). Consent is the person's own word: the
   model's ``confirmation`` field may decline (its reading of "never mind"), never confirm, so a
   message that is not a plain yes ("maybe", a question) leaves the confirmation open. Yes runs
   each waiting write once, with the input stored on the agenda (a re-proposal of
   the same capability in that turn is merged into it, not run again); no records
   ``CONFIRMATION_DECLINED`` and clears the agenda item and the interaction, and the capabilities
   on the agenda waiting for a fact it would have provided (``DEPENDENCY_NOT_COMPLETED``).
3. **Steps.** The model writes a proposal (:mod:`seamkit.capabilities._planner`); the planner
   disposes of each intention; executable ones run: providers before consumers, reads that do not
   depend on each other concurrently, writes one after another, capabilities that invalidate facts
   after the others they do not depend on (so a fact derived in the step from an invalidated one
   goes with it; one whose required fact was removed in the step is skipped,
   ``DEPENDENCY_NOT_COMPLETED``). A capability whose in-step
   provider failed is skipped with ``DEPENDENCY_NOT_COMPLETED``, one whose provider is pending (a
   confirmation, an input, a dependency) with ``DEPENDENCY_PENDING``. A ``NeedsDependency`` runs its
   provider in the same turn and resumes the capability with the fact (or puts it on the agenda
   until the fact arrives). A write with confirmation ``required`` (or one returning
   ``NeedsConfirmation``) is not run: an agenda item and a confirmation interaction are stored.
   When something ran, the model is shown the results and called again (at most the agent's
   ``max_steps`` calls in a turn); its last reply is the turn's reply.
4. **Commit.** The reply's citations are checked against the evidence known; the turn result is
   stored (the checkpoint store's key ``kernel:<run id>:turn:<turn id>``) and the turn id committed
   in the checkpoint with the whole kernel state. The run is ``suspended`` while an interaction is
   open (exit 3 from the CLI: ``seamkit resume RUN --answer TEXT``), else ``done``; either way a
   next turn continues it.

An **interrupted** turn (cancelled, or the process stopped) is checkpointed with the state it
began with; resuming without an answer runs the same turn id again from its start. A write it had
done is not repeated (the effect ledger returns its receipt); one whose effect was in flight is
reported ``EFFECT_UNCERTAIN``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from seamkit._agent.result import AgentResult, StopReason
from seamkit._runtime.context import RunContext
from seamkit.capabilities._executor import effect_key, execute_capability
from seamkit.capabilities._model import (
    Capability,
    CapabilityResult,
    Completed,
    Failed,
    NeedsConfirmation,
    NeedsDependency,
    NeedsInput,
)
from seamkit.capabilities._planner import catalogue, intention_key, parse_proposal, plan, proposal_schema, select
from seamkit.capabilities._reducer import reduce_facts
from seamkit.capabilities._state import (
    AgendaItem,
    Disposition,
    Execution,
    Intention,
    Interaction,
    KernelState,
    TurnResult,
)
from seamkit.errors import KernelError, RunCancelled
from seamkit.values import EMPTY, ChatRequest, FrozenDict, Message, Scope, StreamEvent, Usage, freeze, thaw

if TYPE_CHECKING:
    from seamkit._agent.definition import AgentDefinition
    from seamkit._durability.checkpointer import RunHandle
    from seamkit._durability.ledger import EffectLedger
    from seamkit.capabilities._compiler import CompiledAgent

__all__ = ["KernelRun", "classify_answer", "kernel_state", "new_turn_id", "replayed_result", "stored_turn", "turn_key"]

HISTORY = 8  # earlier messages of the conversation the model sees each step
MAX_DEPTH = 8  # nested NeedsDependency resolutions in one turn
SELECT_LIMIT = 6  # capabilities shown in full when the agent has more
_YES = frozenset({"yes", "y", "yeah", "yep", "yup", "confirm", "confirmed", "ok", "okay", "sure", "approve",
                  "approved", "go ahead", "do it", "proceed", "yes please"})
_NO = frozenset({"no", "n", "nope", "cancel", "decline", "declined", "stop", "abort", "don't", "do not",
                 "no thanks", "no thank you"})
# the words that may follow a leading yes / no in a plain answer ("yes, go ahead", "no, cancel it");
# any other word ("no problem", "no wait, yes") makes the answer the model's to read
_YES_REST = frozenset({"please", "thanks", "thank", "you", "go", "ahead", "do", "it", "that", "now", "sure", "ok",
                       "okay", "yes", "yeah", "yep", "confirm", "confirmed", "proceed", "approve", "approved"})
_NO_REST = frozenset({"please", "thanks", "thank", "you", "it", "that", "no", "nope", "not", "don't", "cancel",
                      "decline", "stop", "abort"})
_PUNCT = re.compile(r"[^\w\s']+")
_WAITING = ("awaiting_confirmation", "needs_input", "awaiting_dependency")

INSTRUCTIONS = (
    "You act only through the capabilities below. Answer with one JSON object: \"intentions\": the "
    "capabilities to run now, each {\"capability\": id, \"input\": {...}} (add \"alternatives\": [ids] only "
    "when unsure which one is meant); \"select\": ids of capabilities to see in full first; \"reply\": your "
    "answer to the person, citing evidence ids in brackets like [s1a2b3c]. Writes run only after the person "
    "confirms."
)


def new_turn_id() -> str:
    """A fresh turn id (``t`` + 12 hex digits)."""
    return "t" + uuid.uuid4().hex[:12]


def turn_key(run_id: str, turn_id: str) -> str:
    """The store key of a committed turn's result."""
    return f"kernel:{run_id}:turn:{turn_id}"


def classify_answer(text: str) -> str | None:
    """``"yes"`` / ``"no"`` when ``text`` is a plain yes or no (a few words: a yes or no, then
    only polite or same-meaning words: ``"Yes, go ahead."``, ``"no, cancel it"``), else ``None``
    (then the model reads the message: ``"No problem"`` is not a no; ``"yes?"`` is a question,
    not consent)."""
    if "?" in text or "\uff1f" in text:
        return None
    words = _PUNCT.sub(" ", text.lower()).split()
    if not words or len(words) > 4:
        return None
    for lead in (2, 1):
        head, rest = " ".join(words[:lead]), words[lead:]
        if head in _YES and all(w in _YES_REST for w in rest):
            return "yes"
        if head in _NO and all(w in _NO_REST for w in rest):
            return "no"
    return None


def kernel_state(state: Mapping[str, Any]) -> tuple[KernelState, dict[int, tuple[Any, str]]] | None:
    """The :class:`~seamkit.capabilities._state.KernelState` of a checkpointed run's ``state`` (facts
    and evidence decoded from their texts; ``None`` when the run is not a conversation with
    capabilities), and the texts by value id, for :meth:`KernelRun.adopt`. Raises
    :class:`~seamkit.errors.CodecError` for a text that does not decode."""
    from seamkit._durability import codec

    ks = state.get("kernel")
    if not isinstance(ks, KernelState):
        return None
    texts: dict[int, tuple[Any, str]] = {}

    def decoded(stored: Any) -> FrozenDict:
        out = {}
        for key, text in (stored or {}).items():
            value = codec.loads_frozen(text)  # facts and evidence are frozen values
            texts[id(value)] = (value, text)
            out[key] = value
        return FrozenDict(out)

    facts, evidence = decoded(state.get("kernel_facts")), decoded(state.get("kernel_evidence"))
    return dataclasses.replace(ks, facts=facts, evidence=evidence), texts


async def stored_turn(agent: AgentDefinition, run_id: str, state: Mapping[str, Any], scope: Scope,
                      turn_id: str) -> TurnResult | None:
    """The stored result of the committed turn ``turn_id`` of ``run_id`` (``None`` when not committed)."""
    ks = state.get("kernel")
    if not isinstance(ks, KernelState) or turn_id not in ks.turns:
        return None
    inline = state.get("kernel_turns")
    if isinstance(inline, Mapping) and turn_id in inline:
        found = inline[turn_id]
        return found if isinstance(found, TurnResult) else None
    cp = agent.checkpointer
    store = cp.store if cp is not None else None
    if store is None:
        return None
    from seamkit._durability import codec

    text = await store.get(scope, turn_key(run_id, turn_id))
    if not isinstance(text, str):
        return None
    value = codec.loads(text)
    return value if isinstance(value, TurnResult) else None


def _dumps(value: Any) -> str:
    return json.dumps(thaw(value), ensure_ascii=False, separators=(",", ":"), default=str)


def _short(value: Any, limit: int = 300) -> str:
    text = _dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class KernelRun:
    """One turn of a conversation with capabilities (see the module doc); the same surface as
    :class:`~seamkit._agent.loop.Run` for :class:`~seamkit._agent.agent.Agent` (``drive``,
    ``state``, ``emit``, ``handle``)."""

    __slots__ = (
        "added",
        "agent",
        "begin",
        "compiled",
        "ctx",
        "dispositions",
        "emit",
        "evidence",
        "executions",
        "facts",
        "handle",
        "kernel",
        "ledger",
        "proposed",
        "removed",
        "resumed",
        "settled",
        "start",
        "step",
        "steps_before",
        "text",
        "texts",
        "transcript",
        "turn_evidence",
        "turn_id",
        "turn_results",
        "turn_usage",
        "usage",
        "warnings",
    )

    def __init__(self, agent: AgentDefinition, ctx: RunContext, transcript: list[Message], text: str, turn_id: str,
                 kernel: KernelState | None = None, *, message_logged: bool = False) -> None:
        compiled = agent.capabilities
        assert compiled is not None
        self.agent = agent
        self.compiled: CompiledAgent = compiled
        self.ctx = ctx
        self.transcript = transcript
        self.text = text
        self.turn_id = turn_id
        self.resumed = False  # a later turn, or one run again (Agent.resume)
        ks = kernel if kernel is not None else KernelState()
        # questions of the last turn are answered by this message; confirmations stay until answered
        ks = dataclasses.replace(ks, turn=(turn_id, text),
                                 interactions=tuple(i for i in ks.interactions if i.kind == "confirmation"))
        self.kernel = ks
        # what an interrupted turn is run again from: the state before any of its work
        self.start = ks
        if not message_logged:
            transcript.append(Message.user(text))
        self.facts: dict[str, Any] = dict(ks.facts)
        self.evidence: dict[str, Any] = dict(ks.evidence)
        self.usage = Usage()
        self.turn_usage = Usage()
        self.step = 0
        self.steps_before = 0  # model calls of the conversation before this turn
        self.emit: Callable[[StreamEvent], None] | None = None
        self.warnings: list[str] = []
        self.handle: RunHandle | None = None
        self.ledger: EffectLedger | None = None
        self.begin: Any = None
        self.dispositions: list[Disposition] = []
        self.executions: list[Execution] = []
        self.added: dict[str, None] = {}
        self.removed: dict[str, None] = {}
        self.texts: dict[int, tuple[Any, str]] = {}  # id(fact or evidence) -> (it, its codec text)
        self.turn_evidence: set[str] = set()  # evidence ids of this turn's results
        self.proposed: set[tuple[str, str]] = set()  # intentions executed this turn (intention_key)
        self.settled: dict[str, str] = {}  # capability id -> "yes" / "no": confirmations answered this turn
        self.turn_results: dict[str, TurnResult] = {}  # committed turns, when there is no store for them

    # -- durable state ------------------------------------------------------------------------

    def state(self, *, kernel: KernelState | None = None, **extra: Any) -> dict[str, Any]:
        """The run's state as checkpointed (read it back with :func:`kernel_state`): the kernel
        state under ``"kernel"`` without its facts and evidence, which are under
        ``"kernel_facts"`` / ``"kernel_evidence"``, each one's codec text (encoded once, when it
        is new: the checkpoint of a turn does not encode again what earlier turns established).
        ``kernel``: that kernel state (with its own facts and evidence) instead of the turn's
        current one."""
        ks = kernel if kernel is not None else self.kernel
        facts = ks.facts if kernel is not None else self.facts
        evidence = ks.evidence if kernel is not None else self.evidence
        s: dict[str, Any] = {"agent": self.agent.name, "step": self.step, "usage": self.usage,
                             "warnings": list(self.warnings), "scope": self.ctx.scope,
                             "kernel": dataclasses.replace(ks, facts=EMPTY, evidence=EMPTY),
                             "kernel_facts": {k: self._text(f) for k, f in facts.items()},
                             "kernel_evidence": {k: self._text(e) for k, e in evidence.items()}}
        if self.turn_results:
            s["kernel_turns"] = dict(self.turn_results)
        if ks.interactions and ks.turn is None:  # a turn in progress (or interrupted) asks nothing yet
            s["waiting_for"] = "interaction"
            s["status_detail"] = "waiting for the person: " + "; ".join(i.prompt for i in ks.interactions)
        s.update(extra)
        return s

    def _text(self, value: Any) -> str:
        """The codec text of a fact or evidence value, encoded once per value object."""
        known = self.texts.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        from seamkit._durability import codec

        text = codec.dumps(value)
        self.texts[id(value)] = (value, text)
        return text

    def adopt(self, texts: Mapping[int, tuple[Any, str]]) -> None:
        """Reuse the texts the facts and evidence were decoded from (see :func:`kernel_state`)."""
        self.texts.update(texts)

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue the counters of a checkpointed conversation (usage, steps, warnings, inline turns)."""
        usage = state.get("usage")
        self.usage = usage if isinstance(usage, Usage) else Usage()
        self.step = self.steps_before = int(state.get("step", 0))
        self.warnings = list(state.get("warnings") or ())
        inline = state.get("kernel_turns")
        if isinstance(inline, Mapping):
            self.turn_results = {k: v for k, v in inline.items() if isinstance(v, TurnResult)}

    async def _save(self, status: str, **extra: Any) -> None:
        if self.handle is not None:
            saved = await self.handle.save(status, self.state(**extra), self.transcript)
            if not saved:
                why = self.handle.skipped[-1] if self.handle.skipped else "it held a secret"
                if why not in self.warnings:
                    self.warnings.append(why)

    def _event(self, kind: str, **fields: Any) -> None:
        if self.emit is not None:
            self.emit(StreamEvent(kind, self.ctx.run_id, self.step, **fields))  # type: ignore[arg-type]

    # -- the turn -----------------------------------------------------------------------------

    async def drive(self) -> AgentResult:
        """Run the turn. On an exception the checkpoint is marked ``failed`` and the exception
        propagates; an interruption (``RunCancelled``, task cancellation, ``KeyboardInterrupt``)
        leaves it ``running`` with the kernel state the turn began with, so a plain resume runs the
        same turn again from its start (its effects done before are returned by the ledger, not
        repeated). Middlewares wrapping runs (``invoker.run_middlewares``) wrap the turn."""
        middlewares = self.agent.invoker.run_middlewares
        if not middlewares:
            return await self._drive_turn()
        from seamkit._agent.run_call import drive_through

        return await drive_through(middlewares, self.agent, self.ctx, self.transcript, self._drive_turn,
                                   resumed=self.resumed)

    async def _drive_turn(self) -> AgentResult:
        try:
            return await self._drive()
        except BaseException as exc:
            if self.handle is not None:
                why = f"{type(exc).__name__}: {exc}"[:2000]
                # the turn is run again from its start, not from where it stopped: a partial state
                # would have lost the agenda item of a confirmed write in flight and what the turn
                # did before (its executions, the facts they added). Effects done before are not
                # repeated: the ledger returns them. An effect found uncertain stays settleable.
                start = dataclasses.replace(self.start, uncertain=self.kernel.uncertain)
                try:
                    if isinstance(exc, (RunCancelled, KeyboardInterrupt, asyncio.CancelledError)):
                        await self.handle.save("running", self.state(kernel=start, interrupted=why),
                                               self.transcript, lease=False)
                    else:  # resume(allow_finished=True) runs it again once the cause is fixed
                        await self._save("failed", kernel=start, error=why)
                except BaseException:
                    pass
            raise

    async def _drive(self) -> AgentResult:
        self._event("run_started", data=FrozenDict(agent=self.agent.name, turn_id=self.turn_id))
        confirming = [i for i in self.kernel.interactions if i.kind == "confirmation"]
        decision = classify_answer(self.text) if confirming else None
        if confirming and decision is not None:
            await self._settle(confirming, decision)
            confirming = []
        agenda_caps = [a.capability.split("@")[0] for a in self.kernel.agenda]
        selected = select(self.compiled, self.text, agenda=agenda_caps, limit=SELECT_LIMIT)
        # what a yes ran before the first model call: the model replies knowing it
        steps: list[Message] = [Message.user(self._results_text(0))] if self.executions else []
        reply = ""
        cancellation = self.ctx.cancellation
        corrected = False  # the model was told, once, of a step in which nothing ran
        for n in range(self.agent.max_steps):
            cancellation.raise_if_cancelled()
            proposal_text = await self._model_step(selected, steps, confirming=bool(confirming))
            proposal = parse_proposal(proposal_text)
            reply = proposal.reply
            if proposal.problem is not None and proposal.problem not in self.warnings:
                self.warnings.append(proposal.problem)
            ran = len(self.executions)
            if confirming and proposal.confirmation == "no":  # the model may decline, never consent
                await self._settle(confirming, "no")
                confirming = []
            wanted = [s for s in proposal.select if s not in selected and self.compiled.get(s) is not None]
            # asked for alongside intentions too: shown in full from the next step on
            selected = tuple(c for c in self.compiled.order if c in selected or c in wanted)
            if wanted and not proposal.intentions and n + 1 < self.agent.max_steps:
                steps += [Message.assistant(proposal_text),
                          Message.user("Shown in full now: " + ", ".join(wanted) + ". Propose again.")]
                continue
            dispositions = self._dispose(proposal.intentions, proposal.malformed)
            await self._execute([d.intention for d in dispositions if d.action == "execute"
                                 and d.intention.capability not in self.settled])
            if len(self.executions) == ran:
                # nothing ran: the reply was written before the planner's decisions; once per turn the
                # model is told them (it may correct an input, or ask the person what is missing)
                refused = [d for d in dispositions if d.action != "execute"
                           and d.code not in ("DUPLICATE_INTENTION", "CONFIRMATION_DECLINED")]
                if refused and not corrected and n + 1 >= self.agent.max_steps:
                    note = (f"the turn reached max_steps ({self.agent.max_steps}) model calls before the model "
                            "could correct what the planner refused")
                    if note not in self.warnings:
                        self.warnings.append(note)
                if not refused or corrected or n + 1 >= self.agent.max_steps:
                    break
                corrected = True
            steps += [Message.assistant(proposal_text), Message.user(self._results_text(ran, dispositions))]
        else:
            note = f"the turn reached max_steps ({self.agent.max_steps}) model calls"
            if note not in self.warnings:
                self.warnings.append(note)
        return await self._commit(reply)

    async def _model_step(self, selected: Sequence[str], steps: list[Message], *, confirming: bool) -> str:
        agent = self.agent
        messages = [Message.system(self._system_text(selected, confirming)), *self._history(), *steps]
        request = ChatRequest(
            tuple(messages), (), "none", freeze(proposal_schema(self.compiled, selected, confirming=confirming)),
            agent.temperature, agent.max_tokens, agent.seed, (), agent.model_extra,
        )
        self.step += 1
        result = await agent.invoker.chat(request, self.ctx, FrozenDict(step=self.step, agent=agent.name))
        self.usage = self.usage + result.usage
        self.turn_usage = self.turn_usage + result.usage
        for w in result.warnings:
            if w not in self.warnings:
                self.warnings.append(w)
        self._event("model_result", result=result)
        return result.message.text

    def _history(self) -> list[Message]:
        """The conversation so far as the model reads it: the last messages, this turn's last."""
        # walked from the end: a step reads the last few messages, whatever the conversation's length
        last: list[Message] = []
        for m in reversed(self.transcript):
            if m.role in ("user", "assistant"):
                last.append(m)
                if len(last) == HISTORY:
                    break
        last.reverse()
        return last

    def _system_text(self, selected: Sequence[str], confirming: bool) -> str:
        parts = [INSTRUCTIONS]
        parts.append(catalogue(self.compiled, self.facts, selected))
        # the facts the selected capabilities require or provide, and the evidence behind them and
        # behind this turn's results: what the model needs now, however much is known
        relevant = {str(t) for cid in selected for c in (self.compiled.get(cid),) if c is not None
                    for t in (*c.requires, *c.provides)}
        shown = [(key, f) for key, f in self.facts.items() if key in relevant]
        if shown:
            lines = ["Known facts:"]
            for key, f in shown:
                cites = f" [{', '.join(f.evidence)}]" if f.evidence else ""
                lines.append(f"- {key} = {_short(f.value)}{cites}")
            if len(shown) < len(self.facts):
                lines.append(f"({len(self.facts) - len(shown)} other facts known)")
            parts.append("\n".join(lines))
        cited = {eid for _, f in shown for eid in f.evidence} | self.turn_evidence
        evidence = [(eid, self.evidence[eid]) for eid in sorted(cited) if eid in self.evidence]
        if evidence:
            parts.append("Evidence:\n" + "\n".join(f"- [{eid}] {e.source}: {e.excerpt[:200]}" for eid, e in evidence))
        if confirming:
            asked = "; ".join(i.prompt for i in self.kernel.interactions if i.kind == "confirmation")
            parts.append(f"The person was asked to confirm: {asked}. Set \"confirmation\" to no when their message "
                         "declines it, else none (only the person's own plain yes confirms).")
        # the agent's own prompt last, next to the person's message: its examples work best there
        system = self.agent._system
        if system is not None and system.text:
            parts.append(system.text)
        return "\n\n".join(parts)

    def _results_text(self, start: int, dispositions: Sequence[Disposition] = ()) -> str:
        lines = ["Results:"]
        # the intentions of the step that did not run, with why: the model's next reply must not
        # claim them, and it may correct an input or ask the person
        for d in dispositions:
            if d.action != "execute" and d.code is not None:
                lines.append(f"- {d.intention.capability}: not run ({d.action}) {d.code}: {d.message}")
        for e in self.executions[start:]:
            what = e.outcome.replace("_", " ")
            detail = f" {e.code}: {e.message}" if e.code else ""
            out = f"; output {_short(e.output)}" if e.output is not None else ""
            facts = f"; facts {', '.join(e.facts)}" if e.facts else ""
            lines.append(f"- {e.capability}: {what}{detail}{out}{facts}")
        lines.append("Reply to the person now (no intentions unless more is needed).")
        return "\n".join(lines)

    # -- planning -----------------------------------------------------------------------------

    def _dispose(self, intentions: Sequence[Intention], malformed: Sequence[tuple[int, str]]) -> list[Disposition]:
        out: list[Disposition] = [Disposition(Intention("?"), "reject", "INVALID_INTENTION", why)
                                  for _, why in malformed]
        planned = plan(self.compiled, intentions, self.facts, policy=self.agent.capability_policy,
                       earlier=self.proposed)
        for d in planned:
            if d.action == "execute":
                self.proposed.add(intention_key(d.intention))
            answered = self.settled.get(d.intention.capability)
            if answered == "yes" and d.action == "execute":
                d = dataclasses.replace(d, message="confirmed this turn: runs once, from the agenda")
            elif answered == "no" and d.action == "execute":
                d = Disposition(d.intention, "reject", "CONFIRMATION_DECLINED",
                                "the person declined it this turn")
            out.append(d)
        for d in out:
            self.dispositions.append(d)
            self._event("capability", data=FrozenDict(event="planned", disposition=d))
        self._ask(out)
        return out

    def _ask(self, dispositions: Sequence[Disposition]) -> None:
        """One input interaction per missing fact and per capability whose input did not validate;
        one choice per ambiguous intention. A question about a capability that now executes goes."""
        running = {d.intention.capability for d in dispositions if d.action == "execute"}
        if running:
            self.kernel = dataclasses.replace(self.kernel, interactions=tuple(
                i for i in self.kernel.interactions
                if i.kind == "confirmation" or (i.capability or "").split("@")[0] not in running))
        asked = {i.fact for i in self.kernel.interactions if i.kind == "input" and i.fact}
        for d in dispositions:
            if d.action == "clarify" and d.code == "INVALID_CAPABILITY_INPUT":
                self._interact(Interaction("", "input", d.message, capability=d.intention.capability))
                continue
            if d.action == "defer" and d.fact is not None and d.fact not in asked:
                asked.add(d.fact)
                self._interact(Interaction("", "input", f"{d.fact} is needed: {d.message}", fact=d.fact,
                                           capability=d.intention.capability))
            elif d.action == "clarify" and d.options:
                self._interact(Interaction("", "choice", d.message, capability=d.intention.capability,
                                           options=d.options))

    def _next_id(self, prefix: str) -> str:
        serial = self.kernel.serial + 1
        self.kernel = dataclasses.replace(self.kernel, serial=serial)
        return f"{prefix}{serial}"

    def _interact(self, interaction: Interaction) -> Interaction:
        for open_ in self.kernel.interactions:  # the same question asked again (a corrective step) is one
            if dataclasses.replace(open_, id="") == dataclasses.replace(interaction, id=""):
                return open_
        made = dataclasses.replace(interaction, id=self._next_id("i"))
        self.kernel = dataclasses.replace(self.kernel, interactions=(*self.kernel.interactions, made))
        return made

    # -- confirmations ------------------------------------------------------------------------

    async def _settle(self, confirming: Sequence[Interaction], decision: str) -> None:
        """The person answered the open confirmations: yes runs each waiting write once with its
        stored input, no declines it; either way the agenda item and the interaction go."""
        ids = {i.agenda_item for i in confirming}
        items = [a for a in self.kernel.agenda if a.id in ids]
        self.kernel = dataclasses.replace(
            self.kernel, agenda=tuple(a for a in self.kernel.agenda if a.id not in ids),
            interactions=tuple(i for i in self.kernel.interactions if i not in confirming))
        for item in items:
            cid = item.capability.split("@")[0]
            self.settled[cid] = decision
            c = self.compiled.get(cid)
            if decision == "no" or c is None:
                why = "the person declined it" if c is not None else "the capability is no longer registered"
                self._record(Execution(item.capability, item.input, "declined",
                                       "CONFIRMATION_DECLINED" if c is not None else "CAPABILITY_NOT_REGISTERED",
                                       why, reason=f"agenda:{item.id}"))
                if c is not None:
                    self._abandon({str(t) for t in c.provides})
                continue
            await self._run_one(c, item.input, confirmed=True, state=item.state, reason=f"agenda:{item.id}")
        await self._resume_waiting()

    def _abandon(self, facts: set[str]) -> None:
        """The capabilities on the agenda waiting for one of ``facts``, whose provider the person
        declined, leave it (skipped, ``DEPENDENCY_NOT_COMPLETED``); so do, in turn, the ones waiting
        for what those would have provided: nothing stays on the agenda for a fact that will not
        come."""
        while facts:
            gone = [a for a in self.kernel.agenda if a.kind == "dependency" and a.waits_for in facts]
            if not gone:
                return
            ids = {a.id for a in gone}
            self.kernel = dataclasses.replace(self.kernel, agenda=tuple(a for a in self.kernel.agenda
                                                                        if a.id not in ids))
            facts = set()
            for a in gone:
                self._record(Execution(a.capability, a.input, "skipped", "DEPENDENCY_NOT_COMPLETED",
                                       f"{a.capability} was not resumed: its provider of {a.waits_for} was declined",
                                       reason=f"agenda:{a.id}"))
                c = self.compiled.get(a.capability.split("@")[0])
                if c is not None:
                    facts |= {str(t) for t in c.provides}

    async def _resume_waiting(self) -> None:
        """Resume the capabilities on the agenda whose awaited fact is now known."""
        while True:
            ready = [a for a in self.kernel.agenda if a.kind == "dependency" and a.waits_for in self.facts]
            if not ready:
                return
            item = ready[0]
            self.kernel = dataclasses.replace(self.kernel, agenda=tuple(a for a in self.kernel.agenda if a is not item))
            c = self.compiled.get(item.capability.split("@")[0])
            if c is not None:
                await self._run_one(c, item.input, state=item.state, reason=f"resumed:{item.id}")

    # -- execution ----------------------------------------------------------------------------

    def _record(self, execution: Execution) -> None:
        self.executions.append(execution)
        self._event("capability", data=FrozenDict(event="finished", execution=execution))

    async def _execute(self, intentions: Sequence[Intention]) -> None:
        """Run one step's executable intentions: providers first (the compiled order), reads of a
        wave concurrently, writes one after another; skip those whose in-step provider did not
        complete."""
        rank = {cid: i for i, cid in enumerate(self.compiled.order)}
        batch = sorted(((it, self.compiled.get(it.capability)) for it in intentions),
                       key=lambda p: rank[p[1].id] if p[1] is not None else -1)
        providers: dict[str, Intention] = {}
        for it, c in batch:
            assert c is not None
            for t in c.provides:
                providers.setdefault(str(t), it)
        outcome: dict[int, str] = {}  # id(intention) -> "completed" / "failed" / "pending"
        remaining = [(it, c) for it, c in batch if c is not None]
        while remaining:
            ready: list[tuple[Intention, Capability]] = []
            later: list[tuple[Intention, Capability]] = []
            for it, c in remaining:
                upstream = {str(t): providers[str(t)] for t in c.requires
                            if str(t) in providers and providers[str(t)] is not it}
                if any(id(p) not in outcome for p in upstream.values()):
                    later.append((it, c))
                    continue
                failed = [t for t, p in upstream.items() if outcome[id(p)] == "failed" or
                          (outcome[id(p)] == "completed" and t not in self.facts)]
                pending = [t for t, p in upstream.items() if outcome[id(p)] == "pending"]
                missing = [str(t) for t in c.requires if str(t) not in self.facts]
                if failed or (missing and not pending):
                    outcome[id(it)] = "failed"
                    facts = failed or missing
                    self._record(Execution(c.ref, it.input, "skipped", "DEPENDENCY_NOT_COMPLETED",
                                           f"{c.ref} was not run: {', '.join(facts)} did not come", output=None,
                                           facts=()))
                elif pending:
                    outcome[id(it)] = "pending"
                    self._record(Execution(c.ref, it.input, "skipped", "DEPENDENCY_PENDING",
                                           f"{c.ref} waits for {', '.join(pending)}, still pending",
                                           pending=tuple(pending)))
                else:
                    ready.append((it, c))
            if not ready:
                if later and len(later) == len(remaining):  # cannot happen with an acyclic graph
                    raise KernelError("CAPABILITY_DEPENDENCY_CYCLE", tuple(c.ref for _, c in later),
                                      "capabilities wait for each other")
                remaining = later
                continue
            # reads that invalidate nothing run concurrently; then writes, one after another; then the
            # capabilities that invalidate facts, one after another: what the others of the wave read
            # (and derived facts from) is removed after them, with everything depending on it, as
            # if they had run first; a capability whose required fact an earlier one removed is
            # skipped, never run without it
            reads = [(it, c) for it, c in ready if c.effect != "write" and not c.invalidates]
            serial = [(it, c) for it, c in ready if c.effect == "write" and not c.invalidates]
            serial += [(it, c) for it, c in ready if c.invalidates]
            if len(reads) > 1:
                snapshot = FrozenDict(self.facts)
                results = await asyncio.gather(*(self._call(c, it.input, facts=snapshot) for it, c in reads))
                for (it, c), result in zip(reads, results, strict=True):
                    outcome[id(it)] = self._summary(await self._apply(c, it.input, result, confirmed=False))
            else:
                serial = reads + serial
            for it, c in serial:
                outcome[id(it)] = self._summary(await self._run_one(c, it.input))
            remaining = later
        await self._resume_waiting()

    @staticmethod
    def _summary(executions: Sequence[Execution]) -> str:
        last = executions[-1].outcome if executions else "failed"
        return "completed" if last == "completed" else "pending" if last in _WAITING else "failed"

    async def _call(self, c: Capability, arguments: Mapping[str, Any], *, facts: Mapping[str, Any] | None = None,
                    confirmed: bool = False, state: Any = None) -> CapabilityResult:
        ports: dict[str, Any] = {}
        cp = self.agent.checkpointer
        if cp is not None and cp.store is not None:
            ports["store"] = cp.store
        ports.update(self.agent.capability_ports)
        return await execute_capability(self.compiled, c.id, thaw(arguments), ctx=self.ctx,
                                        facts=facts if facts is not None else FrozenDict(self.facts), ports=ports,
                                        confirmed=confirmed, state=state)

    async def _run_one(self, c: Capability, arguments: Mapping[str, Any], *, confirmed: bool = False,
                       state: Any = None, reason: str | None = None, depth: int = 0) -> list[Execution]:
        """Run ``c`` on ``arguments`` under the kernel's rules; the executions it led to (the
        providers of its dependencies first). A capability never runs without the facts it
        requires: one removed since it was planned, confirmed or put on the agenda (or a
        ``NeedsDependency`` provider's own requirement) skips it, ``DEPENDENCY_NOT_COMPLETED``."""
        gone = [str(t) for t in c.requires if str(t) not in self.facts]
        if gone:
            out = Execution(c.ref, arguments, "skipped", "DEPENDENCY_NOT_COMPLETED",
                            f"{c.ref} was not run: {', '.join(gone)} is not known (any more)", confirmed=confirmed,
                            reason=reason)
            self._record(out)
            return [out]
        if c.confirmation == "required" and not confirmed:
            return [self._await_confirmation(c, arguments, f"run {c.id} with {_short(arguments, 200)}", state,
                                             reason)]
        result = await self._call(c, arguments, confirmed=confirmed, state=state)
        return await self._apply(c, arguments, result, confirmed=confirmed, state=state, reason=reason, depth=depth)

    def _await_confirmation(self, c: Capability, arguments: Mapping[str, Any], summary: str, state: Any,
                            reason: str | None) -> Execution:
        frozen = FrozenDict(thaw(arguments)) if not isinstance(arguments, FrozenDict) else arguments
        same = next((a for a in self.kernel.agenda if a.kind == "confirmation" and a.capability == c.ref
                     and a.input == frozen), None)
        if same is None:  # a write re-proposed while waiting keeps its one agenda item
            item = AgendaItem(self._next_id("a"), "confirmation", c.ref, arguments, self.turn_id, summary,
                              state=state)
            self.kernel = dataclasses.replace(self.kernel, agenda=(*self.kernel.agenda, item))
            self._interact(Interaction("", "confirmation", f"confirm: {summary}? (yes/no)", agenda_item=item.id,
                                       capability=c.ref))
            same = item
        execution = Execution(c.ref, arguments, "awaiting_confirmation", "CONFIRMATION_REQUIRED",
                              f"waiting for the person to confirm (agenda item {same.id})", reason=reason)
        self._record(execution)
        return execution

    async def _apply(self, c: Capability, arguments: Mapping[str, Any], result: CapabilityResult, *,
                     confirmed: bool, state: Any = None, reason: str | None = None,
                     depth: int = 0) -> list[Execution]:
        if isinstance(result, Completed):
            try:
                red = reduce_facts(self.facts, c, result)
            except KernelError as exc:
                result = Failed(exc.code, str(exc), exc.ids)
            else:
                self.facts = dict(red.facts)
                for ev in result.evidence:
                    self.evidence[ev.id] = ev
                    self.turn_evidence.add(ev.id)
                for t in (*red.added, *red.replaced):
                    self.added[str(t)] = None
                    self.removed.pop(str(t), None)
                for t in red.removed:
                    self.removed[str(t)] = None
                    self.added.pop(str(t), None)
                out = Execution(c.ref, arguments, "completed", None, "", result.output,
                                tuple(str(t) for t in (*red.added, *red.replaced)),
                                tuple(str(t) for t in red.removed), confirmed, reason)
                self._record(out)
                return [out]
        if isinstance(result, Failed):
            if result.code == "EFFECT_UNCERTAIN" and len(result.ids) > 1:
                # the key a person may settle through this conversation (runs settle checks it)
                key = effect_key(c.id, result.ids[1])
                if key not in self.kernel.uncertain:
                    self.kernel = dataclasses.replace(self.kernel, uncertain=(*self.kernel.uncertain, key))
            out = Execution(c.ref, arguments, "failed", result.code, result.message, confirmed=confirmed, reason=reason)
            self._record(out)
            return [out]
        if isinstance(result, NeedsConfirmation):
            if confirmed:  # asked again after the person said yes: a loop the kernel will not follow
                out = Execution(c.ref, arguments, "failed", "CONFIRMATION_LOOP",
                                f"{c.ref} asked for confirmation again after it was confirmed", reason=reason)
                self._record(out)
                return [out]
            return [self._await_confirmation(c, arguments, result.summary, state, reason)]
        if isinstance(result, NeedsInput):
            self._interact(Interaction("", "input", result.prompt, capability=c.ref, fields=result.fields))
            out = Execution(c.ref, arguments, "needs_input", "INPUT_REQUIRED", result.prompt, reason=reason)
            self._record(out)
            return [out]
        assert isinstance(result, NeedsDependency)
        return await self._depend(c, arguments, result, confirmed=confirmed, reason=reason, depth=depth)

    async def _depend(self, c: Capability, arguments: Mapping[str, Any], need: NeedsDependency, *,
                      confirmed: bool, reason: str | None, depth: int) -> list[Execution]:
        provider = self.compiled.get(need.provider)
        wanted = str(need.requirement)
        why = (f"no capability {need.provider!r}" if provider is None
               else f"{provider.ref} does not provide {wanted}" if need.requirement not in provider.provides
               else f"{c.ref} cannot be its own provider" if provider.id == c.id
               else f"{wanted} is known already (it is in ctx.facts)" if wanted in self.facts
               else f"more than {MAX_DEPTH} nested dependencies" if depth >= MAX_DEPTH
               else None)
        if provider is None or why is not None:
            out = Execution(c.ref, arguments, "failed", "INVALID_DEPENDENCY", f"{c.ref} needs {wanted}: {why}",
                            reason=reason)
            self._record(out)
            return [out]
        policy = self.agent.capability_policy
        code, denied = "POLICY_DENIED", None
        try:
            denied = policy(provider, thaw(need.input), self.facts) if policy is not None else None
        except Exception as exc:  # fails closed, as in the planner
            code, denied = "POLICY_ERROR", f"the policy raised {type(exc).__name__}"
        if denied is not None:  # a provider run for a dependency is planned like one the model proposed
            ran = [Execution(provider.ref, need.input, "failed", code, str(denied), reason=f"dependency:{c.ref}")]
            self._record(ran[0])
        else:
            ran = await self._run_one(provider, need.input, reason=f"dependency:{c.ref}", depth=depth + 1)
        if wanted in self.facts and ran and ran[-1].outcome == "completed":
            return [*ran, *await self._run_one(c, arguments, confirmed=confirmed, state=need.state,
                                               reason=reason, depth=depth + 1)]
        if ran and ran[-1].outcome in _WAITING:
            item = AgendaItem(self._next_id("a"), "dependency", c.ref, arguments, self.turn_id,
                              f"{c.id} waits for {wanted}", waits_for=wanted, state=need.state)
            self.kernel = dataclasses.replace(self.kernel, agenda=(*self.kernel.agenda, item))
            out = Execution(c.ref, arguments, "awaiting_dependency", "DEPENDENCY_PENDING",
                            f"{c.ref} waits for {wanted} (agenda item {item.id})", reason=reason, pending=(wanted,))
        else:
            out = Execution(c.ref, arguments, "skipped", "DEPENDENCY_NOT_COMPLETED",
                            f"{provider.ref} did not establish {wanted}", reason=reason)
        self._record(out)
        return [*ran, out]

    # -- the end of the turn ------------------------------------------------------------------

    async def _commit(self, reply: str) -> AgentResult:
        from seamkit._grounding import find_citations

        unknown = tuple(c for c in find_citations(reply) if c not in self.evidence)
        if unknown:
            why = f"the reply cites evidence that is not known: {', '.join(unknown)}"
            if why not in self.warnings:
                self.warnings.append(why)
        # evidence is kept while a fact rests on it, or while this turn's reply may cite it
        backed = {eid for f in self.facts.values() for eid in f.evidence}
        self.evidence = {k: v for k, v in self.evidence.items() if k in backed or k in self.turn_evidence}
        ks = self.kernel
        turn = TurnResult(
            self.turn_id, reply, tuple(self.dispositions), tuple(self.executions), tuple(self.added),
            tuple(self.removed), ks.interactions, ks.agenda, unknown, False,
            self.step - self.steps_before, self.turn_usage, self.text,
        )
        self.transcript.append(Message.assistant(reply))
        self.kernel = dataclasses.replace(ks, turns=(*ks.turns, self.turn_id), turn=None)
        await self._store_turn(turn)
        reason: StopReason = "suspended" if ks.interactions else "completed"
        await self._save("suspended" if ks.interactions else "done", output=reply, stop_reason=reason)
        if reply:
            self._event("text", text=reply)
        result = self.result(turn, reason)
        self._event("run_finished", data=FrozenDict(stop_reason=reason, result=result))
        return result

    async def _store_turn(self, turn: TurnResult) -> None:
        cp = self.agent.checkpointer
        store = cp.store if cp is not None else None
        if store is None or self.handle is None:
            if self.handle is not None:
                self.turn_results[turn.turn_id] = turn
            return
        from seamkit._durability import codec

        text = codec.dumps(turn)
        why = cp._taint((text,)) if cp is not None else None
        if why is not None:  # the checkpoint holding the same values is skipped too: never stored
            note = f"the result of turn {turn.turn_id} was not stored: {why}"
            if note not in self.warnings:
                self.warnings.append(note)
            return
        # written before the checkpoint that commits the turn id: a crash between the two runs the
        # turn again (its effects are exactly-once through the ledger) and overwrites this
        await store.set(self.ctx.scope, turn_key(self.ctx.run_id, turn.turn_id), text)

    def result(self, turn: TurnResult, reason: StopReason) -> AgentResult:
        """The turn as an :class:`~seamkit._agent.result.AgentResult` (``output``: the reply)."""
        return AgentResult(turn.reply, tuple(self.transcript), self.usage, reason, self.ctx.run_id,
                           self.ctx.parent_run_id, self.step, tuple(self.warnings), turn=turn)


def replayed_result(turn: TurnResult, run_id: str, parent_run_id: str | None, transcript: Sequence[Message],
                    state: Mapping[str, Any], message: str | None = None) -> AgentResult:
    """A committed turn's stored result, flagged ``replayed``. Raises
    :class:`~seamkit.errors.RunNotResumable` when ``message`` (the person's text now) is not the
    one the turn answered: a turn id names one message, as an idempotency key names one request."""
    if message is not None and turn.message and message != turn.message:
        from seamkit.errors import RunNotResumable

        raise RunNotResumable(run_id, f"turn {turn.turn_id} was committed with another message: a turn id names "
                              "one message (give this one a new turn id)")
    usage = state.get("usage")
    reason: StopReason = "suspended" if turn.interactions else "completed"
    return AgentResult(turn.reply, tuple(transcript), usage if isinstance(usage, Usage) else Usage(), reason,
                       run_id, parent_run_id, int(state.get("step", 0)), tuple(state.get("warnings") or ()),
                       turn=dataclasses.replace(turn, replayed=True))

