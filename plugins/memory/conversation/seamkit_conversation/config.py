"""Configuration of the conversation steps (light: pydantic only). A YAML step is
``{use: NAME, consumes: [...], emits: [...], <these parameters>}``; ``consumes`` / ``emits`` are the
workflow's, the rest is validated here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CompleteConfig", "ComposeConfig", "ContextualizeConfig", "MemoryServices", "RecallConfig",
           "RememberConfig"]

_SERVICE = r"^[A-Za-z_][A-Za-z0-9_.-]*$"


class ContextualizeConfig(BaseModel):
    """Parameters of ``use: contextualize``."""

    model_config = ConfigDict(extra="forbid")

    max_history: int = Field(default=8, ge=1, le=200,
                             description="Newest history messages shown to the model when it rewrites the query")
    title: bool = Field(default=True, description="Title an untitled thread (the input has no 'title')")
    title_chars: int = Field(default=60, ge=8, le=500,
                             description="Longest title, in characters (a longer one is cut at a word)")
    instructions: str | None = Field(default=None, min_length=1,
                                     description="Replaces the built-in instructions to the model")
    max_tokens: int = Field(default=200, ge=16, le=4096, description="Longest reply of the model, in tokens")
    model_service: str = Field(default="model", pattern=_SERVICE, description="The run service that is the model")


class MemoryServices(BaseModel):
    """Which run services are the memory: a vector store (VectorPort) and an embedding model
    (EmbeddingPort). Neither present = memory off."""

    model_config = ConfigDict(extra="forbid")

    vectors_service: str = Field(default="vectors", pattern=_SERVICE,
                                 description="The run service that is the vector store (VectorPort)")
    embeddings_service: str = Field(default="embeddings", pattern=_SERVICE,
                                    description="The run service that is the embedding model (EmbeddingPort)")


class RecallConfig(MemoryServices):
    """Parameters of ``use: recall``."""

    k: int = Field(default=4, ge=1, le=100, description="Most blocks returned")
    min_score: float | None = Field(default=None, ge=-1e9, le=1e9,
                                    description="Blocks scoring below this are left out (the store's score: "
                                    "cosine similarity for sqlite_vec)")


class RememberConfig(MemoryServices):
    """Parameters of ``use: remember``."""

    question: str = Field(default="question", min_length=1,
                          description="Key (event type) of the question in the step's input")
    answer: str = Field(default="answer", min_length=1,
                        description="Key (event type) of the answer in the step's input")
    max_chars: int = Field(default=4000, ge=100, le=100_000,
                           description="Longest text stored for one exchange (longer answers are cut)")


class ComposeConfig(BaseModel):
    """Parameters of ``use: compose``."""

    model_config = ConfigDict(extra="forbid")

    budget_tokens: int = Field(default=8000, ge=64, le=10_000_000,
                               description="Most input tokens of the composed messages (seamkit._tokens estimate)")
    system: str | None = Field(default=None, min_length=1,
                               description="A system message put first (the answering agent's own prompt "
                               "comes before all of these)")
    heading: str = Field(default="Context gathered for this message (cite a block by its [id]):", min_length=1,
                         description="First line of the system message holding the gathered blocks")
    tokenizer_model: str | None = Field(default=None, min_length=1,
                                        description="Model id whose registered tokenizer counts tokens "
                                        "(default: seamkit's character-class estimate)")


class CompleteConfig(BaseModel):
    """Parameters of ``use: complete``."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(default=3, ge=0, le=10, description="How many follow-up questions (0: none, no model call)")
    max_chars: int = Field(default=200, ge=10, le=2000, description="Longest follow-up question, in characters")
    instructions: str | None = Field(default=None, min_length=1,
                                     description="Replaces the built-in instructions to the model")
    max_tokens: int = Field(default=300, ge=16, le=4096, description="Longest reply of the model, in tokens")
    model_service: str = Field(default="model", pattern=_SERVICE, description="The run service that is the model")
