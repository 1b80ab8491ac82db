"""``moderation``: a model asked whether the input or output violates a stated policy.

Points ``input`` (the user's task) and ``output`` (the final answer; a typed answer is shown to
the model as JSON). One call per check, through :meth:`seamkit._guardrails.GuardContext.chat`, so
the agent's chat middlewares (budget, retry, tracing) see it and its usage is added to the run's.

The request asks for a structured verdict: ``ChatRequest.output_schema`` is
:data:`VERDICT_SCHEMA` (``{"reason": str, "category": str|null, "violates": bool}``; with
``categories`` configured, ``category`` is one of them or null). Providers that constrain decoding
with it (llama.cpp's grammar, OpenAI's structured outputs) always produce that shape; the reply is
parsed strictly either way (:func:`seamkit._schemas.parse_json`, then a strict pydantic model).
``reason`` comes first on purpose: a model that writes its reason before the boolean decides
with the reason in view (small models flip the boolean otherwise).

- ``violates: true`` -> :func:`~seamkit._guardrails.block` with a reason naming the category.
- ``violates: false`` -> :data:`~seamkit._guardrails.ALLOW`.
- A reply that is not such an object (cut off at ``max_tokens``, prose, wrong types) raises
  :class:`ModerationReplyError`; a provider failure raises what the provider raises. The host
  then fails closed (the run stops with ``GuardrailTripped(failed=True)``) unless the guard is
  ``advisory`` (the run records a warning and goes on).

What this does not do: make a small model a good judge. The verdict is as good as the model and
the policy text; a bundled 270M model catches blatant cases only. It also adds one model call of
latency per checked point (``parallel: true`` at the input point hides it behind the first call).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from seamkit.errors import OutputValidationError
from seamkit.plugin import ALLOW, GuardContext, LLMPort, Registry, Verdict, block, build_nested, parse_json
from seamkit.values import ChatRequest, Message, freeze

from seamkit_guardrails_content.config import ModelSlot, ModerationConfig

__all__ = ["VERDICT_SCHEMA", "Moderation", "ModerationAnswer", "ModerationReplyError", "build_model",
           "build_moderation", "parse_answer"]

#: The JSON Schema of the model's reply (``category`` narrowed to the configured categories).
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 300},
        "category": {"type": ["string", "null"]},
        "violates": {"type": "boolean"},
    },
    "required": ["reason", "category", "violates"],
    "additionalProperties": False,
}


class ModerationAnswer(BaseModel):
    """The moderation model's reply: ``violates`` the policy or not, the ``category`` broken
    (``None`` when none) and a one-sentence ``reason``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    reason: str
    category: str | None
    violates: bool


class ModerationReplyError(OutputValidationError):
    """The moderation model's reply is not a verdict (``problems`` say why; ``raw`` keeps the
    reply). A guardrail failure: the host fails closed unless the guard is advisory."""

    def __init__(self, problems: list[str], raw: str) -> None:
        super().__init__(problems, raw)
        self.args = ("the moderation model's reply is not a verdict: " + "; ".join(self.problems),)


def parse_answer(text: str, categories: list[str] | None = None) -> ModerationAnswer:
    """``text`` (the model's reply) as a :class:`ModerationAnswer`, strictly: JSON (a Markdown
    fence around it is tolerated), exactly the three keys with their JSON types, and a
    ``category`` among ``categories`` when those are given. Raises :class:`ModerationReplyError`."""
    try:
        data = parse_json(text)
    except OutputValidationError as exc:
        raise ModerationReplyError(list(exc.problems), text) from None
    try:
        answer = ModerationAnswer.model_validate(data)
    except ValidationError as exc:
        raise ModerationReplyError(
            [f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()], text) from None
    if categories and answer.category is not None and answer.category not in categories:
        raise ModerationReplyError([f"category {answer.category!r} is not one of {categories}"], text)
    return answer


def build_model(slot: ModelSlot, *, at: str = "model", registry: Registry | None = None) -> LLMPort:
    """Build the provider named by ``slot`` (:func:`seamkit._slots.build_nested`). Raises
    :class:`~seamkit.errors.ConfigError` located at ``at`` (unknown provider, invalid parameters)
    or :class:`~seamkit.errors.PluginError` (it cannot be built)."""
    model: LLMPort = build_nested("provider", slot, at=at, registry=registry)
    return model


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[len(text) - half:]}"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


class Moderation:
    """The ``moderation`` guardrail (points ``input`` and ``output``); see the module doc.
    ``model``: a ready provider (Python use); otherwise the config's ``model`` slot is built now
    (raising :class:`~seamkit.errors.ConfigError` for a bad one)."""

    name = "moderation"

    def __init__(self, config: ModerationConfig, *, model: LLMPort | None = None,
                 registry: Registry | None = None) -> None:
        self.config = config
        self.model: LLMPort = model if model is not None else build_model(config.model, registry=registry)
        cats = list(dict.fromkeys(config.categories))
        schema = json.loads(json.dumps(VERDICT_SCHEMA))
        if cats:
            schema["properties"]["category"] = {"enum": [*cats, None]}
        self._categories = cats
        self._schema = freeze(schema)
        listed = f"Policy categories: {', '.join(cats)}.\n" if cats else ""
        self._system = config.instructions.format(policy=config.policy.strip(), categories=listed)

    def request(self, text: str) -> ChatRequest:
        """The moderation request for ``text``: the system prompt, then ``"Text: " + text``
        (clipped to ``max_chars``) as the user message, with :data:`VERDICT_SCHEMA` as output
        schema."""
        body = _clip(text, self.config.max_chars)
        return ChatRequest(
            (Message.system(self._system), Message.user(f"Text: {body}")),
            output_schema=self._schema,
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
        )

    async def moderate(self, text: str, guard: GuardContext) -> ModerationAnswer:
        """Ask the model about ``text`` (through ``guard.chat``) and parse its verdict. Raises
        :class:`ModerationReplyError` or what the provider raises."""
        result = await guard.chat(self.model, self.request(text))
        return parse_answer(result.text, self._categories)

    async def _check(self, text: str, guard: GuardContext) -> Verdict:
        answer = await self.moderate(text, guard)
        if not answer.violates:
            return ALLOW
        what = f"violates the policy (category: {answer.category})" if answer.category else "violates the policy"
        why = answer.reason.strip()[:300] or "no reason given"
        return block(f"{what}: {why}")

    async def check_input(self, text: str, guard: GuardContext) -> Verdict:
        """Block the user's task when the model says it violates the policy."""
        return await self._check(text, guard)

    async def check_output(self, output: Any, guard: GuardContext) -> Verdict:
        """Block the final answer (text, or a typed value shown as JSON) when the model says it
        violates the policy."""
        return await self._check(_as_text(output), guard)


def build_moderation(config: ModerationConfig) -> Moderation:
    """Factory registered as ``moderation``."""
    return Moderation(config)
