"""The ``openai`` provider: OpenAI's Responses API (``POST {base_url}/responses``), streaming.

Wire format: OpenAI API reference, "Responses > Create a model response" (request body) and
"Responses > Streaming events" (typed server-sent events, each ``event: <type>`` +
``data: {"type": <type>, "sequence_number": n, ...}``, no ``[DONE]`` sentinel; the stream ends
with ``response.completed``, ``response.incomplete`` or ``response.failed``).

Request mapping (:meth:`OpenAIResponsesProvider.body`):

- Leading system messages -> ``instructions`` (joined with a blank line); later system messages ->
  input messages with role ``developer`` (reasoning models) or ``system`` (a ``user`` message for a
  model without system roles).
- User text / images -> input messages (``input_text`` / ``input_image`` with ``image_url``: a URL
  or a ``data:`` URL, ``detail: auto``); a message of one text block is sent as a plain string.
- Assistant text -> an assistant input message; :class:`~seamkit.values.ToolCall` -> a
  ``function_call`` item (``call_id``, ``name``, ``arguments`` as JSON text);
  :class:`~seamkit.values.ToolResult` -> a ``function_call_output`` item (``call_id``, ``output``;
  an error result is sent as its content: the API has no error flag). ``output`` is the result's
  text, or, when the tool returned images, an array of an ``input_text`` item (when there is
  text) and one ``input_image`` item per image (``image_url``: a URL or a ``data:`` URL, ``detail:
  auto``): reference "Responses > Create a model response" -> ``input`` -> "Function tool call
  output" -> ``output``: "Text, image, or file output of the function tool call", a string or an
  array of ``input_text`` / ``input_image`` / ``input_file`` (SDK
  ``types/responses/response_input_item_param.py`` ``FunctionCallOutput.output:
  Union[str, ResponseFunctionCallOutputItemListParam]``). A model that takes no images
  (capability ``images`` off) gets the text with the note of :mod:`seamkit._tool_images` instead,
  and a warning: not a refusal, as a run must not fail because a tool returned a picture.
- :class:`~seamkit.values.ReasoningBlock` written by this component and model (a dated snapshot
  of the model counts as the model) -> the ``reasoning`` items it came from (``id``, ``summary``,
  ``encrypted_content``, kept in :attr:`ReasoningBlock.signature` as JSON ``{"v": 1, "items":
  [...]}``); any other reasoning block is dropped with a ``Delta(warning=...)``.
- ``tools`` -> function tools (``strict: true`` only when strict compilation changes nothing,
  else ``strict: false``: the API's default is strict; a warning when strict mode cannot express
  the parameters; a root that is not an object is wrapped and the arguments unwrapped, see
  ``seamkit._schema_wrap``); ``tool_choice`` ``auto`` / ``required`` /
  ``none`` / ``{"type": "function", "name": ...}``; ``output_schema`` -> ``text.format``
  (``json_schema``, strict-compiled, or with ``strict: false`` and a warning where strict mode
  cannot express it, or ``json_object`` with the schema added to ``instructions``,
  as JSON mode requires the input to ask for JSON); reasoning models get ``reasoning:
  {effort, summary}`` and, with ``store: false`` (the default), ``include:
  ["reasoning.encrypted_content"]``; ``max_tokens`` -> ``max_output_tokens``; ``extra`` keys are
  merged into the body last (except ``stream``, always ``true``).
- Not in the Responses API: ``seed`` (not sent, with a warning) and ``stop`` (refused with
  :class:`~seamkit.errors.UnsupportedFeature`: use ``openai_chat``).

Stream mapping (:meth:`OpenAIResponsesProvider.stream`): ``response.output_text.delta`` -> text;
``response.refusal.delta`` -> text, finish ``refusal``; ``response.output_item.added`` of a
``function_call`` + ``response.function_call_arguments.delta`` -> tool-call fragments (index =
``output_index``, id = ``call_id``); ``response.reasoning_summary_text.delta`` and
``response.reasoning_text.delta`` -> reasoning (summary parts separated by a blank line);
``response.output_item.done`` of a ``reasoning`` item -> kept for the signature;
``response.completed`` -> finish ``stop`` / ``tool_calls`` with usage (``input_tokens`` including
``input_tokens_details.cached_tokens``, ``output_tokens`` including
``output_tokens_details.reasoning_tokens``); ``response.incomplete`` -> finish ``length``
(``max_output_tokens``) or ``content_filter``; ``response.failed`` and ``error`` events -> a
classified :class:`~seamkit.errors.ProviderError` (credentials echoed by the server masked); an
event whose fields have the wrong JSON type (a text ``delta`` that is not a string, a
``response`` or ``usage`` that is not an object, ...) -> ``ProviderError`` ``server_error``
("malformed event"); a stream that ends without a terminal event -> ``ProviderError``
``server_error``. Unknown event types are ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from seamkit.errors import FailureClass, ProviderError, UnsupportedFeature
from seamkit.plugin import left_out_warning, text_with_images_note
from seamkit.values import (
    ChatRequest,
    Delta,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
    freeze,
)
from seamkit_http.wire import json_kind

from seamkit_openai._common import OpenAIProviderBase, Settings, error_marked, image_url, unwraps_roots
from seamkit_openai.config import OpenAIResponsesConfig

__all__ = ["OpenAIResponsesProvider", "build", "same_model", "SIGNATURE_VERSION"]

SIGNATURE_VERSION = 1
"""Version of the JSON kept in :attr:`ReasoningBlock.signature` (``{"v": 1, "items": [...]}``)."""

_DATED = re.compile(r"^(?P<family>.+?)(?:-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")

# response.error codes (Responses API "ResponseError.code") the shared HTTP classifier does not name.
_RESPONSE_ERROR_CODES: dict[str, FailureClass] = {
    "vector_store_timeout": FailureClass.TIMEOUT,
    "image_content_policy_violation": FailureClass.CONTENT_FILTER,
    "invalid_image": FailureClass.INVALID_REQUEST,
    "invalid_image_format": FailureClass.INVALID_REQUEST,
    "invalid_base64_image": FailureClass.INVALID_REQUEST,
    "invalid_image_url": FailureClass.INVALID_REQUEST,
    "image_too_large": FailureClass.INVALID_REQUEST,
    "image_too_small": FailureClass.INVALID_REQUEST,
    "image_parse_error": FailureClass.INVALID_REQUEST,
    "invalid_image_mode": FailureClass.INVALID_REQUEST,
    "image_file_too_large": FailureClass.INVALID_REQUEST,
    "unsupported_image_media_type": FailureClass.INVALID_REQUEST,
    "empty_image_file": FailureClass.INVALID_REQUEST,
    "failed_to_download_image": FailureClass.INVALID_REQUEST,
    "image_file_not_found": FailureClass.INVALID_REQUEST,
}


def same_model(written_by: str | None, model: str) -> bool:
    """``True`` when ``written_by`` (a ReasoningBlock's model) is ``model`` or a dated snapshot /
    ``-latest`` alias of the same family (the API answers ``o4-mini`` with ``o4-mini-2025-04-16``)."""
    if written_by is None:
        return False
    if written_by == model:
        return True

    def family(m: str) -> str:
        hit = _DATED.match(m)
        return hit.group("family") if hit else m

    return family(written_by) == family(model)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _reasoning_items(signature: str | None) -> list[dict[str, Any]] | None:
    """The reasoning input items kept in a signature, or ``None`` when it is not ours."""
    if not signature:
        return None
    try:
        data = json.loads(signature)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("v") != SIGNATURE_VERSION or not isinstance(data.get("items"), list):
        return None
    items: list[dict[str, Any]] = []
    for raw in data["items"]:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            return None
        item: dict[str, Any] = {"type": "reasoning", "id": raw["id"],
                                "summary": [{"type": "summary_text", "text": t}
                                            for t in raw.get("summary", []) if isinstance(t, str)]}
        if isinstance(raw.get("encrypted_content"), str):
            item["encrypted_content"] = raw["encrypted_content"]
        items.append(item)
    return items


def _str(obj: Mapping[str, Any], key: str) -> str | None:
    """``obj[key]`` when it is a string, ``None`` when absent or null; ``TypeError`` otherwise."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{key} is a JSON {json_kind(value)}, not a string")


def _obj(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is an object, ``{}`` when absent or null; ``TypeError`` otherwise."""
    value = obj.get(key)
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    raise TypeError(f"{key} is a JSON {json_kind(value)}, not an object")


class OpenAIResponsesProvider(OpenAIProviderBase):
    """An :class:`~seamkit._ports.LLMPort` over the Responses API (see the module doc).

    ``OpenAIResponsesProvider(config, client=None, environ=None)``: ``client`` an
    ``httpx.AsyncClient`` to send with (tests inject one over ``seamkit_http.ReplayTransport``);
    ``environ`` replaces ``os.environ`` for credentials (tests). Attributes: ``provider``
    (``"openai"``), ``model``, ``config``, ``base_url``, ``capabilities``, ``price``.
    """

    provider = "openai"
    config: OpenAIResponsesConfig

    # -- request ----------------------------------------------------------------------------

    def body(self, request: ChatRequest) -> tuple[dict[str, Any], list[str]]:
        """The JSON request body for ``request`` and the warnings (explicit degradations) to report.

        Raises :class:`~seamkit.errors.UnsupportedFeature` before dispatch for what the model or the
        Responses API cannot take (temperature on a reasoning model, stop sequences, tools or images
        the model lacks, an unknown ``tool_choice``). A schema strict mode cannot express is sent
        with ``strict: false`` and a warning, never refused."""
        s: Settings = self.settings(request)
        warnings = list(s.warnings)
        caps = self.capabilities
        if s.stop:
            raise UnsupportedFeature(
                "stop sequences are not part of the Responses API; use the openai_chat component",
                provider=self.provider, model=self.model, feature="stop",
            )
        if s.seed is not None:
            warnings.append("seed is not part of the Responses API; not sent")
        instructions, items = self._input(request.messages, warnings)
        fmt = self.output_format(request)
        if fmt is not None and fmt.kind == "json_object" and request.output_schema is not None:
            # JSON mode needs the conversation to ask for JSON; the schema itself is checked afterwards.
            note = "Reply with one JSON document valid for this JSON Schema: " + _json_text(request.output_schema)
            instructions = f"{instructions}\n\n{note}" if instructions else note
        body: dict[str, Any] = {"model": self.model}
        if instructions is not None:
            body["instructions"] = instructions
        body["input"] = items
        if request.tools:
            names = [t.name for t in request.tools]
            tools = []
            for tool in request.tools:
                plan = self.tool_plan(tool)
                warnings.extend(plan.warnings)
                spec: dict[str, Any] = {"type": "function", "name": tool.name}
                if tool.description:
                    spec["description"] = tool.description
                spec["parameters"] = plan.schema
                spec["strict"] = plan.strict
                tools.append(spec)
            body["tools"] = tools
            body["tool_choice"] = self._tool_choice(request.tool_choice, names)
        elif request.tool_choice not in ("auto", "none"):
            raise UnsupportedFeature(
                f"tool_choice {request.tool_choice!r} needs tools, and the request offers none",
                provider=self.provider, model=self.model, feature="tool_choice",
            )
        if fmt is not None:
            warnings.extend(fmt.warnings)
            if fmt.kind == "json_schema":
                body["text"] = {"format": {"type": "json_schema", "name": fmt.name, "schema": fmt.schema,
                                           "strict": fmt.strict}}
            else:
                body["text"] = {"format": {"type": "json_object"}}
        if caps.reasoning:
            reasoning: dict[str, Any] = {}
            if s.reasoning_effort is not None:
                reasoning["effort"] = s.reasoning_effort
            if self.config.reasoning_summary is not None:
                reasoning["summary"] = self.config.reasoning_summary
            if reasoning:
                body["reasoning"] = reasoning
            if not self.config.store:
                body["include"] = ["reasoning.encrypted_content"]
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.max_tokens is not None:
            body["max_output_tokens"] = s.max_tokens
        body["store"] = self.config.store
        body["stream"] = True
        body.update(s.extra)
        body["stream"] = True  # this provider reads an event stream, whatever ``extra`` says
        return body, warnings

    def _tool_choice(self, choice: str, names: list[str]) -> Any:
        if choice in ("auto", "required", "none"):
            return choice
        if choice in names:
            return {"type": "function", "name": choice}
        raise UnsupportedFeature(
            f"tool_choice {choice!r} is not one of the offered tools ({', '.join(names)}) nor auto/required/none",
            provider=self.provider, model=self.model, feature="tool_choice",
        )

    def _system_role(self) -> str:
        caps = self.capabilities
        if not caps.system_role:
            return "user"
        return "developer" if caps.developer_role else "system"

    def _input(self, messages: tuple[Message, ...], warnings: list[str]) -> tuple[str | None, list[dict[str, Any]]]:
        instructions: list[str] = []
        items: list[dict[str, Any]] = []
        leading = self.capabilities.system_role
        for m in messages:
            if m.role == "system":
                text = m.text
                if leading:
                    instructions.append(text)
                else:
                    items.append({"role": self._system_role(), "content": text})
                continue
            leading = False
            if m.role == "assistant":
                self._assistant(m, items, warnings)
            else:
                self._user(m, items, warnings)
        return ("\n\n".join(instructions) if instructions else None), items

    def _user(self, m: Message, items: list[dict[str, Any]], warnings: list[str]) -> None:
        parts: list[dict[str, Any]] = []

        def flush() -> None:
            if not parts:
                return
            if len(parts) == 1 and parts[0]["type"] == "input_text":
                items.append({"role": "user", "content": parts[0]["text"]})
            else:
                items.append({"role": "user", "content": list(parts)})
            parts.clear()

        for b in m.content:
            if isinstance(b, TextBlock):
                parts.append({"type": "input_text", "text": b.text})
            elif isinstance(b, ImageBlock):
                parts.append({"type": "input_image", "image_url": image_url(b), "detail": "auto"})
            elif isinstance(b, ToolResult):
                flush()
                items.append(self._output_item(b, warnings))
            elif isinstance(b, ToolCall):  # a tool call outside an assistant message: keep it as one
                flush()
                items.append(self._call_item(b))
        flush()

    def _output_item(self, b: ToolResult, warnings: list[str]) -> dict[str, Any]:
        """The ``function_call_output`` item for ``b`` (see the module doc: its images in an
        ``output`` array, or named in its text for a model that takes no images; an error result's
        text says so: :func:`~seamkit_openai._common.error_marked`)."""
        b = error_marked(b)
        output: str | list[dict[str, Any]] = b.content
        if b.images and self.capabilities.images:
            text = [{"type": "input_text", "text": b.content}] if b.content else []
            output = text + [{"type": "input_image", "image_url": image_url(i), "detail": "auto"} for i in b.images]
        elif b.images:
            warnings.append(left_out_warning(b, self.model))
            output = text_with_images_note(b)
        return {"type": "function_call_output", "call_id": b.call_id, "output": output}

    def _call_item(self, b: ToolCall) -> dict[str, Any]:
        return {"type": "function_call", "call_id": b.id, "name": b.name, "arguments": _json_text(b.arguments)}

    def _assistant(self, m: Message, items: list[dict[str, Any]], warnings: list[str]) -> None:
        texts: list[str] = []

        def flush() -> None:
            if texts:
                items.append({"role": "assistant", "content": "".join(texts)})
                texts.clear()

        for b in m.content:
            if isinstance(b, TextBlock):
                texts.append(b.text)
            elif isinstance(b, ReasoningBlock):
                flush()
                kept = self._reasoning(b, warnings)
                items.extend(kept)
            elif isinstance(b, ToolCall):
                flush()
                items.append(self._call_item(b))
            elif isinstance(b, ToolResult):
                flush()
                items.append(self._output_item(b, warnings))
            elif isinstance(b, ImageBlock):
                flush()
                warnings.append("an image in an assistant message was not sent (the Responses API takes "
                                "images in user input only)")
        flush()

    def _reasoning(self, b: ReasoningBlock, warnings: list[str]) -> list[dict[str, Any]]:
        if b.provider == self.provider and same_model(b.model, self.model):
            items = _reasoning_items(b.signature)
            if items is not None and not self.config.store:
                # store: false -> the server kept nothing: an item id alone would be a 404
                items = [i for i in items if "encrypted_content" in i] or None
            if items is not None:
                return items
            why = "it carries no reasoning item id / encrypted content"
        else:
            who = f"{b.provider or 'an unknown provider'}:{b.model or 'an unknown model'}"
            why = f"it was written by {who}, not {self.provider}:{self.model}"
        warnings.append(f"dropped a reasoning block from the transcript: {why} (reasoning is only sent back "
                        "to the model that wrote it)")
        return []

    # -- response ---------------------------------------------------------------------------

    @unwraps_roots
    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        """Stream one response as deltas; the last carries ``finish_reason``, ``usage``, ``model``
        and ``raw_usage``. Raises :class:`~seamkit.errors.UnsupportedFeature` before dispatch and
        :class:`~seamkit.errors.ProviderError` (classified) for every failure, also mid-stream."""
        from seamkit_http import open_sse

        body, warnings = self.body(request)
        headers = self.headers()
        secrets = self.secrets()
        unpriced = self.unpriced_warning()
        if unpriced is not None:
            warnings.append(unpriced)
        state = _StreamState(self, secrets)
        async with open_sse(self.http_client(), "POST", self.url("/responses"), provider=self.provider,
                            headers=headers, json=body, secrets=secrets) as events:
            for w in warnings:
                yield Delta(warning=w)
            async for event in events:
                if not event.data:
                    continue
                try:
                    payload = json.loads(event.data)
                except ValueError:
                    raise state.malformed(f"stream event {event.event[:100]!r} is not valid JSON") from None
                if not isinstance(payload, dict):
                    continue
                try:
                    handled = state.handle(payload, event.event)
                except (AttributeError, TypeError, ValueError) as exc:
                    # a field of the wrong JSON type (e.g. "response": "x", "content_index": "a")
                    raise state.malformed(f"{str(payload.get('type') or event.event)[:100]!r} event: {exc}") from None
                for d in handled:
                    yield d
                if state.done:
                    return
        raise ProviderError("the stream ended before response.completed (connection dropped?)",
                            FailureClass.SERVER_ERROR, provider=self.provider)


class _Call:
    __slots__ = ("args", "call_id", "index", "name")

    def __init__(self, index: int, call_id: str | None, name: str | None) -> None:
        self.index = index
        self.call_id = call_id
        self.name = name
        self.args = False  # any argument text streamed yet


class _StreamState:
    """Folds Responses API events into deltas (one instance per call)."""

    def __init__(self, p: OpenAIResponsesProvider, secrets: list[str]) -> None:
        self.p = p
        self.secrets = secrets
        self.done = False
        self.calls: dict[str, _Call] = {}  # item id -> call
        self.text_seen: set[tuple[str, int]] = set()  # (item id, content index) with streamed text
        self.reasoning_items: list[dict[str, Any]] = []
        self.reasoning_started = False
        self.summary_seen: set[tuple[str, int]] = set()
        self.refused = False
        self.any_call = False

    # -- helpers --------------------------------------------------------------------------

    def _call_added(self, item: Mapping[str, Any], output_index: int) -> list[Delta]:
        item_id = str(_str(item, "id") or _str(item, "call_id") or f"output_{output_index}")
        call = _Call(output_index, _str(item, "call_id") or _str(item, "id"), _str(item, "name"))
        self.calls[item_id] = call
        self.any_call = True
        args = _str(item, "arguments") or ""
        if args:
            call.args = True
        return [Delta(tool_call=ToolCallDelta(output_index, call.call_id, call.name, args))]

    def _error(self, body: Mapping[str, Any]) -> ProviderError:
        from seamkit_http import classify_error_body

        err = classify_error_body(self.p.provider, body, secrets=self.secrets)
        code = err.code
        if err.failure_class is FailureClass.UNKNOWN and code in _RESPONSE_ERROR_CODES:
            err = err.replace(failure_class=_RESPONSE_ERROR_CODES[code])
        return err

    def malformed(self, why: str) -> ProviderError:
        """``ProviderError(server_error)`` for an event this parser cannot read (secrets masked)."""
        text = f"malformed event: {why}"
        for secret in self.secrets:
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return ProviderError(text, FailureClass.SERVER_ERROR, provider=self.p.provider)

    def _reasoning_delta(self, text: str, key: tuple[str, int]) -> Delta:
        if key not in self.summary_seen:
            sep = bool(self.reasoning_started)
            self.summary_seen.add(key)
            self.reasoning_started = True
            if sep:
                text = "\n\n" + text
        return Delta(reasoning=text)

    def _finish(self, response: Mapping[str, Any], finish: str) -> list[Delta]:
        out: list[Delta] = []
        if not self.reasoning_items:
            for item in response.get("output") or ():
                if isinstance(item, Mapping) and item.get("type") == "reasoning":
                    self._keep_reasoning(item)
        if self.reasoning_items:
            out.append(Delta(reasoning_signature=_json_text({"v": SIGNATURE_VERSION, "items": self.reasoning_items})))
        raw = response.get("usage")
        if raw is not None and not isinstance(raw, Mapping):
            raise TypeError(f"response.usage is a JSON {json_kind(raw)}, not an object")
        usage = self.p.usage_from(raw) if isinstance(raw, Mapping) else self.p.price_usage(Usage(requests=1))
        model = response.get("model")
        out.append(Delta(usage=usage, finish_reason=finish,  # type: ignore[arg-type]
                         model=model if isinstance(model, str) and model else None,
                         raw_usage=freeze(raw) if isinstance(raw, Mapping) else None))
        self.done = True
        return out

    def _keep_reasoning(self, item: Mapping[str, Any]) -> None:
        rid = item.get("id")
        if not isinstance(rid, str):
            return
        kept: dict[str, Any] = {"id": rid, "summary": [
            s.get("text", "") for s in item.get("summary") or () if isinstance(s, Mapping)
        ]}
        if isinstance(item.get("encrypted_content"), str):
            kept["encrypted_content"] = item["encrypted_content"]
        self.reasoning_items.append(kept)

    # -- events ---------------------------------------------------------------------------

    def handle(self, ev: Mapping[str, Any], sse_event: str) -> list[Delta]:
        kind = ev.get("type")
        if not isinstance(kind, str):
            kind = sse_event
        if kind == "response.output_text.delta":
            delta = _str(ev, "delta")
            if not delta:
                return []
            self.text_seen.add((str(ev.get("item_id")), int(ev.get("content_index") or 0)))
            return [Delta(text=delta)]
        if kind == "response.function_call_arguments.delta":
            delta = _str(ev, "delta")
            if not delta:
                return []
            call = self.calls.get(str(ev.get("item_id")))
            if call is None:  # arguments before (or without) output_item.added
                call = self._orphan(ev)
            call.args = True
            return [Delta(tool_call=ToolCallDelta(call.index, call.call_id, None, delta))]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            delta = _str(ev, "delta")
            if not delta:
                return []
            summary = kind == "response.reasoning_summary_text.delta"
            idx = ev.get("summary_index") if summary else ev.get("content_index")
            return [self._reasoning_delta(delta, (f"{kind}:{ev.get('item_id')}", int(idx or 0)))]
        if kind == "response.output_item.added":
            item = ev.get("item")
            if isinstance(item, Mapping) and item.get("type") == "function_call":
                return self._call_added(item, int(ev.get("output_index") or 0))
            return []
        if kind == "response.output_text.done":
            key = (str(ev.get("item_id")), int(ev.get("content_index") or 0))
            text = _str(ev, "text")
            if key not in self.text_seen and text:
                self.text_seen.add(key)
                return [Delta(text=text)]
            return []
        if kind == "response.function_call_arguments.done":
            call = self.calls.get(str(ev.get("item_id")))
            if call is None:
                call = self._orphan(ev)
            args = _str(ev, "arguments")
            if not call.args and args:
                call.args = True
                return [Delta(tool_call=ToolCallDelta(call.index, call.call_id, None, args))]
            return []
        if kind == "response.refusal.delta":
            delta = _str(ev, "delta")
            self.refused = True
            self.text_seen.add((str(ev.get("item_id")), int(ev.get("content_index") or 0)))
            return [Delta(text=delta)] if delta else []
        if kind == "response.refusal.done":
            self.refused = True
            key = (str(ev.get("item_id")), int(ev.get("content_index") or 0))
            refusal = _str(ev, "refusal")
            if key not in self.text_seen and refusal:
                self.text_seen.add(key)
                return [Delta(text=refusal)]
            return []
        if kind == "response.output_item.done":
            return self._item_done(ev)
        if kind == "response.completed":
            response = _obj(ev, "response")
            finish = "refusal" if self.refused else ("tool_calls" if self.any_call else "stop")
            return self._finish(response, finish)
        if kind == "response.incomplete":
            response = _obj(ev, "response")
            details = response.get("incomplete_details") or {}
            reason = details.get("reason") if isinstance(details, Mapping) else None
            return self._finish(response, "content_filter" if reason == "content_filter" else "length")
        if kind == "response.failed":
            response = _obj(ev, "response")
            error = response.get("error") if isinstance(response, Mapping) else None
            if not isinstance(error, Mapping):
                error = {"code": "server_error", "message": "the response failed without an error object"}
            raise self._error({"error": error})
        if kind == "error":
            raise self._error(ev)
        return []  # response.created, content parts, annotations, tool progress events...

    def _orphan(self, ev: Mapping[str, Any]) -> _Call:
        index = int(ev.get("output_index") or 0)
        item_id = str(ev.get("item_id") or f"output_{index}")
        call = _Call(index, None, ev.get("name") if isinstance(ev.get("name"), str) else None)
        self.calls[item_id] = call
        self.any_call = True
        return call

    def _item_done(self, ev: Mapping[str, Any]) -> list[Delta]:
        item = ev.get("item")
        if not isinstance(item, Mapping):
            return []
        kind = item.get("type")
        if kind == "reasoning":
            self._keep_reasoning(item)
            return []
        if kind == "function_call":
            item_id = str(item.get("id") or item.get("call_id"))
            call = self.calls.get(item_id)
            out: list[Delta] = []
            if call is None:  # a call announced only when done
                out.extend(self._call_added(item, int(ev.get("output_index") or 0)))
                return out
            if call.call_id is None and _str(item, "call_id"):
                call.call_id = item["call_id"]
                out.append(Delta(tool_call=ToolCallDelta(call.index, call.call_id, _str(item, "name"), "")))
            if not call.args and _str(item, "arguments"):
                call.args = True
                out.append(Delta(tool_call=ToolCallDelta(call.index, call.call_id, None, item["arguments"])))
            return out
        if kind == "message":
            out = []
            for ci, part in enumerate(item.get("content") or ()):
                if not isinstance(part, Mapping):
                    continue
                key = (str(item.get("id")), ci)
                if key in self.text_seen:
                    continue
                if part.get("type") == "output_text" and _str(part, "text"):
                    self.text_seen.add(key)
                    out.append(Delta(text=part["text"]))
                elif part.get("type") == "refusal" and _str(part, "refusal"):
                    self.text_seen.add(key)
                    self.refused = True
                    out.append(Delta(text=part["refusal"]))
            return out
        return []


def build(config: OpenAIResponsesConfig, *, client: Any = None,
          environ: Mapping[str, str] | None = None) -> OpenAIResponsesProvider:
    """The ``openai`` component's factory: an :class:`OpenAIResponsesProvider` for ``config``.
    ``client`` (an ``httpx.AsyncClient``) and ``environ`` are for tests."""
    return OpenAIResponsesProvider(config, client=client, environ=environ)
