"""Grounding: memory items with provenance, the sources that retrieve them, and citations.

A :class:`MemoryItem` is one piece of text handed to a model, with the ``source`` key it came
from (``path#anchor``, a URL, a record id) and ``metadata`` saying whether it is a *recorded*
fact or something a model *inferred* (``metadata["origin"]``). A :class:`MemorySource` (also
called a grounding source) retrieves items for a query within a :class:`~seamkit.values.Scope`.

Citations. Every item carries a short stable id, :attr:`MemoryItem.citation_id`: ``"s"`` and the
first 6 hex digits of the SHA-256 of its source key (UTF-8), e.g. ``s1a2b3c``; the same source
gives the same id on every turn and in every process. The default render policy
(:func:`render_items`) writes one line per item::

    [s1a2b3c] docs/guide.md#install: pip install seamkit ...

and a model cites an item by writing its id in square brackets (``[s1a2b3c]``; several ids may
share one pair of brackets, separated by commas or spaces: ``[s1a2b3c, s4d5e6f]``). A bare id
(``s1a2b3c`` outside brackets) is recognised too when it contains at least one digit (so plain
words made of hex letters, such as ``sdeface``, are not taken for ids). :func:`find_citations`
lists the ids an answer cites; :func:`unknown_citations` those that name no item handed to the
model (an invented or stale citation).

This module is light: it imports only :mod:`seamkit.values`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from seamkit.values import EMPTY, FrozenDict, freeze

if TYPE_CHECKING:
    from seamkit.values import Scope

__all__ = [
    "ORIGINS",
    "MemoryItem",
    "MemorySource",
    "GroundingSource",
    "citation_id",
    "cite_ids",
    "find_citations",
    "unknown_citations",
    "render_items",
    "not_inferred",
    "Admit",
]

ORIGINS = ("recorded", "inferred")
"""The values ``metadata["origin"]`` may take: a recorded fact, or something a model wrote."""


def citation_id(source: str) -> str:
    """The citation id of a source key: ``"s"`` + the first 6 hex digits of its SHA-256 (UTF-8)."""
    return "s" + hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:6]


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One retrieved piece of grounding text with its provenance.

    ``content``: the text. ``source``: the source key (``path#anchor``, URL, record id).
    ``score``: the retriever's relevance (higher is better; ``None`` when it has none).
    ``metadata``: frozen JSON-like data; ``metadata["origin"]`` is ``"recorded"`` (a fact from a
    document or a record) or ``"inferred"`` (something a model wrote); absent means recorded.

    Raises ``TypeError`` when ``content`` or ``source`` is not a ``str``, ``ValueError`` for an
    empty ``source`` or an ``origin`` other than those in :data:`ORIGINS`. Values round-trip
    through :mod:`seamkit._durability.codec`.
    """

    content: str
    source: str
    score: float | None = None
    metadata: FrozenDict = EMPTY

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            raise TypeError(f"MemoryItem.content must be a str, got {type(self.content).__name__}")
        if not isinstance(self.source, str):
            raise TypeError(f"MemoryItem.source must be a str, got {type(self.source).__name__}")
        if not self.source:
            raise ValueError("MemoryItem.source must name where the content came from (it is empty)")
        if type(self.metadata) is not FrozenDict:
            object.__setattr__(self, "metadata", freeze(dict(self.metadata)))
        origin = self.metadata.get("origin", "recorded")
        if origin not in ORIGINS:
            raise ValueError(f"MemoryItem metadata origin must be one of {', '.join(ORIGINS)}, got {origin!r}")

    @property
    def citation_id(self) -> str:
        """``"s"`` + the first 6 hex digits of the SHA-256 of :attr:`source`; stable on every turn."""
        return citation_id(self.source)

    @property
    def origin(self) -> str:
        """``"recorded"`` or ``"inferred"`` (``metadata["origin"]``; ``"recorded"`` when absent)."""
        origin: str = self.metadata.get("origin", "recorded")
        return origin


@runtime_checkable
class MemorySource(Protocol):
    """Retrieves grounding items (a *grounding source*).

    ``retrieve(query, scope=..., k=5)`` returns at most ``k`` items relevant to ``query`` among
    those visible to ``scope`` (tenant isolation is the source's job), best first.
    """

    async def retrieve(self, query: str, *, scope: Scope, k: int = 5) -> Sequence[MemoryItem]: ...


GroundingSource = MemorySource
"""The request builder's name for a :class:`MemorySource`."""


def not_inferred(item: MemoryItem) -> bool:
    """The default ``admit`` predicate: refuse items a model wrote (``origin == "inferred"``)."""
    return item.origin != "inferred"


def cite_ids(items: Iterable[MemoryItem]) -> list[str]:
    """The citation ids of ``items`` in order, each once."""
    return list(dict.fromkeys(i.citation_id for i in items))


_NEWLINES = re.compile(r"\s*[\r\n]+\s*")


def render_items(items: Sequence[MemoryItem]) -> str:
    """The default render policy: one line per item, ``[<citation id>] <source>: <content>``
    (line breaks inside the content are folded into single spaces, so each item stays one line).
    Items are rendered in the order given; an empty sequence renders as ``""``."""
    return "\n".join(f"[{i.citation_id}] {i.source}: {_NEWLINES.sub(' ', i.content.strip())}" for i in items)


_ID = r"s[0-9a-fA-F]{6}"
_GROUP = re.compile(r"\[([^\[\]\n]{1,200})\]")
_IN_GROUP = re.compile(rf"(?<![A-Za-z0-9_]){_ID}(?![A-Za-z0-9_])")
_GROUP_SHAPE = re.compile(rf"\s*{_ID}(?:\s*[,;]?\s*{_ID})*\s*[,;]?\s*")
_BARE = re.compile(r"(?<![A-Za-z0-9_\[])s[0-9a-f]{6}(?![A-Za-z0-9_])")
_DIGIT = re.compile(r"[0-9]")


def find_citations(text: str) -> list[str]:
    """The citation ids ``text`` cites, lowercased, in order of first appearance, each once.

    Recognised: ``[s1a2b3c]``; several ids in one pair of brackets (``[s1a2b3c, s4d5e6f]``,
    separated by commas, semicolons or spaces; a bracket holding anything else is not a
    citation); and a bare lowercase ``s1a2b3c`` that contains at least one digit.
    """
    found: list[tuple[int, str]] = []
    spans: list[tuple[int, int]] = []
    for g in _GROUP.finditer(text):
        inner = g.group(1)
        if _GROUP_SHAPE.fullmatch(inner):
            spans.append(g.span())
            found.extend((g.start() + m.start(), m.group(0).lower()) for m in _IN_GROUP.finditer(inner))
    for m in _BARE.finditer(text):
        if any(a <= m.start() < b for a, b in spans):
            continue
        if _DIGIT.search(m.group(0)):
            found.append((m.start(), m.group(0)))
    found.sort()
    return list(dict.fromkeys(cid for _, cid in found))


def unknown_citations(text: str, items: Iterable[MemoryItem]) -> list[str]:
    """The ids ``text`` cites (see :func:`find_citations`) that name none of ``items``, in order."""
    known = set(cite_ids(items))
    return [cid for cid in find_citations(text) if cid not in known]


#: An ``admit`` predicate: ``True`` keeps an item for the model.
Admit = Callable[[MemoryItem], bool]
