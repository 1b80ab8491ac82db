"""What a capability declares, and what running one returns (the kernel's vocabulary).

A **capability** is a declared operation: a stable ``id`` and integer ``version``; a description
and guidance the model reads; an ``input`` type (any schema flavour seamkit supports, or a JSON
Schema mapping: its JSON Schema is what the model sees) and an ``output`` type; the **facts** it
``requires`` before it can run, ``provides`` when it completes and ``invalidates`` (each a
versioned :class:`FactType`); its ``effect`` on the world (``none``, ``read`` or ``write``); its
``confirmation`` mode (``none``, ``required``: a person confirms before it runs, ``capability``:
it asks for confirmation itself by returning :class:`NeedsConfirmation`); and ``execute(ctx,
input)``, which returns one of the result values below, never raises for an expected outcome.

Results: :class:`Completed` (output, facts with their evidence ids and dependencies, evidence,
artifacts), :class:`NeedsInput`, :class:`NeedsDependency` (a fact it must have first, the
capability that provides it and that capability's input, optional private continuation state),
:class:`NeedsConfirmation`, :class:`Failed`.

Tools stay the simple path; a capability is the governed one (design: "Capabilities").
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from seamkit.values import EMPTY, FrozenDict, freeze

__all__ = [
    "Capability",
    "CapabilityResult",
    "Completed",
    "ConfirmationMode",
    "EffectMode",
    "Evidence",
    "Fact",
    "FactType",
    "Failed",
    "Guidance",
    "NeedsConfirmation",
    "NeedsDependency",
    "NeedsInput",
    "fact_type",
]

#: What a capability does to the world (its effect mode; the receipts of its effects are the ledger's).
EffectMode = Literal["none", "read", "write"]
#: Who confirms a capability before it acts (its confirmation mode; a confirmation a person gives is
#: an interaction of the run, not this).
ConfirmationMode = Literal["none", "required", "capability"]
EFFECTS: tuple[str, ...] = ("none", "read", "write")
CONFIRMATIONS: tuple[str, ...] = ("none", "required", "capability")

# fullmatch, ASCII digits: "$" would accept a trailing newline and "\d" any Unicode digit
_FACT = re.compile(r"(?P<name>[a-z][a-z0-9_.]*)(?:@(?P<version>[0-9]+))?")
_FACT_NAME = re.compile(r"[a-z][a-z0-9_.]*")


@dataclass(frozen=True, slots=True, order=True)
class FactType:
    """A versioned kind of fact (``order.id@2``): ``name`` (lower-case letters, digits, ``_`` and
    ``.``, starting with a letter) and ``version`` (a positive integer); ``ValueError`` otherwise.
    A requirement is met only by a provider of the same name *and* version."""

    name: str
    version: int = 1

    def __post_init__(self) -> None:
        # built directly (not through fact_type) a FactType must hold the same invariants
        if not isinstance(self.name, str) or not _FACT_NAME.fullmatch(self.name):
            raise ValueError(f"{self.name!r} is not a fact type name: lower-case letters, digits, '_' and '.', "
                             "starting with a letter")
        if type(self.version) is not int or self.version < 1:
            raise ValueError(f"fact type {self.name!r}: the version must be a positive integer, got {self.version!r}")

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"


def _fact_types(owner: str, what: str, specs: Any) -> tuple[FactType, ...]:
    # a bare string is iterable: "order.id@1" would silently become the fact types o, r, d, ...
    if isinstance(specs, (str, bytes, FactType)):
        raise TypeError(f"{owner}: {what} must be a sequence of fact types, got {specs!r} (write [{specs!r}])")
    return tuple(fact_type(f) for f in specs)


def fact_type(spec: str | FactType) -> FactType:
    """``"order.id@2"`` (or ``"order.id"``, version 1) as a :class:`FactType`. Raises
    ``ValueError`` for any other shape."""
    if isinstance(spec, FactType):
        return spec
    m = _FACT.fullmatch(spec) if isinstance(spec, str) else None
    if m is None or (m.group("version") is not None and int(m.group("version")) < 1):
        raise ValueError(f"{spec!r} is not a fact type: write name@version, e.g. 'order.id@1' "
                         "(lower-case name, version a positive integer)")
    return FactType(m.group("name"), int(m.group("version") or 1))


def _is_async(fn: Any) -> bool:
    """A coroutine function, or an object whose ``__call__`` is one (a sync ``execute`` would fail
    on every call: refused when the capability is declared)."""
    import inspect

    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def _strings(owner: str, what: str, items: Any) -> tuple[str, ...]:
    # like fact types: a bare string would be split into its characters
    if isinstance(items, (str, bytes)):
        raise TypeError(f"{owner}: {what} must be a sequence of strings, got {items!r} (write [{items!r}])")
    return tuple(items)


@dataclass(frozen=True, slots=True)
class Guidance:
    """What the model reads about when to pick a capability: ``when_to_use``, ``when_not_to_use``
    and ``examples`` (short sample requests). Shown in full only for the capabilities selected in a
    turn; the rest are listed by id and description."""

    when_to_use: str = ""
    when_not_to_use: str = ""
    examples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "examples", _strings("guidance", "examples", self.examples))


@dataclass(frozen=True, slots=True)
class Capability:
    """A declared operation (see the module doc). ``requires`` / ``provides`` / ``invalidates``
    accept :class:`FactType` values or ``"name@version"`` strings; ``input`` / ``output`` a type
    seamkit can adapt (pydantic model, dataclass, attrs class) or a JSON Schema mapping.
    ``execute`` is ``async (ctx, input) -> CapabilityResult``.

    Construction checks only shapes (the compiler checks the whole agent, reporting every problem
    at once with a stable code): raises ``ValueError`` for a malformed fact type, an unknown
    ``effect`` or ``confirmation``, and ``TypeError`` for an ``execute`` that is not callable or a
    bare string where a sequence of fact types is expected. A JSON Schema mapping given as
    ``input`` / ``output`` is frozen."""

    id: str
    version: int
    description: str
    execute: Callable[[Any, Any], Awaitable[CapabilityResult]]
    input: Any = None
    output: Any = None
    requires: tuple[FactType, ...] = ()
    provides: tuple[FactType, ...] = ()
    invalidates: tuple[FactType, ...] = ()
    effect: EffectMode = "none"
    confirmation: ConfirmationMode = "none"
    guidance: Guidance = field(default_factory=Guidance)

    def __post_init__(self) -> None:
        for name in ("requires", "provides", "invalidates"):
            object.__setattr__(self, name, _fact_types(f"capability {self.id!r}", name, getattr(self, name)))
        for name in ("input", "output"):
            # a JSON Schema mapping is part of the declaration: frozen like the rest of it
            if isinstance(getattr(self, name), Mapping):
                object.__setattr__(self, name, freeze(getattr(self, name)))
        if self.effect not in EFFECTS:
            raise ValueError(f"capability {self.id!r}: effect must be one of {', '.join(EFFECTS)}, got {self.effect!r}")
        if self.confirmation not in CONFIRMATIONS:
            raise ValueError(f"capability {self.id!r}: confirmation must be one of {', '.join(CONFIRMATIONS)}, "
                             f"got {self.confirmation!r}")
        if not callable(self.execute) or not _is_async(self.execute):
            raise TypeError(f"capability {self.id!r}: execute must be an async function (ctx, input)")

    @property
    def ref(self) -> str:
        """``id@version``, how problems and events name it."""
        return f"{self.id}@{self.version}"


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a fact or a claim comes from: ``source`` (a URL, a record key...) and an optional
    ``excerpt``. Its :attr:`id` is the source's citation id (:func:`seamkit._grounding.citation_id`,
    ``s`` + 6 hex digits), the id answers cite, as for grounding items: one id scheme, so a claim
    citing unknown evidence is found the same way."""

    source: str
    excerpt: str = ""

    @property
    def id(self) -> str:
        """The citation id of :attr:`source`."""
        from seamkit._grounding import citation_id

        return citation_id(self.source)


@dataclass(frozen=True, slots=True)
class Fact:
    """Something now known: its ``type``, ``value`` (JSON-able), the ``evidence`` ids backing it and
    the fact types it ``depends_on`` (when one of those changes or is invalidated, this one is
    forgotten too)."""

    type: FactType
    value: Any
    evidence: tuple[str, ...] = ()
    depends_on: tuple[FactType, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", fact_type(self.type))
        object.__setattr__(self, "depends_on", _fact_types(f"fact {self.type}", "depends_on", self.depends_on))
        object.__setattr__(self, "evidence", _strings(f"fact {self.type}", "evidence", self.evidence))
        object.__setattr__(self, "value", freeze(self.value))


@dataclass(frozen=True, slots=True)
class Completed:
    """The capability ran: its ``output``, the ``facts`` it established, the ``evidence`` behind
    them and any ``artifacts`` (name -> JSON-able value: a receipt, a document id)."""

    output: Any = None
    facts: tuple[Fact, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    artifacts: FrozenDict = EMPTY
    status: Literal["completed"] = "completed"

    def __post_init__(self) -> None:
        object.__setattr__(self, "facts", tuple(self.facts))
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "artifacts", freeze(dict(self.artifacts)))
        for f in self.facts:
            if not isinstance(f, Fact):
                raise TypeError(f"completed: facts must be Fact values, got {type(f).__name__}")
        for e in self.evidence:
            if not isinstance(e, Evidence):
                raise TypeError(f"completed: evidence must be Evidence values, got {type(e).__name__}")


@dataclass(frozen=True, slots=True)
class NeedsInput:
    """The person must say something first: ``prompt`` (what to ask) and the ``fields`` wanted."""

    prompt: str
    fields: tuple[str, ...] = ()
    status: Literal["needs_input"] = "needs_input"

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", _strings("needs_input", "fields", self.fields))


@dataclass(frozen=True, slots=True)
class NeedsDependency:
    """A fact must be established first: ``requirement`` (the fact type), ``provider`` (the id of
    the registered capability providing it) and its validated ``input``; ``state`` is private
    continuation state handed back when this capability resumes with the fact (it is stored in the
    checkpoint: a value the checkpoint codec cannot encode raises
    :class:`~seamkit.errors.CodecError` here, when the result is made)."""

    requirement: FactType
    provider: str
    input: Mapping[str, Any] = EMPTY
    state: Any = None
    status: Literal["needs_dependency"] = "needs_dependency"

    def __post_init__(self) -> None:
        object.__setattr__(self, "requirement", fact_type(self.requirement))
        if isinstance(self.input, Mapping):
            object.__setattr__(self, "input", freeze(self.input))
        if self.state is not None:
            # the continuation waits in the checkpoint while the provider runs: it must be storable
            from seamkit._durability.codec import encode

            encode(self.state)


@dataclass(frozen=True, slots=True)
class NeedsConfirmation:
    """A person must confirm before the capability acts: ``summary`` (what will happen)."""

    summary: str
    status: Literal["needs_confirmation"] = "needs_confirmation"


@dataclass(frozen=True, slots=True)
class Failed:
    """The capability could not do it: a stable ``code``, a ``message`` (sanitized: shown to the
    model and stored in checkpoints) and the offending ``ids`` (capability refs, fact types, keys)."""

    code: str
    message: str
    ids: tuple[str, ...] = ()
    status: Literal["failed"] = "failed"

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not self.code.strip():
            raise ValueError(f"failed: the code must be non-blank text, got {self.code!r}")
        object.__setattr__(self, "ids", _strings("failed", "ids", self.ids))


CapabilityResult = Completed | NeedsInput | NeedsDependency | NeedsConfirmation | Failed
