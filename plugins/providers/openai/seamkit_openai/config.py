"""Configuration of the ``openai`` and ``openai_chat`` provider components (imports only pydantic).

Public API (stable; used by ``seamkit_openai.chat`` and ``seamkit_openai.responses``):

- :data:`ReasoningEffort`: ``"none" | "minimal" | "low" | "medium" | "high" | "xhigh"``.
- :class:`CapabilityOverrides`: a partial mapping of the fields of
  :class:`seamkit_openai.capabilities.Capabilities` (every field optional; ``None`` = keep the table's).
- :class:`PriceOverride`: ``{input, output, cache_read?, cache_write?}`` USD per million tokens.
- :class:`OpenAIConfigBase`: the fields both components share (``model``, ``api_key``,
  ``api_key_env``, ``base_url``, ``organization``, ``project``, ``headers``, ``timeout_s``,
  ``connect_timeout_s``, ``http2``, ``capabilities``, ``price``, ``local``, ``reasoning_effort``).
- :class:`OpenAIChatConfig` (``use: openai_chat``) and :class:`OpenAIResponsesConfig` (``use: openai``).

Secrets: ``api_key`` is a ``SecretStr`` and every ``headers`` value is a ``SecretStr``, so neither
shows in ``repr``/``str`` of a config or in validation errors. Environment variables
(``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``) are read at
dispatch, not here (see :mod:`seamkit_openai._common`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from seamkit.plugin import HTTPProviderConfig, PriceOverride

__all__ = [
    "ReasoningEffort",
    "EFFORT_ORDER",
    "CapabilityOverrides",
    "PriceOverride",
    "OpenAIConfigBase",
    "OpenAIChatConfig",
    "OpenAIResponsesConfig",
    "DEFAULT_BASE_URL",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
EFFORT_ORDER: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh")
"""Reasoning effort levels from least to most reasoning (for mapping to the nearest supported one)."""


class CapabilityOverrides(BaseModel):
    """What a model can take, overriding the built-in table (``seamkit_openai.capabilities``).
    Every field is optional: only the ones given replace the table's values. Use it to describe a
    local / OpenAI-compatible server (e.g. ``{json_schema: false, stream_options: false}``)."""

    model_config = ConfigDict(extra="forbid")

    reasoning: bool | None = Field(default=None, description="A reasoning model (o-series, gpt-5)")
    temperature: bool | None = Field(default=None, description="Accepts temperature (false on reasoning models)")
    json_schema: bool | None = Field(
        default=None, description="Accepts response_format / text.format of type json_schema"
    )
    json_object: bool | None = Field(
        default=None, description="Accepts JSON mode (response_format type json_object) as a fallback"
    )
    json_object_schema: bool | None = Field(
        default=None,
        description="Without json_schema: send the schema inside JSON mode, {type: json_object, schema: ...} "
        "(llama-cpp-python's server, Anyscale style)",
    )
    strict_schema: bool | None = Field(
        default=None, description="Compile output schemas to OpenAI strict mode and send strict: true"
    )
    strict_tools: bool | None = Field(default=None, description="Send tools with strict: true (strict-compiled)")
    stream_options: bool | None = Field(
        default=None, description="Accepts stream_options: {include_usage: true} (chat completions)"
    )
    parallel_tool_calls: bool | None = Field(default=None, description="Accepts the parallel_tool_calls setting")
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = Field(
        default=None, description="Name of the output-token limit in chat completions"
    )
    reasoning_efforts: list[ReasoningEffort] | None = Field(
        default=None, description="Reasoning effort levels the model accepts (empty: no reasoning_effort)"
    )
    developer_role: bool | None = Field(
        default=None, description="System instructions go in a 'developer' message instead of 'system'"
    )
    system_role: bool | None = Field(
        default=None, description="Accepts system/developer messages at all (false: sent as a user message)"
    )
    tools: bool | None = Field(default=None, description="Accepts tools")
    images: bool | None = Field(default=None, description="Accepts image inputs")
    seed: bool | None = Field(default=None, description="Accepts seed")
    stop: bool | None = Field(default=None, description="Accepts stop sequences")

    def as_changes(self) -> dict[str, Any]:
        """The fields that were given, as a dict (lists become tuples)."""
        out: dict[str, Any] = {}
        for k, v in self.model_dump(exclude_none=True).items():
            out[k] = tuple(v) if isinstance(v, list) else v
        return out


class OpenAIConfigBase(HTTPProviderConfig):
    """Fields shared by ``use: openai`` and ``use: openai_chat``.

    Credentials: ``api_key`` when given; otherwise, at dispatch, the environment variable named by
    ``api_key_env`` when set, else ``OPENAI_API_KEY`` when the base URL is OpenAI's (the default,
    ``api.openai.com``, or ``OPENAI_BASE_URL``) — an OpenAI key is never sent to another host
    unasked. No key for a non-OpenAI host (a local server): no ``Authorization`` header.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        min_length=1, description="Model id, e.g. gpt-4.1-mini, gpt-5, o4-mini, or a local server's model"
    )
    api_key: SecretStr | None = Field(
        default=None, description="API key (default: $OPENAI_API_KEY read at dispatch, for OpenAI's base URL)"
    )
    api_key_env: str | None = Field(
        default=None, description="Name of an environment variable holding the API key (e.g. OPENROUTER_API_KEY)"
    )
    base_url: str | None = Field(
        default=None,
        description="API base URL (default: $OPENAI_BASE_URL, else https://api.openai.com/v1); e.g. "
        "http://127.0.0.1:8080/v1 for a llama.cpp server",
    )
    organization: str | None = Field(default=None, description="OpenAI-Organization header (default: $OPENAI_ORG_ID)")
    project: str | None = Field(default=None, description="OpenAI-Project header (default: $OPENAI_PROJECT_ID)")
    capabilities: CapabilityOverrides | None = Field(
        default=None, description="Overrides of the model's capabilities (partial mapping)"
    )
    reasoning_effort: ReasoningEffort | None = Field(
        default=None,
        description="Reasoning effort for reasoning models; a level the model lacks is mapped to the nearest "
        "supported one, with a warning",
    )




class OpenAIChatConfig(OpenAIConfigBase):
    """Parameters of ``use: openai_chat`` (the Chat Completions API, ``POST {base_url}/chat/completions``;
    also any OpenAI-compatible server: vLLM, llama.cpp server, Ollama, OpenRouter, DeepSeek)."""


class OpenAIResponsesConfig(OpenAIConfigBase):
    """Parameters of ``use: openai`` (the Responses API, ``POST {base_url}/responses``).

    ``reasoning_summary``: ask reasoning models for a summary of their reasoning
    (``reasoning.summary``); ``store``: let OpenAI store the response (default false: reasoning
    items are then kept through ``encrypted_content``)."""

    reasoning_summary: Literal["auto", "concise", "detailed"] | None = Field(
        default="auto", description="reasoning.summary for reasoning models (null: none)"
    )
    store: bool = Field(default=False, description="Let OpenAI store responses (store: true)")
