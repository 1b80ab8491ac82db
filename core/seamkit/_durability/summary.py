"""A run's summary for listings: when it started, what it was asked, what it used.

:meth:`~seamkit._durability.checkpointer.RunHandle.save` keeps these keys in every checkpoint's
``metadata`` (which every store returns in its listings, without decoding any payload), so
``seamkit runs list`` shows them for any store at the cost of one listing query:

- ``started_at``: unix seconds of the run's first checkpoint (kept by every later version, and by
  pruning: a pruned run keeps its creation time; a forked run gets its own);
- ``task``: the first words of the run's input, the last user message of its first checkpoint
  (earlier ones are history given to it, a chat's conversation so far; at most
  :data:`TASK_CHARS` characters, on one line); a forked run keeps its original's;
- ``input_tokens``, ``output_tokens``, ``requests``: the run's usage so far (``state["usage"]``);
- ``cost_usd``: its cost in USD as a decimal string, ``None`` when unknown; ``cost_source`` as
  :class:`~seamkit.values.Usage` says;
- ``stopped``: why a finished run stopped without an answer (its ``stop_reason`` other than
  ``completed`` / ``suspended``: ``max_steps``), else ``None``; ``steps``: the model turns it took;
  ``limit_reached``: the tool-loop limit it reached (``max_tool_calls`` / ``max_tool_rounds``: the
  model then answered without further tools), else ``None``. Written with every version, so a
  resumed run does not keep a stop of an earlier one.

Runs stored before these keys existed have none of them: :func:`run_summary` then takes the creation
time from the oldest stored version and the rest from the decoded latest checkpoint, if given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from seamkit.values import Message, Usage

__all__ = ["ANSWERED", "SUMMARY_KEYS", "TASK_CHARS", "RunSummary", "run_summary", "summary_metadata", "task_head"]

#: How many characters of the task a checkpoint's metadata keeps.
TASK_CHARS = 80
#: The metadata keys this module writes (a fork drops them but ``task``: the new run starts its own summary).
SUMMARY_KEYS = ("started_at", "task", "input_tokens", "output_tokens", "requests", "cost_usd", "cost_source",
                "stopped", "steps", "limit_reached")
#: The stop reasons of a run that ended with an answer or waits for a person (not "stopped").
ANSWERED = ("completed", "suspended")


def task_head(text: str, limit: int = TASK_CHARS) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``limit`` characters with an
    ellipsis."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: max(0, limit - 3)] + "..."


def summary_metadata(
    metadata: Mapping[str, Any], state: Mapping[str, Any], transcript: Sequence[Message], now: float,
    *, first: bool = True,
) -> dict[str, Any]:
    """The summary keys to write with the next checkpoint of a run whose current ``metadata`` is
    given: ``started_at`` (``now`` when the run has none yet and this is its ``first``
    checkpoint), ``task`` (when it has none yet and ``transcript`` has a user message with text:
    the last one at the ``first`` checkpoint, the run's input after its history; else the first),
    the usage keys from ``state["usage"]`` (a :class:`~seamkit.values.Usage`; left out when the
    state has none), and ``stopped`` / ``steps`` / ``limit_reached`` from the state's
    ``stop_reason``, ``step`` and ``limit_reached``."""
    out: dict[str, Any] = {}
    if first and not isinstance(metadata.get("started_at"), int | float):
        out["started_at"] = now
    if not isinstance(metadata.get("task"), str):
        # at the first checkpoint the transcript is the history given to the run (a chat's earlier
        # messages) then its input: the task is the input, the last user message; a later fill
        # (a run stored before these keys) has no such boundary and takes the first
        asked = next((m for m in (reversed(transcript) if first else transcript)
                      if m.role == "user" and m.text.strip()), None)
        if asked is not None:
            out["task"] = task_head(asked.text)
    usage = state.get("usage")
    if isinstance(usage, Usage):
        out.update(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, requests=usage.requests,
                   cost_usd=None if usage.cost is None else str(usage.cost), cost_source=usage.cost_source)
    reason = state.get("stop_reason")
    out["stopped"] = reason if isinstance(reason, str) and reason not in ANSWERED else None
    out["steps"] = _int(state.get("step"))
    limit = state.get("limit_reached")
    out["limit_reached"] = limit if isinstance(limit, str) else None
    return out


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What ``seamkit runs list`` shows of a run. ``created_at`` / ``updated_at``: unix seconds of
    its first and latest checkpoint; ``duration_s``: the time between them; ``task``: ``None`` when
    unknown; ``cost_usd``: a ``Decimal`` or ``None`` (unknown); tokens ``None`` when unknown;
    ``stopped``: why a finished run stopped without an answer (``max_steps``), ``None`` when it did
    not; ``steps``: the model turns taken (``None``: unknown); ``limit_reached``: the tool-loop
    limit reached, if any."""

    created_at: float
    updated_at: float
    task: str | None
    input_tokens: int | None
    output_tokens: int | None
    requests: int | None
    cost_usd: Decimal | None
    cost_source: str | None
    stopped: str | None = None
    steps: int | None = None
    limit_reached: str | None = None

    @property
    def duration_s(self) -> float:
        return max(0.0, self.updated_at - self.created_at)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def run_summary(
    metadata: Mapping[str, Any], updated_at: float, *, first_version_at: float | None = None,
    state: Mapping[str, Any] | None = None, transcript: Sequence[Message] = (),
) -> RunSummary:
    """The summary of a run whose latest checkpoint has ``metadata`` and was written at
    ``updated_at``. For a run stored before the summary keys existed: ``first_version_at`` (the
    oldest stored version's time) stands in for ``started_at``, and ``state`` / ``transcript`` (its
    decoded latest checkpoint) for the task and usage."""
    started = metadata.get("started_at")
    created = float(started) if isinstance(started, int | float) and not isinstance(started, bool) else (
        first_version_at if first_version_at is not None else updated_at)
    filled = dict(metadata)
    if state is not None:
        for key, value in summary_metadata({}, state, transcript, created, first=False).items():
            filled.setdefault(key, value)
    task = filled.get("task")
    cost: Decimal | None = None
    raw = filled.get("cost_usd")
    if isinstance(raw, str):
        try:
            cost = Decimal(raw)
        except InvalidOperation:
            cost = None
    source = filled.get("cost_source")
    return RunSummary(
        created_at=created,
        updated_at=updated_at,
        task=task if isinstance(task, str) else None,
        input_tokens=_int(filled.get("input_tokens")),
        output_tokens=_int(filled.get("output_tokens")),
        requests=_int(filled.get("requests")),
        cost_usd=cost,
        cost_source=source if isinstance(source, str) else None,
        stopped=_str(filled.get("stopped")),
        steps=_int(filled.get("steps")),
        limit_reached=_str(filled.get("limit_reached")),
    )
