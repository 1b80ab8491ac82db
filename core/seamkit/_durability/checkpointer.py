"""The ``Checkpointer``: run-level durability semantics over a :class:`~seamkit._ports.CheckpointPort`.

It owns monotonic versions per run, statuses, the worker lease that lets only one process drive a
run, the codec at the seam (state and messages are encoded on save and decoded on load, so
callers never share mutable state with the store), and the refusal to persist secrets.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from seamkit._durability import codec
from seamkit._durability.ledger import (
    INTERRUPTED_REASON,
    EffectLedger,
    UncertainEffect,
    applied_text,
    check_effect_key,
    effect_key,
    effects_detail,
    uncertain_warning,
)
from seamkit._durability.records import (
    FINISHED_STATUSES,
    CheckpointInfo,
    CheckpointRecord,
    PendingWrite,
    StoredCheckpoint,
)
from seamkit._durability.summary import SUMMARY_KEYS, summary_metadata
from seamkit._ports import CheckpointPort, ClockPort, StorePort
from seamkit._runtime.clock import SYSTEM_CLOCK
from seamkit.errors import CheckpointConflict, CodecError, RunNotResumable
from seamkit.values import EMPTY, FrozenDict, Message, Scope, ToolResult, freeze

#: How the effect ledger key of a capability's effect starts (``capability:<capability id>:<key>``,
#: :func:`seamkit.capabilities._executor.effect_key`): :meth:`Checkpointer.settle_effect` takes it
#: where it takes a tool call id.
CAPABILITY_EFFECT_PREFIX = "capability:"

__all__ = ["CAPABILITY_EFFECT_PREFIX", "Checkpointer", "RunHandle", "RunSnapshot", "lease_void", "worker_id"]

log = logging.getLogger("seamkit.checkpoints")

_HOST = socket.gethostname()


def worker_id() -> str:
    """This process as a lease owner: ``host:pid``."""
    return f"{_HOST}:{os.getpid()}"


def _owner_dead(owner: str) -> bool:
    """True when ``owner`` is a process on this host that no longer exists."""
    host, _, pid = owner.rpartition(":")
    if host != _HOST or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def lease_void(metadata: Mapping[str, Any], now: float) -> bool:
    """Whether the lease of a ``running`` checkpoint (its ``metadata``'s ``owner`` and
    ``lease_until``) keeps nobody off the run any more at ``now`` (unix seconds): released (no
    ``lease_until``), expired, or its owner a process on this host that no longer exists."""
    until = metadata.get("lease_until")
    if not isinstance(until, (int, float)) or until - now <= 0:
        return True
    return _owner_dead(str(metadata.get("owner") or ""))


@dataclass(frozen=True, slots=True)
class RunSnapshot:
    """A decoded checkpoint: ``run_id``, ``version``, ``status``, ``parent_run_id``, ``state``
    (the run's state mapping), ``transcript`` (every message up to this version), ``metadata``,
    ``created_at`` (unix seconds) and ``pending`` (decoded results recorded for this version's
    step, by task id: tool call id -> :class:`~seamkit.values.ToolResult`)."""

    run_id: str
    version: int
    status: str
    parent_run_id: str | None
    state: Mapping[str, Any]
    transcript: tuple[Message, ...]
    metadata: FrozenDict
    created_at: float
    pending: Mapping[str, Any] = field(default_factory=dict)


def _decode_stored(stored: StoredCheckpoint, pending: Mapping[str, str]) -> RunSnapshot:
    rec = stored.record
    state = codec.loads(rec.state)
    if not isinstance(state, Mapping):
        raise CodecError("$", f"checkpoint state of run {rec.run_id!r} v{rec.version} is not a mapping")
    transcript = []
    for i, entry in enumerate(stored.log):
        try:
            m = codec.loads_frozen(entry)  # messages are frozen: a resumed run shares the ones decoded before
        except CodecError as exc:
            raise CodecError(f"$.transcript[{i}]{exc.path[1:]}", exc.reason) from None
        if not isinstance(m, Message):
            raise CodecError(f"$.transcript[{i}]", f"expected a Message, got {type(m).__name__}")
        transcript.append(m)
    return RunSnapshot(
        rec.run_id,
        rec.version,
        rec.status,
        rec.parent_run_id,
        state,
        tuple(transcript),
        rec.metadata,
        rec.created_at,
        {k: codec.loads(v) for k, v in pending.items()},
    )


class Checkpointer:
    """Durable runs over ``port``.

    ``secrets``: strings that must never be persisted; a snapshot whose encoded form contains one
    (4+ characters) is skipped, logged and recorded in :attr:`RunHandle.skipped`, never written.
    ``lease_s``: how long (seconds) a running checkpoint keeps other workers from resuming the run
    (renewed on every save; a lease whose owner process on this host has died is void).
    ``store``: the :class:`~seamkit._ports.StorePort` for effect receipts and per-thread approvals;
    defaults to ``port`` when it is one.
    """

    __slots__ = ("clock", "lease_s", "owner", "port", "secrets", "store")

    def __init__(
        self,
        port: CheckpointPort,
        *,
        secrets: Iterable[str] = (),
        lease_s: float = 60.0,
        clock: ClockPort = SYSTEM_CLOCK,
        store: StorePort | None = None,
        owner: str | None = None,
    ) -> None:
        if not isinstance(port, CheckpointPort):
            from seamkit._plugins.ports_check import port_problems

            problems = "; ".join(port_problems(port, CheckpointPort))
            raise TypeError(f"port must implement CheckpointPort, got {type(port).__name__}: {problems}")
        self.port = port
        self.secrets = tuple(s for s in secrets if isinstance(s, str) and len(s) >= 4)
        self.lease_s = float(lease_s)
        self.clock = clock
        self.store = store if store is not None else (port if isinstance(port, StorePort) else None)
        self.owner = owner or worker_id()

    def __repr__(self) -> str:
        return f"Checkpointer(port={type(self.port).__name__}, lease_s={self.lease_s})"

    async def aclose(self) -> None:
        """Release the store's connections (the store reconnects if used again)."""
        await self.port.aclose()
        if self.store is not None and self.store is not self.port:  # type: ignore[comparison-overlap]
            await self.store.aclose()

    def _now(self) -> float:
        return self.clock.now().timestamp()

    def _taint(self, texts: Iterable[str]) -> str | None:
        for t in texts:
            for s in self.secrets:
                if s in t:
                    return "the state contains a secret value (an environment value of the composition)"
        return None

    async def begin(
        self,
        run_id: str,
        state: Mapping[str, Any],
        messages: Sequence[Message],
        *,
        parent_run_id: str | None = None,
        metadata: Mapping[str, Any] = EMPTY,
    ) -> RunHandle:
        """Start a run's checkpoints: version 1 with status ``running``. Raises
        :class:`~seamkit.errors.CodecError` (naming the path) when the state cannot be encoded and
        :class:`~seamkit.errors.CheckpointConflict` when ``run_id`` already has checkpoints."""
        handle = RunHandle(self, run_id, parent_run_id, 0, freeze(dict(metadata)))
        await handle.save("running", state, messages)
        return handle

    async def latest(self, run_id: str) -> RunSnapshot | None:
        """The run's latest checkpoint decoded (with its pending writes), or ``None``."""
        stored = await self.port.latest(run_id)
        if stored is None:
            return None
        pending = await self.port.pending_writes(run_id, stored.record.version)
        return _decode_stored(stored, pending)

    async def at_version(self, run_id: str, version: int) -> RunSnapshot | None:
        """The run as it was at ``version`` (time travel), or ``None`` (unknown or pruned)."""
        stored = await self.port.at_version(run_id, version)
        if stored is None:
            return None
        pending = await self.port.pending_writes(run_id, version)
        return _decode_stored(stored, pending)

    async def history(self, run_id: str) -> Sequence[CheckpointInfo]:
        """Every stored version's header, oldest first."""
        return await self.port.list_versions(run_id)

    async def list_runs(
        self, *, status: str | None = None, parent_run_id: str | None = None, limit: int = 100
    ) -> Sequence[CheckpointInfo]:
        return await self.port.list_runs(status=status, parent_run_id=parent_run_id, limit=limit)

    async def delete(self, run_id: str) -> bool:
        return await self.port.delete_run(run_id)

    async def fork(self, run_id: str, version: int, new_run_id: str) -> RunHandle:
        """Time travel: start ``new_run_id`` from ``run_id`` as it was at ``version`` (its state and
        transcript; status ``running``, ``forked_from`` in its metadata), leaving the original run
        untouched. Resume the new run to continue from there. Raises
        :class:`~seamkit.errors.RunNotResumable` when that version does not exist."""
        past = await self.at_version(run_id, version)
        if past is None:
            raise RunNotResumable(run_id, f"version {version} does not exist (or was pruned)")
        # the new run gets its own creation time and usage (summary keys); it was asked the same task
        meta = {k: v for k, v in past.metadata.items()
                if k not in ("owner", "lease_until", *SUMMARY_KEYS) or k == "task"}
        meta["forked_from"] = f"{run_id}@{version}"
        return await self.begin(
            new_run_id, past.state, past.transcript, parent_run_id=past.parent_run_id, metadata=meta
        )

    def _ledger(self, snap: RunSnapshot) -> EffectLedger | None:
        if self.store is None:
            return None
        scope = snap.state.get("scope")
        return EffectLedger(self.store, tenant=scope.tenant if isinstance(scope, Scope) else "default")

    async def interrupted_effects(self, snap: RunSnapshot) -> list[UncertainEffect]:
        """The side-effecting tool calls that were running when ``snap``'s run stopped and whose
        outcome is unknown, before any resume has looked at them: the due calls of its last
        assistant turn (no result in the transcript or recorded for this version) whose effect
        ledger receipt is ``prepared`` (the process died mid-call) or ``uncertain``, and that the
        run does not list in ``state["uncertain_effects"]`` already. Each is an unsettled
        :class:`~seamkit._durability.ledger.UncertainEffect` with ``waits=True``. Empty for a run
        another live worker holds (its calls may be running right now) or a finished one."""
        last = snap.transcript[-1] if snap.transcript else None
        if last is None or last.role != "assistant" or not last.tool_calls:
            return []
        if snap.status != "running" or self.lease_holder(snap) is not None:
            return []
        ledger = self._ledger(snap)
        if ledger is None:
            return []
        known = {e.call_id for e in snap.state.get("uncertain_effects") or () if isinstance(e, UncertainEffect)}
        step = int(snap.state.get("step", 0))
        out: list[UncertainEffect] = []
        for call in last.tool_calls:
            if call.id in known or call.id in snap.pending:
                continue
            key = effect_key(snap.run_id, step, call.id)
            receipt = await ledger.receipt(key)
            if receipt is None or receipt.get("status") not in ("prepared", "uncertain"):
                continue
            # a prepared receipt: the process died mid-call; an uncertain one says why, if it can
            reason = INTERRUPTED_REASON if receipt["status"] == "prepared" else str(
                receipt.get("error") or INTERRUPTED_REASON)
            out.append(UncertainEffect(call.id, call.name, key, reason, call.arguments, waits=True))
        return out

    async def settle_effect(
        self, run_id: str, call_id: str, *, applied: bool, result: str | None = None
    ) -> UncertainEffect:
        """Record what a person found out about a tool call of ``run_id`` whose outcome was unknown
        (``state["uncertain_effects"]``): ``applied=True`` (the model is told it was applied, with
        ``result`` when given) or ``applied=False`` (it did not happen: the call runs again). The
        effect ledger's receipt is settled first, then a new checkpoint version (same status) marks
        the call settled and drops its warning. A run suspended for it continues on resume, and so
        does a run whose process died while the call ran (:meth:`interrupted_effects`: it can be
        settled before any resume); a call the model was already told about is only recorded
        (nothing reruns), and so is one of a finished run.

        For a workflow run, ``call_id`` is a step's effect ledger key (``<activation run id>:<key>``,
        as the failed step's error names it); see :meth:`_settle_workflow_effect`.

        ``call_id`` may also be a capability's effect of a conversation with capabilities (its
        effect ledger key ``capability:<capability id>:<key>``, as ``EFFECT_UNCERTAIN`` names it):
        its receipt is settled, so the next run of that effect returns ``result`` (the JSON text of
        what its operation returned) without running it, or runs it (not applied); only a key the
        run itself found uncertain (``KernelState.uncertain``) is accepted.

        Returns the settled :class:`~seamkit._durability.ledger.UncertainEffect`. Raises
        :class:`~seamkit.errors.RunNotResumable` when the run is unknown, held by a live worker,
        changed meanwhile or the settled state could not be checkpointed (it held a secret);
        ``ValueError`` when ``call_id`` is not an unsettled uncertain call of the run (the message
        lists those), or ``result`` comes with ``applied=False``.
        """
        if result is not None and not applied:
            raise ValueError("a result text goes with 'applied' only: a call that was not applied has no result")
        snap = await self.latest(run_id)
        if snap is None:
            raise RunNotResumable(run_id, "no checkpoints for this run id")
        held = self.lease_holder(snap)
        if held is not None:
            raise RunNotResumable(run_id, f"another worker ({held[0]}) is running it; settle it when it stops")
        if call_id.startswith(CAPABILITY_EFFECT_PREFIX):
            return await self._settle_capability_effect(snap, call_id, applied=applied, result=result)
        if "workflow_state" in snap.state:
            return await self._settle_workflow_effect(snap, call_id, applied=applied, result=result)
        effects = [e for e in snap.state.get("uncertain_effects") or () if isinstance(e, UncertainEffect)]
        # a call a crash interrupted can be settled before any resume has recorded it
        interrupted = await self.interrupted_effects(snap)
        found = next((e for e in [*effects, *interrupted] if e.call_id == call_id and e.settled is None), None)
        if found is None:
            open_ = ", ".join(e.call_id for e in [*effects, *interrupted] if e.settled is None) or "none"
            raise ValueError(f"run {run_id} has no unsettled tool call {call_id!r} whose outcome is unknown "
                             f"(unsettled: {open_})")
        ledger = self._ledger(snap)
        if ledger is None:
            raise RunNotResumable(run_id, "this checkpointer has no store for effect receipts")
        if applied:
            await ledger.settle(found.key, applied=True, value=ToolResult(call_id, found.tool, applied_text(result)),
                                note="settled as applied by a person")
        else:
            await ledger.settle(found.key, applied=False, note="settled as not applied by a person")
        settled = replace(found, settled="applied" if applied else "not_applied", result=result)
        state = dict(snap.state)
        effects = [settled if e is found else e for e in effects]
        if found in interrupted:
            effects.append(settled)
        state["uncertain_effects"] = effects
        warning = uncertain_warning(run_id, found)
        state["warnings"] = [w for w in state.get("warnings") or () if w != warning]
        detail = effects_detail(effects)
        if detail is not None:
            state["status_detail"] = detail
        else:
            state.pop("status_detail", None)
        handle = RunHandle(self, run_id, snap.parent_run_id, snap.version, snap.metadata)
        handle._logged = len(snap.transcript)
        try:
            saved = await handle.save(snap.status, state, snap.transcript, lease=False)
        except CheckpointConflict:
            raise RunNotResumable(run_id, "it changed while the call was being settled; try again") from None
        if not saved:
            raise RunNotResumable(run_id, f"the effect was settled, but the run could not be checkpointed "
                                  f"({handle.skipped[-1]})")
        for task_id, value in snap.pending.items():  # the batch's finished results stay recorded
            await handle.record_write(task_id, value)
        return settled

    async def _settle_capability_effect(self, snap: RunSnapshot, key: str, *, applied: bool,
                                        result: str | None) -> UncertainEffect:
        """:meth:`settle_effect` of a capability's effect (``key``: its effect ledger key,
        ``capability:<capability id>:<key>``, as ``EFFECT_UNCERTAIN`` names it). The receipt is
        settled, so the next run of that effect returns ``result`` decoded from JSON (``applied``:
        what the operation would have returned; ``None`` without it) without running the
        operation, or runs it (not applied); a new checkpoint version (same status) drops the key
        from the run's open ones (``KernelState.uncertain``). An effect whose process died while it
        ran is found uncertain when its turn runs again (a plain resume), then settled. Raises
        ``ValueError`` when the run is not a conversation with capabilities, the key is not one of
        the run's open uncertain effects or its receipt is not uncertain, or ``result`` is not
        JSON."""

        from seamkit.capabilities._state import KernelState

        run_id = snap.run_id
        kernel = snap.state.get("kernel")
        if not isinstance(kernel, KernelState):
            raise ValueError(f"run {run_id} is not a conversation with capabilities: {key!r} names a "
                             "capability's effect")
        if key not in kernel.uncertain:  # the ledger is the tenant's: only this run's own effects
            raise ValueError(f"run {run_id} has no capability effect {key!r} whose outcome is unknown "
                             f"(unsettled: {', '.join(kernel.uncertain) or 'none'})")
        receipt = await self._settle_receipt(snap, key, applied=applied, result=result, what="capability effect")
        tool = key[len(CAPABILITY_EFFECT_PREFIX):].split(":", 1)[0]
        # a new checkpoint version (same status) drops the key from the run's open ones
        state = dict(snap.state)
        state["kernel"] = replace(kernel, uncertain=tuple(k for k in kernel.uncertain if k != key))
        handle = RunHandle(self, run_id, snap.parent_run_id, snap.version, snap.metadata)
        handle._logged = len(snap.transcript)
        try:
            await handle.save(snap.status, state, snap.transcript, lease=False)
        except CheckpointConflict:
            raise RunNotResumable(run_id, "it changed while the effect was being settled; the effect is "
                                  "settled, run the command again to record it") from None
        return UncertainEffect(call_id=key, tool=tool, key=key, reason=str(receipt.get("error") or ""),
                               settled="applied" if applied else "not_applied", result=result)

    async def _settle_receipt(self, snap: RunSnapshot, key: str, *, applied: bool, result: str | None,
                              what: str) -> dict[str, Any]:
        """Settle the uncertain (or interrupted) receipt ``key`` of ``snap``'s run in the effect
        ledger: ``applied`` with ``result`` (the JSON text of what the operation returned) or not.
        Returns the receipt as it was. Raises ``ValueError`` for a ``result`` that is not JSON or a
        receipt that is not uncertain (``what`` names the effect in the message);
        :class:`~seamkit.errors.RunNotResumable` without a store for receipts."""
        import json

        value: Any = None
        if result is not None:
            try:
                value = json.loads(result)
            except ValueError as exc:
                raise ValueError(f"the result of a {what} is the JSON value its operation returned; "
                                 f"{result!r:.80} is not JSON ({exc})") from None
        ledger = self._ledger(snap)
        if ledger is None:
            raise RunNotResumable(snap.run_id, "this checkpointer has no store for effect receipts")
        check_effect_key(key)
        receipt = await ledger.receipt(key)
        status = receipt.get("status") if receipt is not None else None
        if receipt is None or status not in ("uncertain", "prepared"):
            found = "no receipt" if receipt is None else f"its receipt is {receipt.get('settled') or status}"
            raise ValueError(f"run {snap.run_id} has no {what} {key!r} whose outcome is unknown ({found})")
        note = f"settled as {'applied' if applied else 'not applied'} by a person"
        await ledger.settle(key, applied=applied, value=value if applied else None, note=note)
        return receipt

    async def _settle_workflow_effect(self, snap: RunSnapshot, key: str, *, applied: bool,
                                      result: str | None) -> UncertainEffect:
        """:meth:`settle_effect` of a workflow run's effect: ``key`` is its effect ledger key,
        ``<activation run id>:<key>`` (what :meth:`seamkit.workflows.StepContext.run_effect` used,
        as the failed step's error names it), of an activation that has not finished. The receipt
        is settled (``result``: the JSON text of what the operation returned), so the step, run
        again (``resume --allow-finished``), gets that value without running the operation, or runs
        it (not applied). Raises ``ValueError`` when the key belongs to no unfinished activation of
        the run, its receipt is not uncertain, or ``result`` is not JSON."""

        run_id = snap.run_id
        ws = snap.state["workflow_state"]
        open_ = [a for a in getattr(ws, "active", ()) if getattr(a, "status", "") in ("running", "failed")]
        owner = next((a for a in open_ if key.startswith(f"{a.run_id}:")), None)
        if owner is None:
            raise ValueError(f"run {run_id} has no unfinished step whose effect is {key!r} (an effect key of a "
                             f"workflow starts with its step's run id: {', '.join(a.run_id for a in open_) or 'none'})")
        receipt = await self._settle_receipt(snap, key, applied=applied, result=result, what="effect")
        return UncertainEffect(call_id=key, tool=owner.step, key=key, reason=str(receipt.get("error") or ""),
                               settled="applied" if applied else "not_applied", result=result)

    async def prune(self, *, keep_last: int = 1, finished_before: float | None = None) -> int:
        return await self.port.prune_runs(keep_last=keep_last, finished_before=finished_before)

    def lease_holder(self, snap: RunSnapshot) -> tuple[str, float] | None:
        """``(owner, seconds left)`` when another live worker holds ``snap``'s run, else ``None``
        (not running, lease released or expired, held by this worker, or its owner process on this
        host is gone)."""
        if snap.status != "running":
            return None
        owner = str(snap.metadata.get("owner") or "")
        now = self._now()
        if owner == self.owner or lease_void(snap.metadata, now):
            return None
        return owner, float(snap.metadata["lease_until"]) - now

    async def claim(
        self,
        run_id: str,
        *,
        allow_finished: bool = False,
        require_suspended: bool = False,
        steal: bool = False,
        snapshot: RunSnapshot | None = None,
        state: Mapping[str, Any] | None = None,
        transcript: Sequence[Message] | None = None,
    ) -> tuple[RunHandle, RunSnapshot]:
        """Take over ``run_id`` to continue it: load the latest checkpoint and write a new
        ``running`` version owned by this worker, checked against the version read, so of two workers
        claiming at once exactly one wins.

        Raises :class:`~seamkit.errors.RunNotResumable` when the run is unknown, finished
        (unless ``allow_finished``), not suspended when ``require_suspended``, held by a live
        worker's lease (unless ``steal``), or claimed by another worker first. ``snapshot``: the
        latest checkpoint when the caller has just read it (the version check on the claiming save
        still catches a writer that came in between). ``state`` / ``transcript``: what the claiming
        save writes instead of the snapshot's (the continued run's first state, saving a second
        write; ``transcript`` must start with the snapshot's messages).
        """
        snap = snapshot if snapshot is not None else await self.latest(run_id)
        if snap is None:
            raise RunNotResumable(run_id, "no checkpoints for this run id")
        latest_version = snap.version
        if snap.status in FINISHED_STATUSES and not allow_finished:
            what = "it is done" if snap.status == "done" else "it failed"
            raise RunNotResumable(
                run_id, f"{what} (allow_finished=True, or seamkit resume --allow-finished, "
                f"{'gives its result' if snap.status == 'done' else 'continues it'})"
            )
        if require_suspended and snap.status != "suspended":
            why = ("it is running: it was already resumed, or was interrupted (resume it without decisions)"
                   if snap.status == "running" else f"it is {snap.status}")
            raise RunNotResumable(run_id, f"it is not waiting for approval; {why}")
        held = self.lease_holder(snap) if not steal else None
        if held is not None:
            owner, left = held
            raise RunNotResumable(run_id, f"another worker ({owner}) is running it (lease for {left:.0f} s more)")
        handle = RunHandle(self, run_id, snap.parent_run_id, latest_version, snap.metadata)
        handle._logged = len(snap.transcript)
        try:
            await handle.save("running", snap.state if state is None else state,
                              snap.transcript if transcript is None else transcript)
        except CheckpointConflict:
            raise RunNotResumable(run_id, "another worker resumed it first") from None
        return handle, snap


class RunHandle:
    """The writer of one run's checkpoints: tracks the version it last wrote and which messages of
    the transcript are already in the run's log, so each save appends only new messages, and
    encodes only the parts of the state that changed (:class:`~seamkit._durability.codec.MapEncoder`).

    Writes may be *deferred* (``wait=False``): queued, and handed to the store together with the
    next awaited write in one call (one transaction where the store has
    :meth:`~seamkit._ports.CheckpointPort.save_many`), or on the event loop's next turn when the
    run awaits something else first (a model's reply, another tool call), whichever comes first.
    So a step of a run (model turn, tool batch) costs one hand-off to the store; a deferred write
    is not stored the moment it is queued: code that holds the event loop meanwhile (a blocking
    middleware) delays it, and a crash then loses it (docs/durable-runs.md, "What a crash can
    cost"). A deferred write that fails is raised by
    the next write (or :meth:`flush`), and the handle is back at the last version stored.
    """

    __slots__ = ("_encoder", "_failed", "_lock", "_logged", "_queue", "_soon", "_stored", "_stored_meta", "_task",
                 "checkpointer",
                 "handoffs", "metadata", "parent_run_id", "run_id", "skipped", "version")

    def __init__(
        self, checkpointer: Checkpointer, run_id: str, parent_run_id: str | None, version: int, metadata: FrozenDict
    ) -> None:
        self.checkpointer = checkpointer
        self.run_id = run_id
        self.parent_run_id = parent_run_id
        self.version = version
        self.metadata = metadata
        self._logged = 0
        self.skipped: list[str] = []
        self._encoder = codec.MapEncoder()
        # writes not yet handed to the store, in order; (version, logged, metadata) last stored
        self._queue: list[CheckpointRecord | PendingWrite] = []
        self._stored = version  # the last version known stored
        self._stored_meta = metadata
        self._failed: BaseException | None = None  # a deferred write's error, raised by the next write
        self._lock: asyncio.Lock | None = None
        self._soon = False  # a flush is scheduled for the event loop's next turn
        self._task: asyncio.Task[None] | None = None  # the background flush in progress
        #: calls made to the store to write (one per :meth:`flush` that had something to write)
        self.handoffs = 0

    @property
    def encoded(self) -> int:
        """How many state values were encoded (not reused from the previous save) so far."""
        return self._encoder.encoded

    async def save(
        self, status: str, state: Mapping[str, Any], transcript: Sequence[Message], *, lease: bool = True,
        wait: bool = True,
    ) -> bool:
        """Write the next version: ``status``, ``state``, and the messages of ``transcript`` not yet
        logged. A ``running`` version holds this worker's lease unless ``lease=False`` (an
        interrupted run that any worker may resume at once). ``wait=False``: deferred (see the
        class doc); the version is then stored with the next awaited write.

        Returns ``False`` (and records why in :attr:`skipped`) when the snapshot holds a secret.
        Raises :class:`~seamkit.errors.CodecError` for a value the codec cannot encode and
        :class:`~seamkit.errors.CheckpointConflict` when another worker wrote meanwhile (with
        ``wait=False``: raised by the next awaited write)."""
        cp = self.checkpointer
        self._raise_failed()
        if self._logged > len(transcript):  # a caller saving an earlier transcript (redacted ends)
            self._logged = len(transcript)
        state_text = self._encoder.dumps(state)
        new = transcript[self._logged :]
        entries = []
        for i, m in enumerate(new):
            try:
                entries.append(codec.dumps(m))
            except CodecError as exc:
                raise CodecError(f"$.transcript[{self._logged + i}]{exc.path[1:]}", exc.reason) from None
        now = cp._now()
        # the run's summary for listings (see seamkit._durability.summary); a run stored before
        # it existed gets no creation time at a later version (listings take its oldest version's)
        summary = summary_metadata(self.metadata, state, transcript, now, first=self.version == 0)
        why = cp._taint((state_text, *entries, str(summary.get("task", ""))))
        if why is not None:
            self.skipped.append(f"version {self.version + 1} not saved: {why}")
            log.warning("checkpoint of run %s skipped: %s", self.run_id, why)
            return False
        if "started_at" in summary or "task" in summary:  # kept by every later version
            self.metadata = freeze({**self.metadata, **{k: summary[k] for k in ("started_at", "task") if k in summary}})
        meta = {**self.metadata, **summary}
        meta["owner"] = cp.owner
        meta["lease_until"] = now + cp.lease_s if status == "running" and lease else None
        record = CheckpointRecord(
            self.run_id, self.version + 1, status, state_text, tuple(entries), self.parent_run_id, freeze(meta), now
        )
        self._queue.append(record)
        self.version += 1
        self._logged = len(transcript)
        if wait:
            await self.flush()
        else:
            self._flush_soon()
        return True

    @property
    def logged(self) -> int:
        """How many messages of the transcript are in the run's log (or queued for it)."""
        return self._logged

    async def record_write(self, task_id: str, value: Any, *, wait: bool = True) -> None:
        """Record a finished task's result (a tool call id and its result) against the current
        version, so a resumed run does not run it again. ``wait=False``: deferred (see the class
        doc): handed to the store with the next write, at the latest on the event loop's next turn."""
        cp = self.checkpointer
        self._raise_failed()
        text = codec.dumps(value)
        if cp._taint((text,)) is not None:
            return
        self._queue.append(PendingWrite(self.run_id, self.version, task_id, text))
        if wait:
            await self.flush()
        else:
            self._flush_soon()

    def _raise_failed(self) -> None:
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def _flush_soon(self) -> None:
        if not self._soon:
            self._soon = True
            asyncio.get_running_loop().call_soon(self._start_flush)

    def _start_flush(self) -> None:
        self._soon = False
        if self._queue:  # (an awaited write may have taken it meanwhile)
            # kept referenced until done: the event loop holds only a weak reference to a task
            self._task = asyncio.get_running_loop().create_task(self._flush_quietly())

    async def _flush_quietly(self) -> None:
        try:
            await self.flush()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # kept for the run's next write, which raises it (on the run's task)
            self._failed = exc
        finally:
            if self._task is asyncio.current_task():
                self._task = None

    async def flush(self) -> None:
        """Hand every queued write to the store (one call, one transaction where the store has
        ``save_many``); return when they are stored. Raises what a deferred write raised before
        (once), or what this call's store write raises; then nothing queued is kept and the handle
        is back at the last version stored (the run's next save writes those messages again)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            self._raise_failed()
            if not self._queue:
                return
            ops, self._queue = self._queue, []
            self.handoffs += 1
            try:
                await _store(self.checkpointer.port, ops, self._stored or None)
            except BaseException:
                # nothing of ops is known stored: back to the last version stored (writes queued
                # while this one was in flight expected versions that do not exist now: dropped too)
                dropped = [op for op in (*ops, *self._queue) if isinstance(op, CheckpointRecord)]
                self._queue.clear()
                self.version -= len(dropped)
                self._logged = max(0, self._logged - sum(len(r.entries) for r in dropped))
                self.metadata = self._stored_meta
                raise
            self._stored = max(self._stored, *(op.version for op in ops if isinstance(op, CheckpointRecord)), 0)
            self._stored_meta = self.metadata


async def _store(port: CheckpointPort, ops: Sequence[CheckpointRecord | PendingWrite],
                 expected_version: int | None) -> None:
    """Write ``ops`` (in order) to ``port``: one ``save_many`` call when the port has it, else one
    ``save`` / ``put_write`` call per op."""
    records = [op for op in ops if isinstance(op, CheckpointRecord)]
    save_many = getattr(port, "save_many", None)
    if save_many is not None and len(ops) > 1:
        writes = [op for op in ops if isinstance(op, PendingWrite)]
        await save_many(records, expected_version=expected_version, writes=writes)
        return
    for op in ops:
        if isinstance(op, PendingWrite):
            await port.put_write(op.run_id, op.version, op.task_id, op.payload)
        else:
            await port.save(op, expected_version=expected_version)
            expected_version = op.version
