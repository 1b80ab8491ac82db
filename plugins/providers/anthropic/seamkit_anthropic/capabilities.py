"""What each Claude model accepts: a table in code, matched on the longest model-id prefix
(``claude-sonnet-4-5-20250929`` matches ``claude-sonnet-4-5``), overridable from YAML
(``capabilities: {...}``, see :class:`seamkit_anthropic.config.CapabilityOverrides`).

Sources (platform.claude.com docs, read 2026-11-30): "Building with extended thinking" (supported
models, manual vs adaptive thinking), "What's new in Claude Opus 4.7" (budget_tokens and sampling
parameters removed), the Claude Sonnet 5 / Opus 5 / Opus 5.5 / Sonnet 5.5 model pages (manual
thinking and sampling parameters rejected; forced tool use returns an error on Opus 5.5, Fable 5.1
and Sonnet 5.5), "Structured outputs" (models with ``output_config.format``). An unknown model gets
permissive defaults except structured output, which then goes through a forced tool (accepted by
every model that accepts forced tools).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Capabilities", "capabilities_for", "TABLE", "DEFAULT"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """``thinking_modes``: thinking types accepted (``enabled`` = budget_tokens, ``adaptive``);
    ``sampling``: temperature / top_p / top_k accepted; ``forced_tool_choice``: tool_choice
    ``any`` / ``tool`` accepted; ``native_structured_output``: ``output_config.format`` accepted;
    ``images``: image inputs accepted."""

    thinking_modes: frozenset[str] = frozenset({"enabled", "adaptive"})
    sampling: bool = True
    forced_tool_choice: bool = True
    native_structured_output: bool = False
    images: bool = True


_BOTH = frozenset({"enabled", "adaptive"})
_MANUAL = frozenset({"enabled"})
_ADAPTIVE = frozenset({"adaptive"})
_NONE: frozenset[str] = frozenset()

DEFAULT = Capabilities()

TABLE: dict[str, Capabilities] = {
    # 5.x generation: adaptive thinking only, sampling parameters rejected.
    "claude-fable-5-1": Capabilities(_ADAPTIVE, False, False, True),
    "claude-fable-5": Capabilities(_ADAPTIVE, False, True, True),
    "claude-mythos-5": Capabilities(_ADAPTIVE, False, True, True),
    "claude-opus-5-5": Capabilities(_ADAPTIVE, False, False, True),
    "claude-opus-5": Capabilities(_ADAPTIVE, False, True, True),
    "claude-sonnet-5-5": Capabilities(_ADAPTIVE, False, False, True),
    "claude-sonnet-5": Capabilities(_ADAPTIVE, False, True, True),
    "claude-haiku-5-5": Capabilities(_ADAPTIVE, False, True, True),
    # Opus 4.7 / 4.8: budget_tokens and sampling parameters return 400.
    "claude-opus-4-8": Capabilities(_ADAPTIVE, False, True, True),
    "claude-opus-4-7": Capabilities(_ADAPTIVE, False, True, True),
    # 4.6: manual (deprecated) and adaptive thinking.
    "claude-opus-4-6": Capabilities(_BOTH, True, True, True),
    "claude-sonnet-4-6": Capabilities(_BOTH, True, True, True),
    # 4.5: manual thinking, structured outputs.
    "claude-opus-4-5": Capabilities(_MANUAL, True, True, True),
    "claude-sonnet-4-5": Capabilities(_MANUAL, True, True, True),
    "claude-haiku-4-5": Capabilities(_MANUAL, True, True, True),
    # earlier Claude 4 and 3.7: manual thinking, no structured outputs (forced tool instead).
    "claude-opus-4-1": Capabilities(_MANUAL, True, True, False),
    "claude-opus-4": Capabilities(_MANUAL, True, True, False),
    "claude-sonnet-4": Capabilities(_MANUAL, True, True, False),
    "claude-3-7-sonnet": Capabilities(_MANUAL, True, True, False),
    # Claude 3.x: no thinking.
    "claude-3-5-haiku": Capabilities(_NONE, True, True, False),
    "claude-3-5-sonnet": Capabilities(_NONE, True, True, False),
    "claude-3-haiku": Capabilities(_NONE, True, True, False),
    "claude-3-opus": Capabilities(_NONE, True, True, False),
}

_BY_LENGTH = sorted(TABLE, key=len, reverse=True)


def capabilities_for(model: str, overrides: dict[str, Any] | None = None) -> Capabilities:
    """The capabilities of ``model`` (longest matching prefix in :data:`TABLE`, else
    :data:`DEFAULT`) with ``overrides`` (field -> value) applied. Raises ``TypeError`` for an
    unknown override field."""
    caps = DEFAULT
    for prefix in _BY_LENGTH:
        if model == prefix or model.startswith(prefix + "-") or model.startswith(prefix + "@"):
            caps = TABLE[prefix]
            break
    if overrides:
        caps = replace(caps, **overrides)
    return caps
