"""Config model and factory of the ``scripted`` provider component."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from seamkit.testing._models import ScriptedModel, ScriptedTurn

__all__ = ["ScriptedConfig", "ScriptedToolCall", "ScriptedTurnConfig", "build"]


class ScriptedToolCall(BaseModel):
    """A tool call the scripted model makes."""

    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptedTurnConfig(BaseModel):
    """One turn: text and/or tool calls; ``delay`` in seconds before it starts."""

    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    reasoning: str = ""
    delay: float | None = Field(default=None, ge=0)


class ScriptedConfig(BaseModel):
    """Parameters of ``use: scripted``."""

    model_config = ConfigDict(extra="forbid")
    turns: list[str | ScriptedTurnConfig] = Field(min_length=1, description="The turns, in order")
    delay: float = Field(default=0.0, ge=0, description="Seconds before each turn")
    repeat: bool = Field(default=False, description="Start over when the script ends")
    follow_transcript: bool = Field(
        default=False,
        description="Pick each turn by the number of assistant messages so far, so a resumed run continues its script",
    )
    model: str = "scripted"


def build(cfg: ScriptedConfig) -> ScriptedModel:
    turns: list[ScriptedTurn] = []
    for t in cfg.turns:
        if isinstance(t, str):
            turns.append(ScriptedTurn(text=t, delay=cfg.delay))
        else:
            turns.append(
                ScriptedTurn(
                    text=t.text,
                    tool_calls=tuple(c.model_dump(exclude_none=True) for c in t.tool_calls),
                    reasoning=t.reasoning,
                    delay=cfg.delay if t.delay is None else t.delay,
                )
            )
    return ScriptedModel(turns, model=cfg.model, repeat=cfg.repeat, follow_transcript=cfg.follow_transcript)
