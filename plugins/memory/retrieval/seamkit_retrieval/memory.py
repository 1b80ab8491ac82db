"""``vector_memory``: :class:`seamkit_retrieval.VectorMemory` built from two registered memory
components, with Markdown files indexed on first use."""

from __future__ import annotations

import asyncio
import glob
from collections.abc import Sequence
from pathlib import Path

from seamkit.errors import ConfigError, ConfigIssue
from seamkit.plugin import EmbeddingPort, MemoryItem, Port, VectorPort, build_nested, get_registry, port_problems
from seamkit.values import Scope

from seamkit_retrieval.config import MemorySlot, VectorMemoryConfig
from seamkit_retrieval.vector_memory import VectorMemory, chunk_markdown

__all__ = ["IndexedVectorMemory", "build"]


def _component(slot: MemorySlot, at: str, port: Port) -> object:
    """Build the memory component of ``slot`` (written at ``at``) and check it against ``port``.
    Raises :class:`~seamkit.errors.ConfigError` located at ``at`` for an unknown component, bad
    parameters, or a component that does not satisfy ``port`` (naming each missing member)."""
    component = build_nested("memory", slot, at=at)
    problems = port_problems(component, port)
    if problems:
        dist = get_registry().resolve("memory", slot.use, slot.from_).distribution
        raise ConfigError([ConfigIssue(
            f"memory {slot.use!r} (from {dist}) built {type(component).__name__}, which does not "
            f"satisfy {port.label}: {'; '.join(problems)}", at)])
    return component


_EMBEDDINGS = Port("the embedding port (EmbeddingPort)", EmbeddingPort)
_VECTORS = Port("the vector port (VectorPort)", VectorPort)


class IndexedVectorMemory(VectorMemory):
    """A :class:`~seamkit_retrieval.VectorMemory` that indexes ``files`` (Markdown) the first time
    it is asked in a tenant (once per process and tenant)."""

    def __init__(self, embedder: object, vectors: object, files: Sequence[Path], *, max_chars: int = 1500) -> None:
        super().__init__(embedder, vectors)  # type: ignore[arg-type]
        self.files = tuple(files)
        self.max_chars = max_chars
        self._indexed: dict[str, asyncio.Lock] = {}
        self._done: set[str] = set()

    async def _ensure_indexed(self, scope: Scope) -> None:
        if not self.files or scope.tenant in self._done:
            return
        lock = self._indexed.setdefault(scope.tenant, asyncio.Lock())
        async with lock:
            if scope.tenant in self._done:
                return
            texts = await asyncio.to_thread(lambda: [(p, p.read_text("utf-8")) for p in self.files])
            chunks = [c for p, text in texts for c in chunk_markdown(text, p.as_posix(), max_chars=self.max_chars)]
            await self.index(scope, chunks)
            self._done.add(scope.tenant)

    async def retrieve(self, query: str, *, scope: Scope, k: int = 5) -> Sequence[MemoryItem]:
        await self._ensure_indexed(scope)
        return await super().retrieve(query, scope=scope, k=k)

    async def aclose(self) -> None:
        close = getattr(self.vectors, "aclose", None)
        if close is not None:
            await close()


def build(config: VectorMemoryConfig) -> IndexedVectorMemory:
    """The component factory. Raises :class:`~seamkit.errors.ConfigError` located at
    ``embeddings``/``vectors`` for an unknown component, bad parameters or a component that is not
    an embedding / vector port, and at ``index`` for a pattern matching no file."""
    files: list[Path] = []
    for pattern in config.index:
        found = sorted(Path(p) for p in glob.glob(str(pattern), recursive=True) if Path(p).is_file())
        if not found:
            raise ConfigError([ConfigIssue(f"{pattern} matches no file", "index")])
        files.extend(found)
    embedder = _component(config.embeddings, "embeddings", _EMBEDDINGS)
    vectors = _component(config.vectors, "vectors", _VECTORS)
    dims = getattr(embedder, "dimensions", None)
    vdims = getattr(vectors, "dimensions", None)
    if dims is not None and vdims is not None and dims != vdims:
        raise ConfigError([ConfigIssue(f"the embeddings have {dims} dimensions, the vector store holds {vdims}",
                                       "vectors.dimensions")])
    return IndexedVectorMemory(embedder, vectors, files, max_chars=config.max_chars)
