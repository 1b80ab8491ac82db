"""Building the Messages API request body from a :class:`~seamkit.values.ChatRequest`.

Follows the Messages API reference (``POST /v1/messages``) and the guides it links: system prompt
as a list of text blocks; ``user`` / ``assistant`` turns (consecutive same-role turns merged);
tool results as ``tool_result`` blocks in a user turn (``is_error`` kept), their content a string,
or, when the tool returned images, an array of a ``text`` block and ``image`` blocks (reference
"Messages" -> ``messages[].content[]`` -> "Tool result" -> ``content``: ``string`` or an array of
``text`` / ``image`` / ``search_result`` blocks; SDK ``types/tool_result_block_param.py``); images
as ``base64`` or ``url`` sources ("Images and vision"); thinking blocks sent back unchanged with the model that
wrote them ("Building with extended thinking" -> "Preserving thinking blocks"); prompt caching
breakpoints ("Prompt caching"); structured output through ``output_config.format`` or a forced
tool ("Structured outputs"); ``tool_choice`` ``auto`` / ``any`` / ``tool`` / ``none``.

Everything a request asks for that the model cannot take is refused here, before dispatch, with
:class:`~seamkit.errors.UnsupportedFeature` (temperature on a model without sampling parameters or
with thinking on, a thinking type the model lacks, a thinking budget not below ``max_tokens``,
images in a user turn on a text-only model); settings that can be degraded are mapped with a warning (``seed``,
forced ``tool_choice`` where it is not accepted, and schemas: a root that is not an object is sent
wrapped in an object with one property and unwrapped from the reply; an output schema the native
dialect cannot express goes through the forced tool instead, or, where forced tool use is
impossible (extended thinking), as a JSON Schema in the system prompt; the caller validates the
answer against the canonical schema in every case).

A tool's images on a text-only model (``caps.images`` off) are not refused: the images in a user
turn were put there by the caller, who can remove them, but a tool's images arrive mid-run and a
run must not fail because a tool returned a screenshot. The tool result's text is sent with the
note of :mod:`seamkit._tool_images` in their place ("[1 image left out (image/png, 2,048 bytes):
this model does not take images]"), and a warning says so.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from seamkit.errors import UnsupportedFeature
from seamkit.plugin import left_out_warning, text_with_images_note
from seamkit.values import (
    ChatRequest,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolResult,
    thaw,
)

from seamkit_anthropic.capabilities import Capabilities
from seamkit_anthropic.config import INTERLEAVED_BETA, AnthropicConfig
from seamkit_anthropic.schema import AnthropicSchemaError, native_plan, tool_input_plan

__all__ = [
    "Prepared",
    "build_body",
    "encode_thinking",
    "decode_thinking",
    "same_model",
    "family",
    "BLOCKS_PREFIX",
    "OUTPUT_TOOL",
    "INTERLEAVED_BETA",
]

BLOCKS_PREFIX = "seamkit-anthropic-blocks.v1:"
"""Prefix of a :class:`ReasoningBlock` signature that carries several thinking / redacted_thinking
blocks (base64url JSON list), so a turn with more than one block goes back exactly as it came."""

OUTPUT_TOOL = "structured_output"
_DATED = re.compile(r"^(?P<family>.+?)(?:-\d{8}|-latest|@\d{8})$")


@dataclass(slots=True)
class Prepared:
    """A request ready to send: the JSON ``body``, ``warnings`` (explicit degradations), the
    name of the synthetic ``output_tool`` when structured output goes through a forced tool,
    ``output_wrap``: the property the answer is wrapped in (a root that is not an object), and
    ``tool_wraps``: tool name -> the property its arguments are wrapped in (unwrap both from the
    stream with :func:`seamkit._schema_wrap.unwrap_deltas`)."""

    body: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    output_tool: str | None = None
    output_wrap: str | None = None
    tool_wraps: dict[str, str] = field(default_factory=dict)


def encode_thinking(blocks: list[dict[str, Any]]) -> str | None:
    """The :class:`ReasoningBlock` signature for a turn's thinking blocks: the block's own
    signature when there is exactly one ``thinking`` block at the start of the turn, else
    :data:`BLOCKS_PREFIX` + the base64url JSON of every block (``thinking`` and
    ``redacted_thinking``) in order. A block that followed a tool call (interleaved thinking)
    carries ``"_before"``: the id of the ``tool_use`` block it preceded (``""``: the turn's end)."""
    if not blocks:
        return None
    first = blocks[0]
    if len(blocks) == 1 and first.get("type") == "thinking" and first.get("signature") and "_before" not in first:
        return str(blocks[0]["signature"])
    raw = json.dumps(blocks, separators=(",", ":"), ensure_ascii=False).encode()
    return BLOCKS_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii")


def decode_thinking(block: ReasoningBlock) -> list[dict[str, Any]]:
    """The Messages API blocks a :class:`ReasoningBlock` stands for (inverse of
    :func:`encode_thinking`). Raises ``ValueError`` for a malformed multi-block signature."""
    sig = block.signature or ""
    if sig.startswith(BLOCKS_PREFIX):
        try:
            blocks = json.loads(base64.urlsafe_b64decode(sig[len(BLOCKS_PREFIX):].encode("ascii")))
        except (ValueError, UnicodeError) as exc:
            raise ValueError(f"malformed thinking-block signature: {exc}") from None
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise ValueError("malformed thinking-block signature: not a list of blocks")
        return blocks
    return [{"type": "thinking", "thinking": block.text, "signature": sig}]


def family(model: str) -> str:
    """``model`` without a snapshot date or ``-latest`` suffix (``claude-sonnet-4-5-20250929`` ->
    ``claude-sonnet-4-5``)."""
    m = _DATED.match(model)
    return m.group("family") if m else model


def same_model(a: str | None, b: str) -> bool:
    """Whether model ids ``a`` and ``b`` name the same model: equal, or the same family once a
    snapshot date / ``-latest`` suffix is removed (``claude-sonnet-4-5-20250929`` is
    ``claude-sonnet-4-5``)."""
    if a is None:
        return False
    return a == b or family(a) == family(b)


def _image(block: ImageBlock) -> dict[str, Any]:
    if block.data is not None:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": block.media_type, "data": base64.b64encode(block.data).decode()},
        }
    return {"type": "image", "source": {"type": "url", "url": block.url}}


def _tool_result(block: ToolResult, images: bool) -> dict[str, Any]:
    """The ``tool_result`` block for ``block``: ``content`` a string (left out when empty), or,
    for a result with images on a model that takes them (``images``), an array of a ``text`` block
    (when there is text) and one ``image`` block per image, in order. Without ``images`` the
    result's images are named in the text instead (:func:`~seamkit._tool_images.text_with_images_note`)."""
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.call_id}
    if block.images and images:
        text = [{"type": "text", "text": block.content}] if block.content else []
        out["content"] = text + [_image(i) for i in block.images]
    else:
        content = text_with_images_note(block)
        if content:
            out["content"] = content
    if block.is_error:
        out["is_error"] = True
    return out


class _Builder:
    def __init__(self, request: ChatRequest, cfg: AnthropicConfig, caps: Capabilities, model: str,
                 provider: str) -> None:
        self.request = request
        self.cfg = cfg
        self.caps = caps
        self.model = model
        self.provider = provider
        self.warnings: list[str] = []

    def refuse(self, message: str, feature: str) -> UnsupportedFeature:
        return UnsupportedFeature(message, provider=self.provider, model=self.model, feature=feature)

    # --- transcript -------------------------------------------------------------------------

    def reasoning(self, block: ReasoningBlock) -> list[dict[str, Any]]:
        if block.provider != self.provider or not same_model(block.model, self.model):
            where = f"{block.provider or 'unknown'}:{block.model or 'unknown'}"
            self.warnings.append(
                f"dropped a reasoning block written by {where}: thinking blocks are only accepted by the model "
                f"that wrote them ({self.provider}:{self.model})"
            )
            return []
        if not block.signature:
            self.warnings.append("dropped a reasoning block without a signature: Claude only accepts signed thinking")
            return []
        try:
            return decode_thinking(block)
        except ValueError as exc:
            self.warnings.append(f"dropped a reasoning block: {exc}")
            return []

    def content(self, msg: Message) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        thinking: list[dict[str, Any]] = []
        for b in msg.content:
            if isinstance(b, TextBlock):
                if b.text:
                    out.append({"type": "text", "text": b.text})
            elif isinstance(b, ImageBlock):
                if not self.caps.images:
                    raise self.refuse("image inputs are not supported by this model", "images")
                out.append(_image(b))
            elif isinstance(b, ToolCall):
                out.append({"type": "tool_use", "id": b.id, "name": b.name, "input": thaw(b.arguments)})
            elif isinstance(b, ToolResult):
                if b.images and not self.caps.images:
                    self.warnings.append(left_out_warning(b, self.model))
                out.append(_tool_result(b, self.caps.images))
            elif isinstance(b, ReasoningBlock):
                if msg.role == "assistant":
                    thinking.extend(self.reasoning(b))
        if thinking:  # a turn starts with its thinking; interleaved blocks go back before their tool call
            head = [t for t in thinking if "_before" not in t]
            placed: dict[str, list[dict[str, Any]]] = {}
            for t in thinking:
                if "_before" in t:
                    placed.setdefault(str(t["_before"]), []).append({k: v for k, v in t.items() if k != "_before"})
            body: list[dict[str, Any]] = list(head)
            for blk in out:
                if blk["type"] == "tool_use":
                    body.extend(placed.pop(blk["id"], []))
                body.append(blk)
            for rest in placed.values():
                body.extend(rest)
            out = body
        if msg.role != "assistant":  # tool results come first in a user turn
            out.sort(key=lambda blk: 0 if blk["type"] == "tool_result" else 1)
        return out

    def messages(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        system: list[dict[str, Any]] = []
        turns: list[dict[str, Any]] = []
        for msg in self.request.messages:
            if msg.role == "system":
                system.extend(self.content(msg))
                continue
            role = "assistant" if msg.role == "assistant" else "user"
            blocks = self.content(msg)
            if not blocks:
                continue
            if turns and turns[-1]["role"] == role:
                merged = turns[-1]["content"] + blocks
                if role == "user":
                    merged.sort(key=lambda blk: 0 if blk["type"] == "tool_result" else 1)
                turns[-1]["content"] = merged
            else:
                turns.append({"role": role, "content": blocks})
        system = [b for b in system if b.get("type") == "text"]
        return system, turns

    # --- settings ---------------------------------------------------------------------------

    def thinking(self, max_tokens: int) -> dict[str, Any] | None:
        t = self.cfg.thinking
        if t is None:
            return None
        if t.type not in self.caps.thinking_modes:
            accepted = ", ".join(sorted(self.caps.thinking_modes)) or "none"
            raise self.refuse(
                f"thinking type {t.type!r} is not supported by this model (accepted: {accepted})", "thinking"
            )
        out = t.model_dump(exclude_none=True)
        if t.type == "enabled" and t.budget_tokens >= max_tokens and INTERLEAVED_BETA not in self.cfg.betas:
            raise self.refuse(
                f"thinking budget_tokens ({t.budget_tokens}) must be below max_tokens ({max_tokens})",
                "thinking.budget_tokens",
            )
        return out

    def forced_ok(self, thinking: dict[str, Any] | None) -> str | None:
        """Why forced tool use cannot be sent, or None when it can."""
        if thinking is not None:
            return "forced tool use cannot be combined with extended thinking"
        if not self.caps.forced_tool_choice:
            return "forced tool use is not supported by this model"
        return None

    def tools_and_choice(self, thinking: dict[str, Any] | None, prepared: Prepared) -> None:
        req = self.request
        body = prepared.body
        tools = []
        for t in req.tools:
            plan = tool_input_plan(t.parameters, what=f"tool {t.name!r} input_schema")
            if plan.wrap_key is not None:
                prepared.tool_wraps[t.name] = plan.wrap_key
            if plan.warning is not None:
                self.warnings.append(plan.warning)
            tools.append({"name": t.name, "description": t.description, "input_schema": plan.schema})
        choice: dict[str, Any] | None = None
        wanted = req.tool_choice
        if tools:
            if wanted == "none":
                choice = {"type": "none"}
            elif wanted == "required":
                choice = {"type": "any"}
            elif wanted != "auto":
                if wanted not in {t["name"] for t in tools}:
                    raise self.refuse(f"tool_choice names {wanted!r}, which is not among the request's tools",
                                      "tool_choice")
                choice = {"type": "tool", "name": wanted}
            if choice is not None and choice["type"] in ("any", "tool"):
                why = self.forced_ok(thinking)
                if why is not None:
                    self.warnings.append(f"tool_choice {wanted!r} not sent: {why}; sent 'auto'")
                    choice = None
        schema = req.output_schema
        if schema is not None:
            mode = self.cfg.structured_output
            if mode == "auto":
                mode = "native" if self.caps.native_structured_output else "tool"
            not_native: str | None = None  # why a native request fell back to the forced tool
            if mode == "native":
                try:
                    native = native_plan(schema, provider=self.provider, model=self.model)
                except AnthropicSchemaError as exc:
                    not_native = (f"{exc.construct} at {exc.path} {exc.why} in Claude's native structured outputs "
                                  "('JSON Schema limitations')")
                    mode = "tool"
                else:
                    config = dict(body.get("output_config") or {})
                    config["format"] = {"type": "json_schema", "schema": native.schema}
                    body["output_config"] = config
                    prepared.output_wrap = native.wrap_key
                    if native.warning is not None:
                        self.warnings.append(native.warning)
            if mode == "tool" and (wanted in ("auto", "none") or not tools):
                why = self.forced_ok(thinking)
                if why is None:
                    choice = self.answer_tool(schema, tools, wanted, prepared, not_native)
                else:
                    self.schema_in_prompt(schema, prepared, not_native, why)
            # else: tool_choice required / a named tool: this turn must call a real tool; the schema
            # applies to a later turn (the caller validates the final answer in any case)
        if tools:
            body["tools"] = tools
            if choice is not None:
                body["tool_choice"] = choice

    def answer_tool(self, schema: Mapping[str, Any], tools: list[dict[str, Any]], wanted: str, prepared: Prepared,
                    not_native: str | None) -> dict[str, Any]:
        """Append the forced tool whose input is the answer; returns the ``tool_choice`` to send.
        Real tools stay callable unless ``tool_choice`` is ``none``."""
        name = OUTPUT_TOOL
        names = {t["name"] for t in tools}
        while name in names:
            name += "_"
        plan = tool_input_plan(schema, what="structured output", tool=False)
        tools.append({
            "name": name,
            "description": "Give your final answer by calling this tool; its input is the answer.",
            "input_schema": plan.schema,
        })
        prepared.output_tool = name
        prepared.output_wrap = plan.wrap_key
        if not_native is not None:
            wrapped = (f"; its root ({plan.wrap_key!r}) wrapped in an object and unwrapped from the answer"
                       if plan.wrap_key is not None else "")
            self.warnings.append(f"structured output: {not_native}; sent through a forced tool '{name}' "
                                 f"instead{wrapped}; the answer is validated against the schema")
        elif plan.warning is not None:
            self.warnings.append(plan.warning)
        # tool_choice none: the answer tool only (real tools stay defined: the transcript may use them)
        forced_answer = wanted == "none" or len(tools) == 1
        return {"type": "tool", "name": name} if forced_answer else {"type": "any"}

    def schema_in_prompt(self, schema: Mapping[str, Any], prepared: Prepared, not_native: str | None,
                         why: str) -> None:
        """The last route, which every model takes: the canonical schema in the system prompt."""
        note = ("Reply with one JSON document valid for this JSON Schema, and nothing else: "
                + json.dumps(thaw(schema), ensure_ascii=False, separators=(",", ":")))
        system = prepared.body.setdefault("system", [])
        system.append({"type": "text", "text": note})
        because = f"{not_native}, and {why}" if not_native is not None else why
        self.warnings.append(f"structured output: {because}: the schema is sent in the system prompt instead; "
                             "the answer is validated against the schema")

    def cache(self, prepared: Prepared, system: list[dict[str, Any]], turns: list[dict[str, Any]]) -> None:
        control: dict[str, Any] = {"type": "ephemeral"}
        if self.cfg.cache_ttl == "1h":
            control["ttl"] = "1h"
        tools = prepared.body.get("tools")
        if tools:
            tools[-1]["cache_control"] = dict(control)
        if system:
            system[-1]["cache_control"] = dict(control)
        # the transcript prefix before the newest user turn: its last cacheable block
        last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=-1)
        for turn in reversed(turns[:max(last_user, 0)]):
            for blk in reversed(turn["content"]):
                if blk["type"] in ("thinking", "redacted_thinking"):
                    continue  # thinking blocks cannot carry cache_control
                blk["cache_control"] = dict(control)
                return

    def build(self) -> Prepared:
        req = self.request
        cfg = self.cfg
        max_tokens = req.max_tokens if req.max_tokens is not None else cfg.max_tokens
        thinking = self.thinking(max_tokens)
        if req.temperature is not None:
            if not self.caps.sampling:
                raise self.refuse("temperature is not supported by this model (sampling parameters are fixed)",
                                  "temperature")
            if thinking is not None:
                raise self.refuse("temperature cannot be combined with extended thinking", "temperature")
        system, turns = self.messages()
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens}
        prepared = Prepared(body)
        if system:
            body["system"] = system
        body["messages"] = turns
        if thinking is not None:
            body["thinking"] = thinking
        if req.temperature is not None:
            body["temperature"] = req.temperature
        if req.stop:
            body["stop_sequences"] = list(req.stop)
        if req.seed is not None:
            self.warnings.append("seed is not supported by the Anthropic Messages API; ignored")
        self.tools_and_choice(thinking, prepared)
        if cfg.cache:
            self.cache(prepared, prepared.body.get("system", system), turns)
        for key, value in thaw(req.extra).items():
            if isinstance(value, Mapping) and isinstance(body.get(key), dict):
                body[key] = {**body[key], **value}
            else:
                body[key] = value
        body["stream"] = True
        prepared.warnings = self.warnings
        return prepared


def build_body(request: ChatRequest, cfg: AnthropicConfig, caps: Capabilities, *, model: str,
               provider: str = "anthropic") -> Prepared:
    """The Messages API body for ``request`` (``stream: true``), its warnings and the synthetic
    output tool name (if any). Raises :class:`~seamkit.errors.UnsupportedFeature` before anything is
    sent when the request asks for what ``model`` cannot take."""
    return _Builder(request, cfg, caps, model, provider).build()
