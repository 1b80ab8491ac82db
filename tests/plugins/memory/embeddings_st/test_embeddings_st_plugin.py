"""Registration, configuration and cheap import of the ``sentence_transformers`` component."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError
from seamkit._plugins.registry import get_registry
from seamkit.errors import ConfigError
from seamkit_embeddings_st.config import SentenceTransformersConfig
from seamkit_embeddings_st.embeddings import SentenceTransformerEmbeddings, default_model_dir


def test_component_resolves_from_the_registry() -> None:
    registry = get_registry()
    assert "sentence_transformers" in registry.names("memory")
    spec = registry.resolve("memory", "sentence_transformers")
    assert spec.distribution == "seamkit-embeddings-st"
    assert spec.config_model() is SentenceTransformersConfig
    report = next(r for r in registry.reports if r.distribution == "seamkit-embeddings-st")
    assert report.status == "ok", report.error


def test_build_through_the_registry_validates_and_returns_an_embedder() -> None:
    spec = get_registry().resolve("memory", "sentence_transformers")
    embedder = spec.build({"batch_size": 8, "normalize": False})
    assert isinstance(embedder, SentenceTransformerEmbeddings)
    assert (embedder.batch_size, embedder.normalize, embedder.device) == (8, False, "cpu")
    assert embedder.model_dir == default_model_dir()
    assert embedder.dimensions == 384


@pytest.mark.parametrize(
    "params",
    [{"batch_size": 0}, {"batch_size": "many"}, {"device": "cuda"}, {"normalise": True}, {"model": ""}],
)
def test_bad_parameters_raise_config_error(params: dict[str, object]) -> None:
    spec = get_registry().resolve("memory", "sentence_transformers")
    with pytest.raises(ConfigError):
        spec.build(params)


def test_defaults() -> None:
    cfg = SentenceTransformersConfig()
    assert (cfg.model, cfg.batch_size, cfg.normalize, cfg.device) == (None, 32, True, "cpu")


def test_model_accepts_a_local_model_directory() -> None:
    cfg = SentenceTransformersConfig.model_validate({"model": str(default_model_dir())})
    assert cfg.model == default_model_dir()


def test_model_expands_the_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "modules.json").write_text("[]", encoding="utf-8")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert SentenceTransformersConfig(model="~/m").model == tmp_path / "m"  # type: ignore[arg-type]


def test_hub_ids_and_missing_paths_are_refused() -> None:
    with pytest.raises(ValidationError, match="only local paths are accepted"):
        SentenceTransformersConfig(model="sentence-transformers/all-MiniLM-L6-v2")  # type: ignore[arg-type]


def test_a_file_or_an_empty_directory_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"x")
    with pytest.raises(ValidationError, match="is not a directory"):
        SentenceTransformersConfig(model=f)
    with pytest.raises(ValidationError, match=r"neither modules\.json nor config\.json"):
        SentenceTransformersConfig(model=tmp_path)


def test_json_schema_documents_every_field() -> None:
    props = SentenceTransformersConfig.model_json_schema()["properties"]
    assert set(props) == {"model", "batch_size", "normalize", "device"}
    assert all(p.get("description") for p in props.values())


def test_plugin_config_and_building_do_not_import_torch() -> None:
    code = textwrap.dedent(
        """
        import sys
        import seamkit_embeddings_st.plugin, seamkit_embeddings_st.config
        from seamkit._plugins.registry import get_registry
        spec = get_registry().resolve("memory", "sentence_transformers")
        embedder = spec.build({})
        assert embedder.dimensions == 384
        heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules)
        print("HEAVY", heavy)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
