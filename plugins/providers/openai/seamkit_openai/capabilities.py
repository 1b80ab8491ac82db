"""What each OpenAI model (or an OpenAI-compatible server) accepts: a table in code, prefix-matched,
overridable from YAML (``capabilities:`` in the component's config).

Public API (stable):

- :class:`Capabilities`: frozen dataclass of the fields below; ``.replace(**changes)``.
- :func:`capabilities_for(model, *, openai_host=True, overrides=None) -> Capabilities`: the
  longest table prefix matching ``model`` (an ``openai/`` vendor prefix, as OpenRouter writes
  ids, is ignored); an unknown model gets :data:`OPENAI_DEFAULT` at OpenAI's host and the
  conservative :data:`COMPATIBLE_DEFAULT` elsewhere; then ``overrides`` (a mapping of field ->
  value, e.g. ``CapabilityOverrides.as_changes()``) replace fields. Raises ``ValueError`` for an
  unknown field name.
- :func:`nearest_effort(requested, supported) -> str | None`: the supported reasoning effort
  closest to ``requested`` in :data:`seamkit_openai.config.EFFORT_ORDER` (ties go to the higher
  level); ``None`` when ``supported`` is empty.

Sources: OpenAI's model pages and the "Reasoning models" guide (reasoning models take
``max_completion_tokens`` and ``developer`` messages, not ``temperature``; ``reasoning_effort``
levels: o-series low/medium/high, gpt-5 minimal/low/medium/high, gpt-5.1 none/low/medium/high,
gpt-5-pro high only; gpt-5.2 and later add xhigh — the 5.2+ rows are best-effort and
overridable), and the "Structured Outputs" guide (json_schema from gpt-4o-2024-08-06 and
gpt-4o-mini on; not o1-mini / o1-preview / gpt-4-turbo / gpt-3.5-turbo).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from seamkit_openai.config import EFFORT_ORDER

__all__ = ["Capabilities", "capabilities_for", "nearest_effort", "TABLE", "OPENAI_DEFAULT", "COMPATIBLE_DEFAULT"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a model accepts.

    ``reasoning``: a reasoning model. ``temperature``: accepts temperature (refused before dispatch
    otherwise). ``json_schema`` / ``json_object``: structured output modes; ``json_object_schema``: without
    ``json_schema``, the schema rides inside JSON mode (``{type: json_object, schema}``, as
    llama-cpp-python's server takes it). ``strict_schema``:
    compile output schemas to strict mode (``strict: true``); ``strict_tools``: the same for tool
    parameters. ``stream_options``: accepts ``stream_options: {include_usage: true}``.
    ``parallel_tool_calls``: accepts that setting. ``max_tokens_param``: the chat-completions name
    of the output limit. ``reasoning_efforts``: accepted ``reasoning_effort`` levels (empty: the
    setting is not sent). ``developer_role``: system text goes in a ``developer`` message.
    ``system_role``: accepts system/developer messages at all (else sent as a user message).
    ``tools`` / ``images`` / ``seed`` / ``stop``: accepts those.
    """

    reasoning: bool = False
    temperature: bool = True
    json_schema: bool = True
    json_object: bool = True
    json_object_schema: bool = False
    strict_schema: bool = True
    strict_tools: bool = False
    stream_options: bool = True
    parallel_tool_calls: bool = True
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_completion_tokens"
    reasoning_efforts: tuple[str, ...] = ()
    developer_role: bool = False
    system_role: bool = True
    tools: bool = True
    images: bool = True
    seed: bool = True
    stop: bool = True

    def replace(self, **changes: Any) -> Capabilities:
        """A copy with ``changes`` applied; raises ``ValueError`` naming an unknown field."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown capability field(s) {sorted(unknown)}; known: {sorted(known)}")
        if "reasoning_efforts" in changes:
            changes["reasoning_efforts"] = tuple(changes["reasoning_efforts"])
        return replace(self, **changes)


_CHAT = Capabilities(strict_tools=True)  # a current non-reasoning OpenAI chat model (gpt-4.1, gpt-4o)

_REASONING = Capabilities(
    reasoning=True,
    temperature=False,
    reasoning_efforts=("low", "medium", "high"),
    developer_role=True,
    stop=False,
    strict_tools=True,
)
_LEGACY = _CHAT.replace(json_schema=False, strict_schema=False, strict_tools=False)

OPENAI_DEFAULT = _CHAT
"""An unknown model at OpenAI's own host: a current chat model."""

COMPATIBLE_DEFAULT = Capabilities(
    strict_schema=False,
    strict_tools=False,
    parallel_tool_calls=False,
    max_tokens_param="max_tokens",
)
"""An unknown model at another host (vLLM, llama.cpp server, Ollama...): send ``max_tokens``, the
canonical schema as ``json_schema`` without strict compilation, no ``parallel_tool_calls``;
override ``json_schema`` / ``stream_options`` etc. for a server that lacks them."""

TABLE: dict[str, Capabilities] = {
    # GPT-5 family (reasoning; gpt-5 adds 'minimal'; gpt-5.1+ 'none'; pro: 'high' only).
    "gpt-5": _REASONING.replace(reasoning_efforts=("minimal", "low", "medium", "high")),
    "gpt-5-pro": _REASONING.replace(reasoning_efforts=("high",)),
    "gpt-5-codex": _REASONING.replace(reasoning_efforts=("low", "medium", "high")),
    "gpt-5-chat": _CHAT,  # gpt-5-chat-latest: the non-reasoning ChatGPT model
    "gpt-5.1": _REASONING.replace(reasoning_efforts=("none", "low", "medium", "high")),
    "gpt-5.1-codex-max": _REASONING.replace(reasoning_efforts=("none", "low", "medium", "high", "xhigh")),
    "gpt-5.1-chat": _CHAT,
    "gpt-5.2": _REASONING.replace(reasoning_efforts=("none", "low", "medium", "high", "xhigh")),
    "gpt-5.2-chat": _CHAT,
    "gpt-5.2-pro": _REASONING.replace(reasoning_efforts=("medium", "high", "xhigh")),
    "gpt-5.3": _REASONING.replace(reasoning_efforts=("none", "low", "medium", "high", "xhigh")),
    "gpt-5.4": _REASONING.replace(reasoning_efforts=("none", "low", "medium", "high", "xhigh")),
    "gpt-5.4-pro": _REASONING.replace(reasoning_efforts=("medium", "high", "xhigh")),
    "gpt-5.5": _REASONING.replace(reasoning_efforts=("none", "low", "medium", "high", "xhigh")),
    "gpt-5.5-pro": _REASONING.replace(reasoning_efforts=("medium", "high", "xhigh")),
    # o-series
    "o1": _REASONING,
    "o1-pro": _REASONING,
    "o1-mini": _REASONING.replace(
        reasoning_efforts=(), json_schema=False, json_object=False, strict_schema=False, tools=False,
        images=False, system_role=False, developer_role=False,
    ),
    "o1-preview": _REASONING.replace(
        reasoning_efforts=(), json_schema=False, json_object=False, strict_schema=False, tools=False,
        images=False, system_role=False, developer_role=False,
    ),
    "o3": _REASONING,
    "o3-mini": _REASONING.replace(images=False),
    "o3-pro": _REASONING,
    "o3-deep-research": _REASONING.replace(reasoning_efforts=("medium",)),
    "o4-mini": _REASONING,
    "o4-mini-deep-research": _REASONING.replace(reasoning_efforts=("medium",)),
    "codex-mini": _REASONING,
    # GPT-4.1 / GPT-4o families
    "gpt-4.1": _CHAT,
    "gpt-4o": _CHAT,
    "gpt-4o-2024-05-13": _LEGACY,
    "gpt-4o-mini": _CHAT,
    "chatgpt-4o": _LEGACY.replace(tools=False),
    "gpt-4.5": _CHAT,
    # legacy
    "gpt-4-turbo": _LEGACY,
    "gpt-4": _LEGACY.replace(json_object=False, images=False),
    "gpt-4-1106": _LEGACY.replace(images=False),
    "gpt-4-0125": _LEGACY.replace(images=False),
    "gpt-3.5-turbo": _LEGACY.replace(images=False),
}
"""Model id prefix -> capabilities; the longest matching prefix wins (``gpt-4o-mini-2024-07-18`` ->
``gpt-4o-mini``). A prefix matches a whole id or an id continuing with ``-`` (so ``o1`` does not
match ``o10``)."""


def _lookup(model: str) -> Capabilities | None:
    best: str | None = None
    for prefix in TABLE:
        if (model == prefix or model.startswith(prefix + "-")) and (best is None or len(prefix) > len(best)):
            best = prefix
    return TABLE[best] if best is not None else None


def capabilities_for(
    model: str, *, openai_host: bool = True, overrides: Mapping[str, Any] | None = None
) -> Capabilities:
    """The capabilities of ``model`` (see the module doc). Raises ``ValueError`` for an unknown
    override field."""
    name = model.removeprefix("openai/")
    caps = _lookup(name)
    if caps is None:
        caps = OPENAI_DEFAULT if openai_host else COMPATIBLE_DEFAULT
    if overrides:
        caps = caps.replace(**dict(overrides))
    return caps


def nearest_effort(requested: str, supported: Sequence[str]) -> str | None:
    """The level of ``supported`` nearest to ``requested`` (``requested`` itself when supported;
    ties go to the higher level); ``None`` when nothing is supported. Unknown level names in
    ``supported`` are ignored unless equal to ``requested``."""
    if requested in supported:
        return requested
    order = {name: i for i, name in enumerate(EFFORT_ORDER)}
    known = [s for s in supported if s in order]
    if not known:
        return None
    want = order.get(requested, order["medium"])
    return min(known, key=lambda s: (abs(order[s] - want), -order[s]))
