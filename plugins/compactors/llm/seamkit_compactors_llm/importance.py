"""The ``importance`` compactor: a model picks which older units must survive.

When ``transcript_tokens(messages) > budget_tokens`` the transcript is split into the leading
system message (kept verbatim), the *older* units and the ``keep_recent_units`` newest units (kept
verbatim). The allowance is ``budget_tokens`` minus what the kept parts take. When the allowance
is positive, ``model`` sees the older units numbered ``[0]..[n-1]`` with their sizes, and answers
``{"keep": [indices]}``, most important first; the request carries that JSON Schema as
``output_schema`` and the answer is validated against it (``jsonschema``, indices within
``0..n-1``, no repeats). Chosen units are taken in the model's order, each one kept when it
still fits what is left of the allowance (one that does not is dropped, with a warning), and sent
in their original order:
``system? + chosen older units + recent units``. Units are kept or dropped whole, never rewritten.

An invalid answer (not JSON, or not matching the schema) falls back to keeping the newest older
units that fit the allowance, with a warning (``seamkit._compaction`` logger and
``ctx.state["seamkit.compaction.notes"]``). No allowance left: every older unit is dropped without
calling the model. The model call goes through an :class:`~seamkit._runtime.invoker.Invoker` in the
run's context (``meta.purpose == "importance"``); provider errors propagate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import jsonschema
from seamkit.plugin import LLMPort, Middleware, Registry, RunContext, transcript_tokens
from seamkit.values import ChatRequest, Message, freeze

from seamkit_compactors_llm._llm import Split, build_model, call_model, dump_any, note, render_units
from seamkit_compactors_llm.config import ImportanceConfig

__all__ = ["ImportanceCompactor", "build", "selection_schema", "parse_selection"]

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)


def selection_schema(n: int) -> dict[str, Any]:
    """The JSON Schema of an answer choosing among ``n`` units: ``{"keep": [0 <= int < n, ...]}``,
    no repeats, no other key."""
    return {
        "type": "object",
        "properties": {
            "keep": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": max(0, n - 1)},
                "uniqueItems": True,
            }
        },
        "required": ["keep"],
        "additionalProperties": False,
    }


def parse_selection(text: str, n: int) -> list[int]:
    """The indices an answer chose, in its order. A JSON object is read from ``text`` (a Markdown
    code fence around it is accepted) and validated with :func:`selection_schema`. Raises
    ``ValueError`` saying what is wrong (not JSON, or which schema rule failed)."""
    raw = text.strip()
    m = _FENCE.match(raw)
    if m:
        raw = m.group(1).strip()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at character {exc.pos}): {raw[:80]!r}") from None
    if n == 0:
        raise ValueError("there is nothing to choose from")
    validator = jsonschema.Draft202012Validator(selection_schema(n))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "the answer"
        raise ValueError(f"{where}: {e.message}")
    return [int(i) for i in data["keep"]]


class ImportanceCompactor:
    """The ``importance`` compactor (see the module doc); a
    :class:`~seamkit._compaction.CompactorPort`.

    ``config``: an :class:`~seamkit_compactors_llm.config.ImportanceConfig`. ``model``: the
    :class:`~seamkit._ports.LLMPort` to call (default: built from ``config.model`` through
    ``registry``, raising :class:`~seamkit.errors.ConfigError` located at ``model``).
    ``middlewares``: wrap the selecting call, outermost first.
    """

    name = "importance"

    def __init__(self, config: ImportanceConfig, *, model: LLMPort | None = None,
                 middlewares: Sequence[Middleware] = (), registry: Registry | None = None) -> None:
        self.config = config
        self.model: LLMPort = model if model is not None else build_model(config.model, registry=registry)
        self.middlewares = tuple(middlewares)

    def __repr__(self) -> str:
        return (f"ImportanceCompactor(model={getattr(self.model, 'provider', '?')}:"
                f"{getattr(self.model, 'model', '?')}, keep_recent_units={self.config.keep_recent_units})")

    def request_for(self, units: Sequence[tuple[Message, ...]], allowance: int) -> ChatRequest:
        """The selecting request for the older ``units`` with ``allowance`` tokens to fill."""
        cfg = self.config
        text = render_units(units, limit=cfg.max_block_chars, numbered=True)
        prompt = (
            f"These are the {len(units)} earlier turns, numbered 0 to {len(units) - 1}. The turns you keep "
            f"must fit in {allowance} tokens in total. Answer with JSON only: {{\"keep\": [indices]}}, most "
            f"important first.\n\n<turns>\n{text}\n</turns>"
        )
        return ChatRequest((Message.system(cfg.instructions), Message.user(prompt)),
                           output_schema=freeze(selection_schema(len(units))),
                           temperature=cfg.temperature, max_tokens=cfg.max_answer_tokens)

    @staticmethod
    def _newest_that_fit(costs: Sequence[int], allowance: int) -> list[int]:
        chosen: list[int] = []
        left = allowance
        for i in range(len(costs) - 1, -1, -1):
            if costs[i] > left:
                break
            left -= costs[i]
            chosen.append(i)
        return chosen

    async def compact(self, messages: Sequence[Message], *, budget_tokens: int,
                      ctx: RunContext | None = None) -> tuple[Message, ...]:
        """``messages`` with only the older units the model chose (see the module doc); unchanged
        when they already fit. Raises what the model raises (:class:`~seamkit.errors.ProviderError`)."""
        msgs = tuple(messages)
        if not msgs or transcript_tokens(msgs) <= budget_tokens:
            return msgs
        sp = Split(msgs, self.config.keep_recent_units)
        if not sp.older:
            note(ctx, f"importance: nothing to choose from: the transcript has no unit older than the "
                      f"{self.config.keep_recent_units} kept ones")
            return msgs
        allowance = budget_tokens - sp.head_tokens - sp.recent_tokens
        costs = [transcript_tokens(u) for u in sp.older]
        chosen: list[int]
        if allowance <= 0:
            chosen = []
        else:
            result = await call_model(self.model, self.middlewares, self.request_for(sp.older, allowance),
                                      ctx, "importance")
            try:
                wanted = parse_selection(result.text, len(sp.older))
            except ValueError as exc:
                chosen = self._newest_that_fit(costs, allowance)
                note(ctx, f"importance: invalid answer from the model ({exc}); kept the {len(chosen)} newest "
                          f"older units that fit instead")
            else:
                chosen, dropped, left = [], [], allowance
                for i in wanted:
                    if costs[i] <= left:
                        chosen.append(i)
                        left -= costs[i]
                    else:
                        dropped.append(i)
                if dropped:
                    note(ctx, f"importance: the model kept units that do not fit the {allowance}-token allowance; "
                              f"dropped {dump_any(dropped)}")
        keep = sorted(chosen)
        return sp.assemble([m for i in keep for m in sp.older[i]])


def build(config: ImportanceConfig) -> ImportanceCompactor:
    """Factory of the ``importance`` component. Raises :class:`~seamkit.errors.ConfigError`
    (located at ``model``) when the model slot names an unknown provider or invalid parameters."""
    return ImportanceCompactor(config)
