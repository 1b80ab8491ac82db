"""Markdown chunking and VectorMemory over the embedding and vector ports (fakes here; the real
backends are exercised by tests/examples/test_docs_retrieval.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._grounding import MemorySource
from seamkit.values import Scope
from seamkit_retrieval.vector_memory import VectorMemory, chunk_markdown

DOC = """Intro line.

# Getting started

Install it.

```bash
# not a heading
pip install seamkit
```

## Run: the `main` job!

Run it.
"""


def test_sections_are_keyed_by_heading_anchor_and_fences_are_not_headings() -> None:
    chunks = chunk_markdown(DOC, "docs/a.md")
    assert [c.source for c in chunks] == ["docs/a.md", "docs/a.md#getting-started", "docs/a.md#run-the-main-job"]
    assert "# not a heading" in chunks[1].content and chunks[2].content.startswith("## Run")


def test_long_sections_are_split_at_blank_lines() -> None:
    body = "\n\n".join(f"paragraph {i} " + "x" * 80 for i in range(40))
    chunks = chunk_markdown(f"# Big\n\n{body}", "d.md", max_chars=500)
    assert chunks[0].source == "d.md#big" and chunks[1].source == "d.md#big-2"
    assert all(len(c.content) <= 500 + len("Big (continued)\n") for c in chunks)
    assert chunks[1].content.startswith("Big (continued)")
    with pytest.raises(ValueError):
        chunk_markdown("x", "d.md", max_chars=10)


@given(st.text(alphabet=st.sampled_from("ab #\n`"), max_size=400))
def test_chunking_never_loses_non_blank_text(text: str) -> None:
    chunks = chunk_markdown(text, "p.md", max_chars=100)
    kept = "".join("".join(c.content.split()) for c in chunks)
    for line in text.splitlines():
        assert "".join(line.split()) in kept or not line.strip() or line.strip().startswith("#")


class BagEmbedder:
    dimensions = 3

    async def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        out = []
        for t in texts:
            v = [t.count("cat") + 0.01, t.count("dog") + 0.01, t.count("fish") + 0.01]
            n = math.sqrt(sum(x * x for x in v))
            out.append([x / n for x in v])
        return out


class ListVectors:
    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], tuple[Sequence[float], Mapping[str, Any]]] = {}

    async def upsert(self, scope: Scope, items: Sequence[tuple[str, Sequence[float], Mapping[str, Any]]]) -> None:
        for i, v, m in items:
            self.rows[(scope.tenant, i)] = (v, m)

    async def query(self, scope: Scope, vector: Sequence[float], *, k: int = 5,
                    where: Mapping[str, Any] | None = None) -> Sequence[tuple[str, float, Mapping[str, Any]]]:
        hits = [(i, sum(a * b for a, b in zip(v, vector, strict=True)), m)
                for (t, i), (v, m) in self.rows.items() if t == scope.tenant]
        return sorted(hits, key=lambda h: -h[1])[:k]


async def test_vector_memory_returns_items_with_provenance_best_first() -> None:
    mem = VectorMemory(BagEmbedder(), ListVectors())
    assert isinstance(mem, MemorySource)
    chunks = chunk_markdown("# Cats\n\ncat cat cat\n\n# Dogs\n\ndog dog\n\n# Fish\n\nfish", "pets.md")
    assert await mem.index(Scope(), chunks) == 3
    items = await mem.retrieve("a dog?", scope=Scope(), k=2)
    assert [i.source for i in items] == ["pets.md#dogs", items[1].source]
    assert items[0].content.endswith("dog dog") and items[0].origin == "recorded"
    assert items[0].score is not None and items[0].score > (items[1].score or 0)
    assert await mem.retrieve("dog", scope=Scope(tenant="t2")) == ()
    assert await mem.retrieve("   ", scope=Scope()) == ()
