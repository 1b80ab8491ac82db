"""The real bundled all-MiniLM-L6-v2 on the CPU: shape, determinism, normalisation, semantics."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from seamkit._ports import EmbeddingPort
from seamkit.errors import PluginError
from seamkit_embeddings_st.config import SentenceTransformersConfig
from seamkit_embeddings_st.embeddings import SentenceTransformerEmbeddings, build, default_model_dir, read_dimensions

pytestmark = pytest.mark.slow


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(a: list[float]) -> float:
    return math.sqrt(dot(a, a))


def test_dimensions_known_before_loading() -> None:
    embedder = build(SentenceTransformersConfig())
    assert embedder.dimensions == 384
    assert embedder.load_seconds is None  # nothing was loaded to answer
    assert read_dimensions(default_model_dir()) == 384


async def test_vectors_have_384_floats_and_satisfy_the_port(
    st_embedder: SentenceTransformerEmbeddings, no_network: None
) -> None:
    assert isinstance(st_embedder, EmbeddingPort)
    vectors = await st_embedder.embed(["The cat sat on the mat.", "Quarterly revenue grew 4%."])
    assert len(vectors) == 2
    assert all(len(v) == 384 for v in vectors)
    assert all(isinstance(x, float) for v in vectors for x in v)
    assert vectors[0] != vectors[1]


async def test_deterministic_across_calls_and_instances(
    st_embedder: SentenceTransformerEmbeddings, no_network: None
) -> None:
    text = "Seamkit grounds requests with cited sources."
    first = (await st_embedder.embed([text]))[0]
    second = (await st_embedder.embed([text]))[0]
    other_instance = (await build(SentenceTransformersConfig()).embed([text]))[0]
    assert first == second == other_instance
    # inside a batch of other texts (padding differs) the vector is the same up to float noise
    in_batch = (await st_embedder.embed(["a much longer neighbouring sentence " * 8, text]))[1]
    assert max(abs(x - y) for x, y in zip(first, in_batch, strict=True)) < 1e-5


async def test_vectors_are_unit_length_by_default(st_embedder: SentenceTransformerEmbeddings, no_network: None) -> None:
    vectors = await st_embedder.embed(["short", "a somewhat longer sentence about vector stores", "ünïcödé ✓ 数据"])
    for v in vectors:
        assert norm(v) == pytest.approx(1.0, abs=1e-5)


def _model_without_normalize_module(target: Path) -> Path:
    """A copy of the bundled model (files symlinked) whose pipeline lacks the final Normalize
    module, so its raw vectors are not unit length."""
    source = default_model_dir()
    for item in source.iterdir():
        if item.name != "modules.json":
            (target / item.name).symlink_to(item)
    modules = json.loads((source / "modules.json").read_text(encoding="utf-8"))
    kept = [m for m in modules if not m["type"].endswith(".Normalize")]
    assert len(kept) == len(modules) - 1
    (target / "modules.json").write_text(json.dumps(kept), encoding="utf-8")
    return target


async def test_normalize_flag(st_embedder: SentenceTransformerEmbeddings, tmp_path: Path, no_network: None) -> None:
    model_dir = _model_without_normalize_module(tmp_path)
    text = "The raw mean-pooled vector is not unit length."
    (raw_vec,) = await build(SentenceTransformersConfig(model=model_dir, normalize=False)).embed([text])
    (forced,) = await build(SentenceTransformersConfig(model=model_dir, normalize=True)).embed([text])
    (unit_vec,) = await st_embedder.embed([text])
    assert abs(norm(raw_vec) - 1.0) > 1e-2
    assert norm(forced) == pytest.approx(1.0, abs=1e-5)
    scaled = [x / norm(raw_vec) for x in raw_vec]
    assert max(abs(x - y) for x, y in zip(scaled, unit_vec, strict=True)) < 1e-5
    assert max(abs(x - y) for x, y in zip(forced, unit_vec, strict=True)) < 1e-5


async def test_similar_sentences_are_closer_than_unrelated(
    st_embedder: SentenceTransformerEmbeddings, no_network: None
) -> None:
    a, b, c, d = await st_embedder.embed(
        [
            "How do I reset my password?",
            "I forgot my password and need to change it.",
            "The recipe calls for two cups of flour.",
            "Volcanic eruptions release sulfur dioxide into the atmosphere.",
        ]
    )
    assert dot(a, b) > 0.5
    assert dot(a, b) > dot(a, c) + 0.3
    assert dot(a, b) > dot(a, d) + 0.3
    assert dot(b, a) > dot(b, c)


async def test_empty_batch_returns_no_vectors_without_loading(no_network: None) -> None:
    fresh = SentenceTransformerEmbeddings(SentenceTransformersConfig())
    assert await fresh.embed([]) == []
    assert await fresh.embed(()) == []
    assert fresh.load_seconds is None


async def test_many_texts_keep_their_order(st_embedder: SentenceTransformerEmbeddings, no_network: None) -> None:
    texts = [f"document {i}: {'alpha beta gamma ' * (i % 7)}topic number {i % 13}" for i in range(150)]
    small_batches = build(SentenceTransformersConfig(batch_size=7))
    vectors = await small_batches.embed(texts)
    assert len(vectors) == 150
    assert all(len(v) == 384 for v in vectors)
    for i in (0, 1, 73, 149):
        (alone,) = await st_embedder.embed([texts[i]])
        assert max(abs(x - y) for x, y in zip(vectors[i], alone, strict=True)) < 1e-5
    # duplicates inside one batch get the same vector
    dup = await st_embedder.embed(["same text", "other", "same text"])
    assert max(abs(x - y) for x, y in zip(dup[0], dup[2], strict=True)) < 1e-5


async def test_empty_string_is_embedded(st_embedder: SentenceTransformerEmbeddings, no_network: None) -> None:
    (v,) = await st_embedder.embed([""])
    assert len(v) == 384
    assert norm(v) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("bad", ["a single string", b"bytes"])
async def test_single_string_is_refused(st_embedder: SentenceTransformerEmbeddings, bad: object) -> None:
    with pytest.raises(TypeError, match="sequence of strings"):
        await st_embedder.embed(bad)  # type: ignore[arg-type]


async def test_non_string_item_is_refused(st_embedder: SentenceTransformerEmbeddings) -> None:
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        await st_embedder.embed(["ok", 3])  # type: ignore[list-item]


async def test_loading_sets_offline_environment(st_embedder: SentenceTransformerEmbeddings) -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"


async def test_broken_model_directory_raises_plugin_error(tmp_path: Path, no_network: None) -> None:
    (tmp_path / "config.json").write_text("{ not json", encoding="utf-8")
    embedder = build(SentenceTransformersConfig(model=tmp_path))
    with pytest.raises(PluginError, match="cannot load the sentence-transformers model at"):
        await embedder.embed(["x"])
