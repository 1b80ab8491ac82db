"""Retrieval over this project's own docs/: embed every section with the local MiniLM model,
store the vectors in SQLite (sqlite-vec), ground an agent's request with the nearest sections and
check the citations of its answer. Everything runs offline, on the CPU.

    .venv/bin/python examples/docs_retrieval.py "How do I resume a suspended run?"

Each section is a grounding item keyed ``docs/<file>.md#<heading>``; the model sees one
``[sXXXXXX] source: text`` line per item and cites ids in square brackets. The answer's citations
are checked against what it was shown. The bundled Gemma 3 270M is a tiny base model: expect a
poor answer from it; the retrieval and the citation checks are the point.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from seamkit import Agent
from seamkit.plugin import RequestBuilder, find_citations, get_registry
from seamkit.values import Scope
from seamkit_retrieval.vector_memory import VectorMemory, chunk_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"
PROMPT = ("Answer the question from the sources below only. Cite every source you use by its id in "
          "square brackets, e.g. [s1a2b3c].")


async def build_memory(db_path: Path, *, docs: Path = DOCS, scope: Scope = Scope()) -> tuple[VectorMemory, int]:
    """Index every ``*.md`` under ``docs`` into a sqlite-vec store at ``db_path``; returns the
    memory and the number of chunks stored."""
    reg = get_registry()
    embedder = reg.resolve("memory", "sentence_transformers").build({})
    vectors = reg.resolve("memory", "sqlite_vec").build({"dimensions": embedder.dimensions, "path": str(db_path)})
    memory = VectorMemory(embedder, vectors)
    chunks = [c for p in sorted(docs.glob("*.md"))  # noqa: ASYNC240 - a few small files, once, at start-up
              for c in chunk_markdown(p.read_text("utf-8"), f"docs/{p.name}")]
    return memory, await memory.index(scope, chunks)


def docs_agent(model: Any, memory: VectorMemory, *, k: int = 4) -> Agent:
    """An agent whose every request is grounded in the ``k`` nearest doc sections."""
    return Agent(model=model, name="docs", request_builder=RequestBuilder(prompt=PROMPT, grounding=memory, k=k),
                 max_steps=1)


async def main(question: str) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        memory, n = await build_memory(Path(tmp) / "vectors.db")
        print(f"indexed {n} sections of docs/", file=sys.stderr)
        for item in await memory.retrieve(question, scope=Scope(), k=4):
            print(f"  [{item.citation_id}] {item.source}  score {item.score:.3f}", file=sys.stderr)
        model = get_registry().resolve("provider", "llamacpp").build({"max_tokens": 128})
        result = await docs_agent(model, memory).run(question)
        await memory.vectors.aclose()  # type: ignore[attr-defined]
    print(result.output)
    print(f"cited: {find_citations(str(result.output)) or 'nothing'}", file=sys.stderr)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(" ".join(sys.argv[1:]) or "How do I resume a suspended run?")))
