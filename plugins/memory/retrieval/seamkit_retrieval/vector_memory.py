"""seamkit-retrieval's retrieval from an embedding model and a vector store: a :class:`~seamkit._grounding.MemorySource`
built from the two ports, and Markdown chunking for indexing documents.

:class:`VectorMemory` stores each chunk's text and source key as vector metadata, so a query
returns :class:`~seamkit._grounding.MemoryItem` values with their provenance (``origin``
``"recorded"``: they come from documents, not from a model). Light: no heavy import; the
embedding and vector backends are plugins (``seamkit-embeddings-st``, ``seamkit-vector-sqlite``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from seamkit.plugin import EmbeddingPort, MemoryItem, VectorPort
from seamkit.values import Scope, freeze

__all__ = ["Chunk", "VectorMemory", "chunk_markdown"]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document: ``source`` (``path#anchor``, the provenance key) and ``content``."""

    source: str
    content: str


def _slug(title: str) -> str:
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
    s = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return re.sub(r"\s", "-", s)


def chunk_markdown(text: str, path: str, *, max_chars: int = 1500) -> list[Chunk]:
    """Split a Markdown document into chunks at its headings (``#`` lines outside code fences),
    each keyed ``path#anchor`` (the heading's GitHub-style anchor; ``path`` alone before the first
    heading) and prefixed with its heading; a section longer than ``max_chars`` is split at blank
    lines (``#anchor-2``, ``-3``, ...). Empty sections are skipped. Raises ``ValueError`` for
    ``max_chars < 100``."""
    if max_chars < 100:
        raise ValueError(f"max_chars must be at least 100, got {max_chars}")
    sections: list[tuple[str, str, list[str]]] = []
    title, anchor = "", ""
    lines: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        if m:
            sections.append((title, anchor, lines))
            title, anchor, lines = m.group(2), _slug(m.group(2)), [line]
        else:
            lines.append(line)
    sections.append((title, anchor, lines))
    chunks: list[Chunk] = []
    for title, anchor, body in sections:
        content = "\n".join(body).strip()
        if not content or content == f"# {title}".strip():
            continue
        key = f"{path}#{anchor}" if anchor else path
        parts = _split(content, max_chars)
        for i, part in enumerate(parts):
            head = part if i == 0 or not title else f"{title} (continued)\n{part}"
            chunks.append(Chunk(key if i == 0 else f"{key}-{i + 1}", head))
    return chunks


def _split(content: str, max_chars: int) -> list[str]:
    if len(content) <= max_chars:
        return [content]
    parts: list[str] = []
    cur = ""
    for para in content.split("\n\n"):
        while len(para) > max_chars:  # one huge paragraph: cut it
            if cur:
                parts.append(cur)
                cur = ""
            parts.append(para[:max_chars])
            para = para[max_chars:]
        if cur and len(cur) + 2 + len(para) > max_chars:
            parts.append(cur)
            cur = para
        else:
            cur = f"{cur}\n\n{para}" if cur else para
    if cur:
        parts.append(cur)
    return parts


class VectorMemory:
    """A :class:`~seamkit._grounding.MemorySource` over an :class:`~seamkit._ports.EmbeddingPort`
    and a :class:`~seamkit._ports.VectorPort`. ``index(scope, chunks)`` embeds and stores chunks
    (the id is the source key, so indexing again replaces); ``retrieve(query, scope=, k=)``
    returns the ``k`` nearest chunks as items, best first, with the vector store's score."""

    def __init__(self, embedder: EmbeddingPort, vectors: VectorPort, *, batch: int = 64) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.batch = batch

    async def index(self, scope: Scope, chunks: Iterable[Chunk]) -> int:
        """Embed and store ``chunks`` for ``scope``; returns how many were stored."""
        todo = list(chunks)
        for start in range(0, len(todo), self.batch):
            part = todo[start:start + self.batch]
            vecs = await self.embedder.embed([c.content for c in part])
            await self.vectors.upsert(
                scope,
                [(c.source, v, {"source": c.source, "content": c.content, "origin": "recorded"})
                 for c, v in zip(part, vecs, strict=True)],
            )
        return len(todo)

    async def retrieve(self, query: str, *, scope: Scope, k: int = 5) -> Sequence[MemoryItem]:
        if not query.strip():
            return ()
        (vec,) = await self.embedder.embed([query])
        hits = await self.vectors.query(scope, vec, k=k)
        return tuple(
            MemoryItem(str(meta.get("content", "")), str(meta.get("source", hid)), float(score),
                       freeze({"origin": str(meta.get("origin", "recorded"))}))
            for hid, score, meta in hits
        )
