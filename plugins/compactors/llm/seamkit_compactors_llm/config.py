"""Configuration models of the LLM compactors (light: pydantic and seamkit._slots only).

Both take a ``model``: a provider slot (``NAME`` or ``{use: NAME, from: DIST, **params}``) marked
with :class:`~seamkit._slots.ComponentSlot`, so loading a composition resolves the provider and
validates its parameters (located at e.g. ``agent.middlewares[0].compactor.model.turns``) before
anything is built.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from seamkit.plugin import ComponentSlot, NestedSlot

__all__ = [
    "ModelSlot",
    "SummarizationConfig",
    "ImportanceConfig",
    "DEFAULT_SUMMARY_INSTRUCTIONS",
    "DEFAULT_IMPORTANCE_INSTRUCTIONS",
]

DEFAULT_SUMMARY_INSTRUCTIONS = (
    "You compress the earlier part of a conversation between a user, an assistant and its tools so "
    "the assistant can continue without it. Write a concise summary that keeps every fact, decision, "
    "number, name, identifier, file path, open question and commitment the assistant may still need, "
    "and what each tool call found. Do not address the user and do not add anything that is not in "
    "the conversation. Answer with the summary only."
)

DEFAULT_IMPORTANCE_INSTRUCTIONS = (
    "You decide which earlier turns of a conversation an assistant must still see to continue. The "
    "turns are numbered [0], [1], ... with their size in tokens. Answer with a JSON object "
    '{"keep": [indices]} listing the turns to keep, most important first; keep those holding facts, '
    "decisions, results and open questions the assistant may still need, and leave out chit-chat and "
    "superseded attempts. The kept turns must fit in the token allowance given."
)


ModelSlot = NestedSlot
"""The model: ``use`` (a provider component name), optional ``from`` and that provider's own parameters."""


class _LLMCompactorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: Annotated[ModelSlot, ComponentSlot("provider")] = Field(
        ..., description="The model the compactor calls: {use: <provider>, ...params} (or the provider's name).")
    keep_recent_units: int = Field(
        default=4, ge=1, le=10_000,
        description="The newest turn units (an assistant tool-call turn with all its results is one unit) "
                    "always kept verbatim and never shown to the compactor's model.")
    temperature: float | None = Field(
        default=0.0, ge=0, le=2, allow_inf_nan=False,
        description="Sampling temperature of the compactor's calls (None: the provider's).")
    max_block_chars: int = Field(
        default=4000, ge=100,
        description="Longest text (characters) of one block (message text, tool arguments, tool result) shown to "
                    "the compactor's model; longer ones are cut in the middle, saying how much was left out.")


class SummarizationConfig(_LLMCompactorConfig):
    """``summarization``: when the transcript is over the budget, the units between the leading
    system message and the ``keep_recent_units`` newest ones are summarised by ``model`` into one
    message (:func:`seamkit._compaction.summary_message`) that replaces them."""

    max_summary_tokens: int = Field(default=512, ge=16, le=100_000,
                                    description="Output-token limit of the summary (max_tokens of the call).")
    instructions: str = Field(default=DEFAULT_SUMMARY_INSTRUCTIONS, min_length=1,
                              description="System prompt of the summarising call.")
    summary_role: Literal["user", "assistant"] = Field(
        default="user", description="Role of the summary message (user is accepted by every provider).")


class ImportanceConfig(_LLMCompactorConfig):
    """``importance``: when the transcript is over the budget, ``model`` picks which older units
    (between the leading system message and the ``keep_recent_units`` newest ones) survive,
    answering ``{"keep": [indices]}`` (JSON Schema checked). An invalid answer falls back to
    keeping the newest older units that fit, with a warning."""

    instructions: str = Field(default=DEFAULT_IMPORTANCE_INSTRUCTIONS, min_length=1,
                              description="System prompt of the selecting call.")
    max_answer_tokens: int = Field(default=256, ge=16, le=100_000,
                                   description="Output-token limit of the selecting call (max_tokens).")
