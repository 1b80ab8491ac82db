"""The ``openai_chat`` provider: OpenAI's Chat Completions API (``POST {base_url}/chat/completions``,
``stream: true``), and any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, OpenRouter,
DeepSeek) through ``base_url`` and ``headers``.

Request (API reference "Create chat completion"): ``model``, ``messages``, ``stream: true``,
``stream_options: {include_usage: true}`` (when the ``stream_options`` capability is on), ``tools``
(``{type: function, function: {name, description, parameters, strict?}}``), ``tool_choice``
(``"none"`` / ``"required"`` / ``{type: function, function: {name}}``; ``auto`` is the API default
and is not sent), ``response_format`` (``{type: json_schema, json_schema: {name, schema, strict}}``,
or ``{type: json_object, schema}`` / ``{type: json_object}`` per the capabilities),
``temperature``, ``max_completion_tokens`` (or ``max_tokens``, per the capability table), ``seed``,
``stop``, ``reasoning_effort``; then ``request.extra`` merged in.

Messages: system text -> a ``developer`` message for reasoning models (``developer_role``), else
``system`` (a ``user`` message for models with no system role); user text/images -> ``content`` (a
string, or parts ``text`` / ``image_url`` with a ``data:`` URL for inline bytes); assistant text and
tool calls -> ``content`` + ``tool_calls`` (arguments as JSON text); each tool result -> a ``tool``
message (``tool_call_id``, ``content``; an error result is sent as its content: the API has no error
flag). A ``tool`` message's content is text only (reference "Create chat completion" ->
``messages`` -> "Tool message" -> ``content``: a string or an array of ``text`` parts; SDK
``types/chat/chat_completion_tool_message_param.py``), so the images a tool returned
(:attr:`ToolResult.images`) follow the turn's tool messages in one ``user`` message: for each result
with images a ``text`` part naming the tool call (``"The tool call call_1 (screenshot) returned 1
image:"``) and its ``image_url`` parts (``data:`` URLs for inline bytes). It comes after *all* the
tool messages of the turn, because every tool message must directly follow the assistant message
with the ``tool_calls`` (or another tool message). A model that takes no images (capability
``images`` off) gets no such message: its tool message says that the images were left out
(:mod:`seamkit._tool_images`), with a warning; it is not refused, as a run must not fail because a
tool returned a picture. Chat Completions cannot take reasoning back: ReasoningBlocks are not sent (a warning when a
block with a signature from another provider/model is dropped).

Stream (reference "The chat completion chunk object"): ``choices[0].delta.content`` -> text;
``delta.reasoning_content`` / ``delta.reasoning`` (DeepSeek, vLLM, llama.cpp, OpenRouter) ->
reasoning; ``delta.refusal`` -> text, finish ``refusal``; ``delta.tool_calls[]`` (``index``, ``id``
and ``function.name`` on the first fragment, ``function.arguments`` pieces) -> ``ToolCallDelta``
(ids passed through so calls sharing an index stay apart); ``finish_reason``; the final chunk with
empty ``choices`` and ``usage`` (``prompt_tokens`` incl. ``prompt_tokens_details.cached_tokens``,
``completion_tokens`` incl. ``completion_tokens_details.reasoning_tokens``); ``data: [DONE]``.
``data: {"error": {...}}`` -> the classified :class:`ProviderError` (credentials echoed by the
server masked).

Structured output on a server that refuses the mode sent: when the server answers the request with
an ``invalid_request`` error naming ``response_format`` (``param`` ``response_format`` or
``response_format.*``; llama-cpp-python's server answers ``json_schema`` with a 500 request-validation
error whose ``loc`` is ``('body', 'response_format', 'type')``, classified ``invalid_request`` by
``seamkit_http``), the provider sends the same request again in the next mode down --
``json_schema`` -> JSON mode with the schema inside (``{type: json_object, schema}``, the
llama-cpp-python dialect) -> plain JSON mode -- with the schema in the prompt, and remembers the
refusal for the rest of its life (a fact about the server at ``base_url``, so it is not asked
again). Each call sent in a degraded mode carries one ``Delta(warning=...)`` saying so (a run's
warnings keep it once). OpenAI's ``invalid_json_schema`` (the schema refused, not the mode) does
not degrade. The answer is validated against the canonical schema by the agent loop, as always.
 A chunk that is not a JSON object, or whose ``choices`` / ``delta`` /
``tool_calls`` / ``function`` / ``usage`` have the wrong JSON type, raises
``ProviderError(server_error, "malformed chunk: ...")``. A stream that ends without ``[DONE]``
and without a finish reason raises ``ProviderError(server_error)``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Collection, Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from seamkit.errors import FailureClass, ProviderError
from seamkit.plugin import estimate_tokens, left_out_warning, text_with_images_note
from seamkit.values import (
    ChatRequest,
    Delta,
    FinishReason,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
    freeze,
    thaw,
)
from seamkit_http import classify_error_body, is_done, json_kind, open_sse

from seamkit_openai._common import OpenAIProviderBase, Settings, error_marked, image_url, unwraps_roots
from seamkit_openai.config import OpenAIChatConfig

if TYPE_CHECKING:
    from seamkit_openai._common import OutputFormat

__all__ = ["OpenAIChatProvider", "build", "chat_body", "chat_messages", "refuses_output_mode", "SCHEMA_INSTRUCTION"]

_FINISH: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
_PROTECTED = frozenset({"model", "messages", "stream"})

SCHEMA_INSTRUCTION = "Answer with one JSON object, and nothing else, that is valid against this JSON Schema:\n{schema}"
"""The instruction appended to the last user message when the server does not get the schema itself
(``{schema}``: the canonical schema as compact JSON). A user message, not a system one: some chat
templates (Gemma's in llama.cpp) drop system messages."""

# Structured-output modes, best first: response_format json_schema; JSON mode with the schema inside
# (llama-cpp-python's dialect); plain JSON mode.
_MODES = ("json_schema", "json_object_schema", "json_object")
_MODE_NAMES = {"json_schema": "json_schema", "json_object_schema": "json_object with a schema",
               "json_object": "json_object"}


def _mode(fmt: OutputFormat) -> str:
    if fmt.kind == "json_schema":
        return "json_schema"
    return "json_object_schema" if fmt.schema is not None else "json_object"


def refuses_output_mode(exc: ProviderError) -> bool:
    """Whether ``exc`` (raised for a request with structured output) says the server does not take
    the ``response_format`` sent: an HTTP ``invalid_request`` error whose ``param`` is
    ``response_format`` or ``response_format.<field>``, except OpenAI's ``invalid_json_schema``
    (the schema is refused, not the mode)."""
    if exc.failure_class is not FailureClass.INVALID_REQUEST or exc.status is None:
        return False
    if exc.code == "invalid_json_schema":
        return False
    param = exc.param or ""
    return param == "response_format" or param.startswith("response_format.")


def _degradation_warning(base_url: str, planned: str, mode: str,
                         refused: Mapping[str, str | None] | Collection[str]) -> str:
    """The warning for a call sent in ``mode`` instead of ``planned`` (the same text for every such
    call, so a run's warnings keep it once)."""
    said = []
    for m in _MODES[_MODES.index(planned):_MODES.index(mode)]:
        param = refused.get(m) if isinstance(refused, Mapping) else None
        said.append(_MODE_NAMES[m] + (f" ({param})" if param else ""))
    where = "inside and in the prompt" if mode == "json_object_schema" else "in the prompt"
    return (f"structured output: {base_url} refused response_format {' and then '.join(said)}; sent json_object "
            f"with the schema {where} instead; the answer is validated against the schema")


def _with_instruction(messages: list[dict[str, Any]], schema: Any) -> None:
    text = SCHEMA_INSTRUCTION.format(schema=json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    for m in reversed(messages):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                m["content"] = [*content, {"type": "text", "text": text}]
            else:
                m["content"] = f"{content}\n\n{text}" if content else text
            return
    messages.append({"role": "user", "content": text})


def _mask(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _tool_images_text(r: ToolResult) -> str:
    n = len(r.images)
    return f"The tool call {r.call_id} ({r.name}) returned {n} image{'' if n == 1 else 's'}:"


def chat_messages(
    messages: tuple[Message, ...], *, developer_role: bool, system_role: bool, provider: str, model: str,
    images: bool = True,
) -> tuple[list[dict[str, Any]], list[str]]:
    """``(messages as the API takes them, warnings)`` (see the module doc for the mapping).
    ``images``: whether the model takes images (a tool result's images are then sent in a ``user``
    message after the turn's tool messages, else named in the tool message's text)."""
    out: list[dict[str, Any]] = []
    warnings: list[str] = []
    # the images of the tool results sent since the last non-tool message: one user message after them
    pending: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending:
            out.append({"role": "user", "content": list(pending)})
            pending.clear()

    for m in messages:
        if m.role == "system":
            flush_images()
            role = ("developer" if developer_role else "system") if system_role else "user"
            out.append({"role": role, "content": m.text})
            continue
        results = [error_marked(b) for b in m.content if isinstance(b, ToolResult)]
        rest = [b for b in m.content if not isinstance(b, ToolResult)]
        for r in results:
            if r.images and images:
                out.append({"role": "tool", "tool_call_id": r.call_id, "content": r.content})
                pending.append({"type": "text", "text": _tool_images_text(r)})
                pending.extend({"type": "image_url", "image_url": {"url": image_url(i)}} for i in r.images)
            else:
                if r.images:
                    warnings.append(left_out_warning(r, model))
                out.append({"role": "tool", "tool_call_id": r.call_id, "content": text_with_images_note(r)})
        if not rest:
            continue
        flush_images()
        for b in rest:
            if isinstance(b, ReasoningBlock) and b.signature and (b.provider, b.model) != (provider, model):
                warnings.append(
                    f"reasoning from {b.provider or 'another provider'}:{b.model or '?'} dropped "
                    f"(Chat Completions cannot take reasoning back)"
                )
        if m.role == "assistant":
            text = "".join(b.text for b in rest if isinstance(b, TextBlock))
            calls = [b for b in rest if isinstance(b, ToolCall)]
            msg: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(thaw(c.arguments), ensure_ascii=False)},
                    }
                    for c in calls
                ]
            out.append(msg)
            continue
        # user (or a tool message carrying other blocks): text, or text + image parts
        parts: list[dict[str, Any]] = []
        for b in rest:
            if isinstance(b, TextBlock):
                parts.append({"type": "text", "text": b.text})
            elif isinstance(b, ImageBlock):
                parts.append({"type": "image_url", "image_url": {"url": image_url(b)}})
        if not parts:
            continue
        if all(p["type"] == "text" for p in parts):
            out.append({"role": "user", "content": "".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    flush_images()
    return out, warnings


class OpenAIChatProvider(OpenAIProviderBase):
    """An :class:`~seamkit._ports.LLMPort` over Chat Completions (see the module doc).

    ``OpenAIChatProvider(config, client=None, environ=None)``. Raises
    :class:`~seamkit.errors.UnsupportedFeature` before dispatch for settings or schema constructs the
    model cannot take, and a classified :class:`~seamkit.errors.ProviderError` for every failure,
    also in the middle of a stream."""

    provider = "openai_chat"

    def __init__(self, config: OpenAIChatConfig, *, client: Any = None,
                 environ: Mapping[str, str] | None = None) -> None:
        super().__init__(config, client=client, environ=environ)
        self.refused_modes: dict[str, str | None] = {}
        """Structured-output modes the server refused (``json_schema``, ``json_object_schema``,
        ``json_object``) -> the ``param`` its error named."""

    def body(self, request: ChatRequest) -> tuple[dict[str, Any], list[str]]:
        """``(request body, warnings)`` for ``request``. Raises ``UnsupportedFeature``."""
        s = self.settings(request)
        return chat_body(self, request, s, refused=self.refused_modes)

    def _degrade(self, exc: ProviderError, body: Mapping[str, Any]) -> bool:
        """After ``exc`` answered ``body``: when it refuses the body's structured-output mode and a
        lower mode is left, remember the refusal and return ``True``."""
        fmt = body.get("response_format")
        if not isinstance(fmt, Mapping) or not refuses_output_mode(exc):
            return False
        if fmt.get("type") == "json_schema":
            mode = "json_schema"
        else:
            mode = "json_object_schema" if "schema" in fmt else "json_object"
        if mode == _MODES[-1] or mode in self.refused_modes:
            return False
        self.refused_modes[mode] = exc.param
        return True

    @unwraps_roots
    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        """Stream ``request`` (see the module doc). The last delta carries ``finish_reason`` and
        the priced ``usage``."""
        body, warnings = self.body(request)
        headers = self.headers()
        secrets = self.secrets()
        client = self.http_client()
        for w in warnings:
            yield Delta(warning=w)
        unpriced = self.unpriced_warning()
        if unpriced:
            yield Delta(warning=unpriced)
        finish: FinishReason | None = None
        raw_usage: dict[str, Any] | None = None
        done = False
        model_sent = False
        refused = False
        out_chars = 0

        def malformed(why: str) -> ProviderError:
            return ProviderError(_mask(f"malformed chunk: {why}", secrets), FailureClass.SERVER_ERROR,
                                 provider=self.provider)

        async with AsyncExitStack() as stack:
            while True:
                try:
                    events = await stack.enter_async_context(open_sse(
                        client, "POST", self.url("/chat/completions"), provider=self.provider, headers=headers,
                        json=body, secrets=secrets))
                    break
                except ProviderError as exc:
                    # refused before any output: a server without this structured-output mode
                    if not self._degrade(exc, body):
                        raise
                    body, again = self.body(request)
                    for w in again:
                        if w not in warnings:  # the others were said above
                            yield Delta(warning=w)
            async for event in events:
                if is_done(event):
                    done = True
                    break
                data = event.data
                if not data.strip():
                    continue
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise malformed(f"not JSON: {data[:200]!r}") from None
                if not isinstance(chunk, dict):
                    raise malformed(f"a JSON {type(chunk).__name__}, not an object")
                if chunk.get("error"):
                    raise classify_error_body(self.provider, chunk, secrets=secrets)
                if not model_sent and isinstance(chunk.get("model"), str) and chunk["model"]:
                    model_sent = True
                    yield Delta(model=chunk["model"])
                usage = chunk.get("usage")
                if isinstance(usage, dict):
                    raw_usage = usage
                elif usage is not None:
                    raise malformed(f"usage is a JSON {json_kind(usage)}, not an object")
                choices = chunk.get("choices")
                if choices is None:
                    choices = []
                elif not isinstance(choices, list):
                    raise malformed(f"choices is a JSON {json_kind(choices)}, not an array")
                for choice in choices:
                    if not isinstance(choice, dict):
                        raise malformed(f"a choice is a JSON {json_kind(choice)}, not an object")
                    if choice.get("index", 0) != 0:
                        continue
                    delta = choice.get("delta")
                    if delta is None:
                        delta = {}
                    elif not isinstance(delta, dict):
                        raise malformed(f"choices[].delta is a JSON {json_kind(delta)}, not an object")
                    text = delta.get("content")
                    if isinstance(text, str) and text:
                        out_chars += len(text)
                        yield Delta(text=text)
                    for key in ("reasoning_content", "reasoning"):
                        r = delta.get(key)
                        if isinstance(r, str) and r:
                            out_chars += len(r)
                            yield Delta(reasoning=r)
                            break
                    refusal = delta.get("refusal")
                    if isinstance(refusal, str) and refusal:
                        refused = True
                        yield Delta(text=refusal)
                    tool_calls = delta.get("tool_calls")
                    if tool_calls is None:
                        tool_calls = []
                    elif not isinstance(tool_calls, list):
                        raise malformed(f"delta.tool_calls is a JSON {json_kind(tool_calls)}, not an array")
                    for tc in tool_calls:
                        if not isinstance(tc, dict):
                            raise malformed(f"a tool call fragment is a JSON {json_kind(tc)}, not an object")
                        fn = tc.get("function")
                        if fn is None:
                            fn = {}
                        elif not isinstance(fn, dict):
                            raise malformed(f"tool_calls[].function is a JSON {json_kind(fn)}, not an object")
                        args = fn.get("arguments")
                        index = tc.get("index")
                        call_id = tc.get("id")
                        name = fn.get("name")
                        out_chars += len(args) if isinstance(args, str) else 0
                        yield Delta(tool_call=ToolCallDelta(
                            index=index if isinstance(index, int) and not isinstance(index, bool) else 0,
                            id=call_id if isinstance(call_id, str) and call_id else None,
                            name=name if isinstance(name, str) and name else None,
                            arguments=args if isinstance(args, str) else "",
                        ))
                    fr = choice.get("finish_reason")
                    if isinstance(fr, str) and fr:
                        finish = _FINISH.get(fr, "stop")
        if not done and finish is None:
            raise ProviderError("the stream ended before the response was complete (no finish_reason, no [DONE])",
                                FailureClass.SERVER_ERROR, provider=self.provider)
        if refused:
            finish = "refusal"
        if raw_usage is not None:
            usage_value = self.usage_from(raw_usage)
        else:
            usage_value = self.price_usage(
                Usage(estimate_tokens(request), (out_chars + 3) // 4, requests=1)
            )
            yield Delta(warning="the server reported no usage; token counts are estimates")
        yield Delta(
            finish_reason=finish or "stop",
            usage=usage_value,
            raw_usage=freeze(raw_usage) if raw_usage is not None else None,
        )


def chat_body(p: OpenAIProviderBase, request: ChatRequest, s: Settings,
              refused: Mapping[str, str | None] | Collection[str] = ()) -> tuple[dict[str, Any], list[str]]:
    """The Chat Completions request body for ``request`` with checked settings ``s`` on provider ``p``:
    ``(body, warnings)``. ``refused``: structured-output modes the server refused (see the module
    doc; a mapping mode -> the ``param`` named by the refusal); the first mode at or below the planned
    one that is not refused is sent, with a warning when it is not the planned one. Raises ``UnsupportedFeature``
    (structured output)."""
    caps = p.capabilities
    warnings = list(s.warnings)
    messages, w = chat_messages(
        request.messages, developer_role=caps.developer_role, system_role=caps.system_role,
        provider=p.provider, model=p.model, images=caps.images,
    )
    warnings.extend(w)
    body: dict[str, Any] = {"model": p.model, "messages": messages, "stream": True}
    if caps.stream_options:
        body["stream_options"] = {"include_usage": True}
    if request.tools and caps.tools:
        tools = []
        for t in request.tools:
            plan = p.tool_plan(t)
            warnings.extend(plan.warnings)
            fn: dict[str, Any] = {"name": t.name, "description": t.description, "parameters": plan.schema}
            if plan.strict:
                fn["strict"] = True
            tools.append({"type": "function", "function": fn})
        body["tools"] = tools
        choice = request.tool_choice
        if choice in ("none", "required"):
            body["tool_choice"] = choice
        elif choice != "auto":
            body["tool_choice"] = {"type": "function", "function": {"name": choice}}
    fmt = p.output_format(request)
    if fmt is not None:
        warnings.extend(fmt.warnings)
        planned = _mode(fmt)
        mode = next((m for m in _MODES[_MODES.index(planned):] if m not in refused), _MODES[-1])
        # the schema the planned mode would send (it may differ from the canonical one, e.g. strict or
        # wrapped, and the answer is read back accordingly), else the canonical schema
        sent = fmt.schema if fmt.schema is not None else thaw(request.output_schema)
        if mode != planned:
            warnings.append(_degradation_warning(p.base_url, planned, mode, refused))
            fmt = dataclasses.replace(fmt, kind="json_object", schema=sent if mode == "json_object_schema" else None,
                                      strict=False, warnings=[])
        if mode != "json_schema" and (mode != planned or fmt.schema is None):
            # the server does not get the schema (or may ignore it in a dialect it was not asked for)
            _with_instruction(messages, sent)
        if fmt.kind == "json_schema":
            js: dict[str, Any] = {"name": fmt.name, "schema": fmt.schema}
            if fmt.strict:
                js["strict"] = True
            body["response_format"] = {"type": "json_schema", "json_schema": js}
        elif fmt.schema is not None:
            body["response_format"] = {"type": "json_object", "schema": fmt.schema}
        else:
            body["response_format"] = {"type": "json_object"}
    if s.temperature is not None:
        body["temperature"] = s.temperature
    if s.max_tokens is not None:
        body[s.max_tokens_param] = s.max_tokens
    if s.seed is not None:
        body["seed"] = s.seed
    if s.stop:
        body["stop"] = list(s.stop)
    if s.reasoning_effort is not None:
        body["reasoning_effort"] = s.reasoning_effort
    for k, v in s.extra.items():
        if k in _PROTECTED:
            warnings.append(f"extra setting {k!r} ignored (set by the provider)")
        elif k == "parallel_tool_calls" and not caps.parallel_tool_calls:
            warnings.append(f"parallel_tool_calls not supported by {p.model}; not sent")
        else:
            body[k] = v
    return body, warnings


def build(config: OpenAIChatConfig, *, client: Any = None, environ: Mapping[str, str] | None = None
          ) -> OpenAIChatProvider:
    """The ``openai_chat`` component factory: ``config`` validated; ``client`` an
    ``httpx.AsyncClient`` to send with (tests); ``environ`` replaces ``os.environ`` (tests)."""
    return OpenAIChatProvider(config, client=client, environ=environ)


