"""Grounding values and citations (seamkit._grounding)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._durability.codec import decode, dumps, encode, loads
from seamkit._grounding import (
    MemoryItem,
    MemorySource,
    citation_id,
    cite_ids,
    find_citations,
    not_inferred,
    render_items,
    unknown_citations,
)
from seamkit.values import FrozenDict, Scope


def test_citation_id_is_s_plus_six_hex_of_sha256_of_the_source() -> None:
    item = MemoryItem("text", "docs/guide.md#install")
    expected = "s" + hashlib.sha256(b"docs/guide.md#install").hexdigest()[:6]
    assert item.citation_id == expected == citation_id("docs/guide.md#install")
    # the content, score and metadata do not change it: it names the source
    assert MemoryItem("other", "docs/guide.md#install", 0.3, {"origin": "inferred"}).citation_id == expected
    assert MemoryItem("text", "docs/guide.md#usage").citation_id != expected


def test_memory_item_validation_and_origin() -> None:
    assert MemoryItem("a", "x").origin == "recorded"
    item = MemoryItem("a", "x", metadata={"origin": "inferred", "tags": ["t"]})
    assert item.origin == "inferred"
    assert type(item.metadata) is FrozenDict
    with pytest.raises(TypeError):
        item.metadata["origin"] = "recorded"  # type: ignore[index]
    with pytest.raises(ValueError, match="origin must be one of recorded, inferred"):
        MemoryItem("a", "x", metadata={"origin": "guessed"})
    with pytest.raises(ValueError, match="source"):
        MemoryItem("a", "")
    with pytest.raises(TypeError, match="content must be a str"):
        MemoryItem(3, "x")  # type: ignore[arg-type]


def test_memory_item_round_trips_through_the_codec() -> None:
    items = (MemoryItem("Install with pip.", "docs/a.md#install", 0.82, {"origin": "recorded", "n": 1}),
             MemoryItem("café ✓", "https://example.org/x", None))
    assert loads(dumps(items)) == items
    assert decode(encode(list(items))) == list(items)


def test_default_render_is_one_line_per_item_with_its_id_and_source() -> None:
    a = MemoryItem("first line\n\n  second line ", "docs/a.md#x")
    b = MemoryItem("b", "docs/b.md")
    text = render_items([a, b])
    assert text.splitlines() == [f"[{a.citation_id}] docs/a.md#x: first line second line",
                                 f"[{b.citation_id}] docs/b.md: b"]
    assert render_items([]) == ""


def test_find_citations_formats() -> None:
    text = ("As [s1a2b3c] says, and [s4d5e6f, s0a0b0c] agree; see also s9f8e7d. "
            "Not ids: sdeface, [see s1], [note: s777777 is cited], s1234567, xs123456, [S1A2B3C]. Again [s1a2b3c].")
    assert find_citations(text) == ["s1a2b3c", "s4d5e6f", "s0a0b0c", "s9f8e7d", "s777777"]
    assert find_citations("") == []
    assert find_citations("[sabcdef]") == ["sabcdef"]  # bracketed: letters-only ids count too
    assert find_citations("sabcdef") == []  # bare: needs a digit (plain words are not ids)


def test_unknown_citations_are_reported() -> None:
    a = MemoryItem("a", "docs/a.md")
    b = MemoryItem("b", "docs/b.md")
    answer = f"Per [{a.citation_id}] and [{b.citation_id}, s000000] and [s123abc]."
    assert unknown_citations(answer, [a, b]) == ["s000000", "s123abc"]
    assert unknown_citations(f"only [{a.citation_id}]", [a]) == []
    assert cite_ids([a, b, a]) == [a.citation_id, b.citation_id]


def test_not_inferred_refuses_items_a_model_wrote() -> None:
    assert not_inferred(MemoryItem("a", "x"))
    assert not_inferred(MemoryItem("a", "x", metadata={"origin": "recorded"}))
    assert not not_inferred(MemoryItem("a", "x", metadata={"origin": "inferred"}))


def test_memory_source_protocol() -> None:
    class Source:
        async def retrieve(self, query: str, *, scope: Scope, k: int = 5) -> Sequence[MemoryItem]:
            return ()

    assert isinstance(Source(), MemorySource)
    assert not isinstance(object(), MemorySource)


_sources = st.text(min_size=1, max_size=40)


@given(st.lists(_sources, min_size=1, max_size=6, unique=True), st.text(max_size=60))
def test_rendered_ids_are_found_and_known(sources: list[str], noise: str) -> None:
    items = [MemoryItem("c", s) for s in sources]
    answer = noise.replace("[", "(") + " " + " ".join(f"[{i.citation_id}]" for i in items)
    found = find_citations(answer)
    assert set(cite_ids(items)) <= set(found)
    assert unknown_citations(" ".join(f"[{i.citation_id}]" for i in items), items) == []


@given(st.text(max_size=200))
def test_find_citations_never_raises_and_returns_ids(text: str) -> None:
    for cid in find_citations(text):
        assert len(cid) == 7 and cid[0] == "s" and all(ch in "0123456789abcdef" for ch in cid[1:])
