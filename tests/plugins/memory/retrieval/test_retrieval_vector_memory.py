"""``vector_memory`` composed from YAML: the real MiniLM embeddings and sqlite-vec store, Markdown
files indexed on first use, an agent's request grounded with cited sections."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from seamkit._grounding import MemorySource, citation_id
from seamkit.composition import build_agent, load_composition
from seamkit.errors import ConfigError
from seamkit.values import Scope

pytestmark = pytest.mark.slow

AGENT = """\
seamkit: 1
agent:
  name: docs
  model: {use: scripted, turns: ["See the guide."]}
  prompt: Answer from the sources.
  checkpoints: null
  context:
    grounding:
      use: vector_memory
      embeddings: sentence_transformers
      vectors: {use: sqlite_vec, dimensions: 384, path: vectors.db}
      index: [notes/*.md]
    k: 2
"""

NOTES = {
    "pets.md": "# Cats\n\nCats purr and sleep most of the day.\n\n# Dogs\n\nDogs bark and fetch sticks.\n",
    "ops.md": "# Backups\n\nBackups run every night at two and are kept for thirty days.\n",
}


def _write(tmp_path: Path, agent: str = AGENT) -> Path:
    (tmp_path / "notes").mkdir()
    for name, text in NOTES.items():
        (tmp_path / "notes" / name).write_text(text)
    (tmp_path / "agent.yaml").write_text(agent)
    return tmp_path / "agent.yaml"


async def test_yaml_grounding_indexes_on_first_use_and_cites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    agent = build_agent(load_composition(_write(tmp_path)))
    source: Any = agent.request_builder.grounding  # type: ignore[attr-defined]
    assert isinstance(source, MemorySource)
    try:
        result = await agent.run("How long are backups kept?")
        sent = agent.model.requests[0].messages[0].text  # type: ignore[attr-defined]
        key = (tmp_path / "notes" / "ops.md").as_posix() + "#backups"
        assert f"[{citation_id(key)}] {key}: # Backups" in sent
        assert result.output == "See the guide."
        items = await source.retrieve("Which animal barks?", scope=Scope(), k=1)
        assert items[0].source.endswith("pets.md#dogs")
        # another tenant gets its own index of the same files on first use
        assert await source.retrieve("Which animal barks?", scope=Scope(tenant="other"), k=1) != ()
    finally:
        await source.aclose()


def test_bad_nested_components_are_located_at_load(tmp_path: Path) -> None:
    path = _write(tmp_path, AGENT.replace("embeddings: sentence_transformers", "embeddings: sentence_transformer")
                  .replace("dimensions: 384", "dimensions: 384, metrc: cosine"))
    with pytest.raises(ConfigError) as info:
        load_composition(path)
    lines = str(info.value).splitlines()[1:]
    assert any(":10:19: agent.context.grounding.embeddings: unknown memory 'sentence_transformer'; did you mean "
               "'sentence_transformers'? (installed memory components:" in line for line in lines), lines
    assert any(":11:51: agent.context.grounding.vectors.metrc: unknown key 'metrc'" in line for line in lines), lines


def test_an_index_pattern_matching_nothing_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, AGENT.replace("notes/*.md", "nowhere/*.md"))
    with pytest.raises(ConfigError, match="matches no file"):
        build_agent(load_composition(path))


def test_nested_components_are_checked_against_their_ports(tmp_path: Path) -> None:
    """Issue 10, item 21: the embeddings and vectors slots name the port a component misses."""
    swapped = AGENT.replace("embeddings: sentence_transformers", "embeddings: {use: sqlite_vec, dimensions: 384}")
    with pytest.raises(ConfigError) as info:
        build_agent(load_composition(_write(tmp_path, swapped)))
    (issue,) = info.value.issues
    assert issue.path == "agent.context.grounding.embeddings"
    assert issue.message.startswith("memory 'vector_memory': memory 'sqlite_vec' (from seamkit-vector-sqlite) built ")
    assert "which does not satisfy the embedding port (EmbeddingPort): missing embed()" in issue.message
