"""Configuration of the ``anthropic`` provider component (imports only pydantic).

- :class:`AnthropicConfig`: ``use: anthropic`` parameters.
- :class:`ThinkingEnabled` / :class:`ThinkingAdaptive`: the ``thinking`` setting, as the Messages
  API takes it (``{type: enabled, budget_tokens}`` or ``{type: adaptive, display?}``).
- :class:`CapabilityOverrides`: a partial mapping of
  :class:`seamkit_anthropic.capabilities.Capabilities` fields.
- :class:`PriceOverride`: ``{input, output, cache_read?, cache_write?}`` USD per million tokens.

Secrets: ``api_key`` and ``auth_token`` are ``SecretStr`` and every ``headers`` value is a
``SecretStr``, so none shows in ``repr``/``str`` of a config or in validation errors. The
environment (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``, ``ANTHROPIC_BASE_URL``) is read at
dispatch, as the official SDK reads it, not here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from seamkit.plugin import HTTPProviderConfig, PriceOverride

__all__ = [
    "AnthropicConfig",
    "ThinkingEnabled",
    "ThinkingAdaptive",
    "CapabilityOverrides",
    "PriceOverride",
    "DEFAULT_BASE_URL",
    "API_VERSION",
    "INTERLEAVED_BETA",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class ThinkingEnabled(BaseModel):
    """Extended thinking with a token budget: ``{type: enabled, budget_tokens: N}`` (N >= 1024 and,
    unless interleaved thinking is on, below ``max_tokens``)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["enabled"] = "enabled"
    budget_tokens: int = Field(ge=1024, description="Tokens Claude may spend thinking (at least 1024)")


class ThinkingAdaptive(BaseModel):
    """Adaptive thinking: ``{type: adaptive}``; Claude decides how much to think. ``display``
    (``summarized`` | ``omitted``) chooses whether thinking text is returned on models that omit it
    by default."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["adaptive"] = "adaptive"
    display: Literal["summarized", "omitted"] | None = Field(
        default=None, description="Return summarized thinking text, or omit it (model default when unset)"
    )


Thinking = Annotated[ThinkingEnabled | ThinkingAdaptive, Field(discriminator="type")]


class CapabilityOverrides(BaseModel):
    """What a model accepts, overriding the built-in table (:mod:`seamkit_anthropic.capabilities`).
    Only the fields given replace the table's values."""

    model_config = ConfigDict(extra="forbid")

    thinking_modes: list[Literal["enabled", "adaptive"]] | None = Field(
        default=None, description="Thinking types the model accepts (empty: no thinking)"
    )
    sampling: bool | None = Field(default=None, description="Accepts temperature / top_p / top_k")
    forced_tool_choice: bool | None = Field(
        default=None, description="Accepts tool_choice {type: any} / {type: tool} (forced tool use)"
    )
    native_structured_output: bool | None = Field(
        default=None, description="Accepts output_config.format {type: json_schema} (structured outputs)"
    )
    images: bool | None = Field(default=None, description="Accepts image inputs")

    def as_changes(self) -> dict[str, Any]:
        """The fields that were given (lists become frozensets)."""
        out: dict[str, Any] = {}
        for k, v in self.model_dump(exclude_none=True).items():
            out[k] = frozenset(v) if isinstance(v, list) else v
        return out


INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
"""The anthropic-beta name that lets ``budget_tokens`` exceed ``max_tokens`` (interleaved thinking)."""


class AnthropicConfig(HTTPProviderConfig):
    """``use: anthropic``: Claude through the Messages API (``POST {base_url}/v1/messages``, streamed).

    Credentials, in the official SDK's order: ``api_key`` (sent as ``x-api-key``), else
    ``auth_token`` (sent as ``Authorization: Bearer``), else at dispatch ``$ANTHROPIC_API_KEY``
    and ``$ANTHROPIC_AUTH_TOKEN`` — the environment's credentials only for Anthropic's host
    (``api.anthropic.com``) or the base URL taken from ``$ANTHROPIC_BASE_URL``: with another
    configured ``base_url`` and neither ``api_key`` nor ``auth_token`` in the config, no credential
    is sent. The base URL is ``base_url``, else ``$ANTHROPIC_BASE_URL``, else
    ``https://api.anthropic.com``.

    Cost: ``local: true`` -> 0 (``cost_source: local``); else ``price:``; else the packaged table;
    with ``local`` unset and a loopback base URL, a model the table does not know costs 0 ``local``.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description="Model id, e.g. claude-sonnet-4-5, claude-opus-4-7, claude-haiku-4-5")
    api_key: SecretStr | None = Field(
        default=None,
        description="API key, sent as x-api-key (default: $ANTHROPIC_API_KEY read at dispatch, sent only to "
        "api.anthropic.com or to the base URL taken from $ANTHROPIC_BASE_URL)",
    )
    auth_token: SecretStr | None = Field(
        default=None,
        description="OAuth / bearer token, sent as Authorization: Bearer (default: $ANTHROPIC_AUTH_TOKEN, sent "
        "only to api.anthropic.com or to the base URL taken from $ANTHROPIC_BASE_URL)",
    )
    base_url: str | None = Field(
        default=None,
        description="API base URL (default: $ANTHROPIC_BASE_URL, else https://api.anthropic.com). The "
        "environment's ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN are not sent to another configured base URL: "
        "set api_key or auth_token for it",
    )
    betas: list[str] = Field(
        default_factory=list, description="anthropic-beta feature names to send, e.g. interleaved-thinking-2025-05-14"
    )
    max_tokens: int = Field(
        default=4096, ge=1, description="Output token limit when a request sets none (the API requires one)"
    )
    thinking: Thinking | None = Field(
        default=None,
        description="Extended thinking: {type: enabled, budget_tokens: N} or {type: adaptive}; none when unset",
    )
    cache: bool = Field(
        default=False,
        description="Prompt caching: cache_control breakpoints on the last tool, the last system block and the "
        "end of the transcript prefix before the newest user turn",
    )
    cache_ttl: Literal["5m", "1h"] = Field(default="5m", description="Lifetime of cache entries written (5m or 1h)")
    structured_output: Literal["auto", "native", "tool"] = Field(
        default="auto",
        description="How output schemas are enforced: native (output_config.format), tool (a forced tool whose "
        "input is the answer), or auto (native where the model supports it)",
    )
    capabilities: CapabilityOverrides | None = Field(
        default=None, description="Override what the model accepts (partial; see seamkit_anthropic.capabilities)"
    )


    @model_validator(mode="after")
    def _check_thinking_budget(self) -> AnthropicConfig:
        t = self.thinking
        if (isinstance(t, ThinkingEnabled) and "max_tokens" in self.model_fields_set
                and t.budget_tokens >= self.max_tokens and INTERLEAVED_BETA not in self.betas):
            raise ValueError(
                f"thinking.budget_tokens ({t.budget_tokens}) must be below max_tokens ({self.max_tokens}) "
                f"(unless the {INTERLEAVED_BETA} beta is on)"
            )
        return self
