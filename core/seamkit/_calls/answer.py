"""``Answer`` (what :func:`seamkit.ask` returns), ``Session`` (a conversation to continue) and
``AskFailed`` (raised by :meth:`Answer.raise_for_outcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from seamkit._calls.binding import Binding
from seamkit.errors import AskFailed, Failure
from seamkit.values import EMPTY, CostSource, FrozenDict, Message, Usage

__all__ = ["OUTCOMES", "Answer", "AskFailed", "Outcome", "Session"]

Outcome = Literal["ok", "failed", "budget_exceeded", "timeout", "invalid_output"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "failed", "budget_exceeded", "timeout", "invalid_output")


@dataclass(frozen=True, slots=True)
class Session:
    """A conversation to continue with ``seamkit.ask(..., resume=session)``: the ``binding`` it used
    (with its :class:`~seamkit._calls.binding.CredentialRef`, never a resolved secret) and the
    ``transcript`` so far (system prompt first, when there is one)."""

    binding: Binding
    transcript: tuple[Message, ...] = ()

    def __post_init__(self) -> None:
        if type(self.transcript) is not tuple:
            object.__setattr__(self, "transcript", tuple(self.transcript))

    def __repr__(self) -> str:
        return f"Session({self.binding!r}, messages={len(self.transcript)})"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class Answer:
    """The result of one :func:`seamkit.ask` call.

    ``outcome``: ``ok``; ``failed`` (the provider or anything else raised: see ``failure``);
    ``budget_exceeded`` (a model request was refused by the USD ceiling); ``timeout``
    (``wall_clock_s`` ran out); ``invalid_output`` (the reply still did not match the output
    schema after one corrective turn; ``text`` keeps it).
    ``value``: the typed output (validated against the canonical schema; an instance of the Python
    type when one was given) or, without an output spec, the text; ``None`` unless ``ok``.
    ``text``: the last assistant text. ``transcript``: every message of this call, earlier
    conversation included. ``failure``: a :class:`~seamkit.errors.Failure` (its type name, message
    and provider :class:`~seamkit.errors.FailureClass` kept) or ``None``.
    ``usage``: summed over every model request (tokens; ``cost`` in USD as ``Decimal`` or ``None``).
    ``raw_usage``: one entry per model request, the usage object exactly as the provider reported
    it (``None`` where it sent none). ``settings``: what was sent (provider, model, max_tokens,
    temperature, seed, output mode, non-secret options; secret-looking options masked).
    ``degradations``: explicit warnings recorded by the provider or middlewares (a mapped
    reasoning effort, a dropped thinking block, an unpriced model). ``session``: continue the
    conversation with ``resume=answer.session`` (after a failure it is the conversation as it
    was before this call, so the same prompt can be asked again). ``call_id`` identifies the call
    (it is also the run id middlewares see). ``unmetered_requests``: requests counted in
    ``usage.requests`` whose tokens and cost the provider never reported (0 or 1: a failing request
    that had been sent, e.g. a stream that broke after text arrived); when non-zero, ``usage.cost``
    is ``None`` and the token counts leave that request out.
    """

    call_id: str
    outcome: Outcome
    value: Any
    text: str
    transcript: tuple[Message, ...]
    usage: Usage
    session: Session
    failure: Failure | None = None
    raw_usage: tuple[FrozenDict | None, ...] = ()
    settings: FrozenDict = field(default_factory=lambda: EMPTY)
    degradations: tuple[str, ...] = ()
    unmetered_requests: int = 0

    @property
    def ok(self) -> bool:
        """``outcome == "ok"``."""
        return self.outcome == "ok"

    @property
    def cost(self) -> Decimal | None:
        """USD as ``Decimal``; ``None`` when unknown (never ``0`` for an unknown price)."""
        return self.usage.cost

    @property
    def cost_source(self) -> CostSource:
        """``reported``, ``estimated``, ``local``, ``cache`` or ``unpriced``."""
        return self.usage.cost_source

    def raise_for_outcome(self) -> Answer:
        """Return ``self`` when the outcome is ``ok``; otherwise raise :class:`AskFailed`."""
        if self.outcome != "ok":
            raise AskFailed(self)
        return self

    def __repr__(self) -> str:
        parts = [f"call_id={self.call_id!r}", f"outcome={self.outcome!r}"]
        if self.outcome == "ok":
            parts.append(f"value={_short(self.value)}")
        else:
            parts.append(f"text={_short(self.text)}")
        if self.failure is not None:
            parts.append(f"failure={self.failure.type}({_short(self.failure.message, 120)})")
        cost = "unknown" if self.usage.cost is None else f"{self.usage.cost}"
        parts.append(f"tokens={self.usage.input_tokens}/{self.usage.output_tokens}")
        parts.append(f"cost={cost} ({self.usage.cost_source})")
        if self.degradations:
            parts.append(f"degradations={len(self.degradations)}")
        parts.append(f"session={self.session!r}")
        return f"Answer({', '.join(parts)})"
