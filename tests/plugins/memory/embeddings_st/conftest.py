"""Shared fixtures: one real all-MiniLM-L6-v2 embedder per test session, loaded with the network
blocked (the model must load fully offline)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from seamkit.testing._network import block_network
from seamkit_embeddings_st.config import SentenceTransformersConfig
from seamkit_embeddings_st.embeddings import SentenceTransformerEmbeddings, build


@pytest.fixture(scope="session")
def st_embedder() -> Iterator[SentenceTransformerEmbeddings]:
    embedder = build(SentenceTransformersConfig())
    with block_network():
        asyncio.run(embedder.embed(["warm-up"]))
    yield embedder
