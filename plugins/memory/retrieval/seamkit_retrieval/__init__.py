"""seamkit-retrieval: the ``vector_memory`` grounding source (see :mod:`seamkit_retrieval.memory`)
and what it is built on, :class:`VectorMemory` and Markdown chunking
(:mod:`seamkit_retrieval.vector_memory`; the conversation steps use it too).

Importing this package is cheap; the modules load on first attribute access."""

from __future__ import annotations

from seamkit.plugin import lazy_attributes

TYPE_CHECKING = False

_EXPORTS = {
    "Chunk": "seamkit_retrieval.vector_memory",
    "VectorMemory": "seamkit_retrieval.vector_memory",
    "chunk_markdown": "seamkit_retrieval.vector_memory",
}

__all__ = ["Chunk", "VectorMemory", "chunk_markdown"]

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from seamkit_retrieval.vector_memory import Chunk, VectorMemory, chunk_markdown
