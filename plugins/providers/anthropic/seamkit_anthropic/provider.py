"""The ``anthropic`` provider: Claude through the Messages API, streamed over httpx.

Wire protocol ("Streaming Messages", platform.claude.com): ``POST {base_url}/v1/messages`` with
``stream: true`` answers server-sent events ``message_start`` (usage so far, model), per content
block ``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``,
``thinking_delta``, ``signature_delta``) / ``content_block_stop``, ``message_delta`` (stop reason,
cumulative usage) and ``message_stop``; ``ping`` events anywhere; an ``error`` event can arrive
after the 200 status and raises a classified :class:`~seamkit.errors.ProviderError`; unknown events
are ignored. A stream that ends without ``message_stop`` raises ``server_error``.

Usage: ``input_tokens`` of a :class:`~seamkit.values.Usage` is Anthropic's ``input_tokens`` (the
uncached part) + ``cache_read_input_tokens`` + ``cache_creation_input_tokens``; cache reads and
writes are reported apart. Cost comes from the packaged price table (``prices.json``), a 1-hour
cache write costing twice the input price ("Prompt caching" -> pricing); an unknown model is
unpriced (cost ``None``) with a warning, never $0.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import replace
from decimal import Decimal
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import httpx
from seamkit.errors import FailureClass, ProviderError
from seamkit.plugin import MILLION, Price, PriceTable, collect_result, load_price_table, price_usage, unwrap_deltas
from seamkit.values import ChatRequest, Delta, FinishReason, FrozenDict, LLMResult, ToolCallDelta, Usage, freeze
from seamkit_http import (
    classify_error_body,
    is_loopback,
    json_kind,
    local_pricing,
    make_client,
    open_sse,
    shared_client,
)

from seamkit_anthropic.capabilities import Capabilities, capabilities_for
from seamkit_anthropic.config import API_VERSION, DEFAULT_BASE_URL, AnthropicConfig
from seamkit_anthropic.request import Prepared, build_body, encode_thinking, family

__all__ = ["AnthropicProvider", "build", "price_table", "long_prompt_prices", "STOP_REASONS"]

log = logging.getLogger("seamkit_anthropic")

PROVIDER = "anthropic"

STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}
"""Messages API ``stop_reason`` -> :data:`~seamkit.values.FinishReason` ("Handling stop reasons")."""


@lru_cache(maxsize=1)
def price_table() -> PriceTable:
    """The packaged price table (``seamkit_anthropic/prices.json``)."""
    return load_price_table("seamkit_anthropic", "prices.json")


@lru_cache(maxsize=1)
def long_prompt_prices() -> dict[str, tuple[int, Price]]:
    """Models priced by prompt length (``long_prompt`` in ``prices.json``): model -> (threshold in
    prompt tokens, the price of a request whose prompt is longer)."""
    from importlib import resources

    data = json.loads(resources.files("seamkit_anthropic").joinpath("prices.json").read_text(encoding="utf-8"))
    out: dict[str, tuple[int, Price]] = {}
    for model, entry in (data.get("long_prompt") or {}).items():
        entry = dict(entry)
        threshold = int(entry.pop("threshold_tokens"))
        out[model] = (threshold, Price.of(entry, f"long_prompt.{model}"))
    return out


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def is_anthropic_host(url: str) -> bool:
    """``True`` when ``url``'s host is ``api.anthropic.com`` (or another ``*.anthropic.com`` host)."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host == "anthropic.com" or host.endswith(".anthropic.com")


def _obj(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``data[key]`` when it is an object, ``{}`` when absent or null; ``TypeError`` otherwise."""
    value = data.get(key)
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    raise TypeError(f"{key} is a JSON {json_kind(value)}, not an object")


def _str(data: Mapping[str, Any], key: str) -> str | None:
    """``data[key]`` when it is a string, ``None`` when absent or null; ``TypeError`` otherwise."""
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{key} is a JSON {json_kind(value)}, not a string")


def _check_event(kind: Any, data: Mapping[str, Any]) -> str | None:
    """Why an event's fields have the wrong JSON types for this parser (``None`` when they are
    fine); raises ``TypeError`` from :func:`_obj` / :func:`_str` likewise."""
    if kind == "content_block_delta":
        delta = _obj(data, "delta")
        for key in ("text", "partial_json", "thinking", "signature"):
            _str(delta, key)
    elif kind == "message_start":
        message = _obj(data, "message")
        _obj(message, "usage")
        _str(message, "model")
    elif kind == "content_block_start":
        block = _obj(data, "content_block")
        for key in ("type", "text", "thinking", "signature", "data", "id", "name"):
            _str(block, key)
    elif kind == "message_delta":
        _str(_obj(data, "delta"), "stop_reason")
        _obj(data, "usage")
    for name in ("index",):
        value = data.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return f"{name} is a JSON {json_kind(value)}, not an integer"
    return None


class AnthropicProvider:
    """An :class:`~seamkit._ports.LLMPort` for one Claude model.

    ``provider`` is ``"anthropic"``, ``model`` the configured model id, ``price`` its
    :class:`~seamkit._pricing.Price` (``None`` when unknown), ``capabilities`` what it accepts.
    ``client`` (an ``httpx.AsyncClient``) is for tests and custom transports; by default a pooled
    client shared per event loop is used. ``stream`` raises
    :class:`~seamkit.errors.UnsupportedFeature` before sending and
    :class:`~seamkit.errors.ProviderError` (classified) on any failure, also mid-stream.
    """

    provider = PROVIDER

    def __init__(self, config: AnthropicConfig, *, client: httpx.AsyncClient | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.model = config.model
        overrides = config.capabilities.as_changes() if config.capabilities is not None else None
        self.capabilities: Capabilities = capabilities_for(config.model, overrides)
        self._client = client
        self._own_client: httpx.AsyncClient | None = None
        self._env = env
        self._warned_unpriced = False
        self._warned_withheld = False
        p = config.price
        configured = p.to_price() if p is not None else None
        self.price: Price | None
        # One rule with seamkit-openai (seamkit_http.local_pricing): local: true -> 0; price: -> it;
        # a loopback base URL -> the table's price for a model it knows, else 0 (local).
        self.local, self.price = local_pricing(config.local, configured, lambda: price_table().lookup(config.model),
                                               loopback=is_loopback(self._base_url()))
        self._long_prompt = (None if configured is not None or self.local
                             else self._lookup_long_prompt(config.model))

    @staticmethod
    def _lookup_long_prompt(model: str) -> tuple[int, Price] | None:
        table = long_prompt_prices()
        return table.get(model) or table.get(family(model))

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self._base_url()!r})"

    __str__ = __repr__

    @property
    def features(self) -> frozenset[str]:
        """What this model and API can do, as :data:`seamkit._ports.PROVIDER_FEATURES` names:
        ``system_prompt``, ``tools``, ``tool_call_ids``, ``parallel_tool_calls``,
        ``structured_output`` (native, or through a forced tool) and ``service`` always;
        ``reasoning`` with a thinking mode, ``temperature`` with sampling, ``images`` with the
        capability; ``credential`` when a key or token would be sent."""
        caps = self.capabilities
        found = {"system_prompt", "tools", "tool_call_ids", "parallel_tool_calls", "structured_output", "service"}
        if caps.thinking_modes:
            found.add("reasoning")
        if caps.sampling:
            found.add("temperature")
        if caps.images:
            found.add("images")
        cfg = self.config
        configured = any(s is not None and s.get_secret_value() for s in (cfg.api_key, cfg.auth_token))
        from_env = (cfg.api_key is None and cfg.auth_token is None and self._env_credentials_allowed()
                    and bool(self._getenv("ANTHROPIC_API_KEY") or self._getenv("ANTHROPIC_AUTH_TOKEN")))
        if configured or from_env:
            found.add("credential")
        return frozenset(found)

    # --- dispatch ---------------------------------------------------------------------------

    def _getenv(self, name: str) -> str | None:
        env = self._env if self._env is not None else os.environ
        value = env.get(name)
        return value or None

    def _base_url(self) -> str:
        return (self.config.base_url or self._getenv("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")

    def _env_credentials_allowed(self) -> bool:
        """Whether ``$ANTHROPIC_API_KEY`` / ``$ANTHROPIC_AUTH_TOKEN`` may be sent: to Anthropic's host,
        or to the base URL the environment itself names (``$ANTHROPIC_BASE_URL``, the SDK's pairing);
        never to another configured ``base_url`` (a YAML file written by someone else)."""
        if is_anthropic_host(self._base_url()):
            return True
        return self.config.base_url is None and self._getenv("ANTHROPIC_BASE_URL") is not None

    def _credentials(self) -> tuple[str | None, str | None]:
        """``(api key, auth token)`` to send (see :class:`AnthropicConfig`); read at dispatch."""
        cfg = self.config
        if cfg.api_key is not None or cfg.auth_token is not None:
            key = cfg.api_key.get_secret_value() if cfg.api_key is not None else None
            token = cfg.auth_token.get_secret_value() if cfg.auth_token is not None else None
            return key or None, token or None
        if not self._env_credentials_allowed():
            withheld = self._getenv("ANTHROPIC_API_KEY") or self._getenv("ANTHROPIC_AUTH_TOKEN")
            if withheld and not self._warned_withheld:
                self._warned_withheld = True
                log.warning("anthropic: ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN not sent to the configured base_url "
                            "%s (not Anthropic's host); set api_key or auth_token in the config to send one",
                            self._base_url())
            return None, None
        # as the official SDK: both environment variables, each in its own header
        return self._getenv("ANTHROPIC_API_KEY"), self._getenv("ANTHROPIC_AUTH_TOKEN")

    def secrets(self) -> list[str]:
        """Credential values to mask in error messages: the key and token that would be sent and
        every configured header value."""
        key, token = self._credentials()
        found = [v.get_secret_value() for v in self.config.headers.values()]
        found += [s for s in (key, token) if s]
        return [s for s in found if s]

    def _headers(self) -> dict[str, str]:
        cfg = self.config
        headers = {"anthropic-version": API_VERSION, "content-type": "application/json",
                   "accept": "text/event-stream"}
        key, token = self._credentials()
        if key:
            headers["x-api-key"] = key
        if token:
            headers["authorization"] = f"Bearer {token}"
        if cfg.betas:
            headers["anthropic-beta"] = ",".join(cfg.betas)
        for name, value in cfg.headers.items():
            headers[name.lower()] = value.get_secret_value()
        if "x-api-key" not in headers and "authorization" not in headers and self._env_credentials_allowed():
            raise ProviderError(
                "no credential: set api_key (or auth_token) in the config, or ANTHROPIC_API_KEY / "
                "ANTHROPIC_AUTH_TOKEN in the environment",
                FailureClass.AUTHENTICATION, provider=PROVIDER,
            )
        return headers

    def _http(self) -> httpx.AsyncClient:
        if self._client is not None:
            return self._client
        cfg = self.config
        if cfg.http2 is not None:
            if self._own_client is None:
                self._own_client = make_client(timeout_s=cfg.timeout_s, connect_timeout_s=cfg.connect_timeout_s,
                                               http2=cfg.http2)
            return self._own_client
        return shared_client(timeout_s=cfg.timeout_s, connect_timeout_s=cfg.connect_timeout_s)

    async def aclose(self) -> None:
        """Close the HTTP client this provider opened itself (never an injected or shared one)."""
        if self._own_client is not None:
            await self._own_client.aclose()
            self._own_client = None

    def prepare(self, request: ChatRequest) -> Prepared:
        """The request body this provider would send for ``request`` (no I/O). Raises
        :class:`~seamkit.errors.UnsupportedFeature`."""
        return build_body(request, self.config, self.capabilities, model=self.model, provider=PROVIDER)

    # --- usage ------------------------------------------------------------------------------

    def usage_of(self, raw: Mapping[str, Any]) -> tuple[Usage, str | None]:
        """A priced :class:`Usage` from the Messages API ``usage`` object, and a warning when the
        model is unpriced."""
        uncached = _int(raw.get("input_tokens"))
        read = _int(raw.get("cache_read_input_tokens"))
        write = _int(raw.get("cache_creation_input_tokens"))
        usage = Usage(uncached + read + write, _int(raw.get("output_tokens")), read, write, 0, 1)
        if self.local:
            return replace(usage, cost=Decimal(0), cost_source="local"), None
        price = self.price
        if self._long_prompt is not None and usage.input_tokens > self._long_prompt[0]:
            price = self._long_prompt[1]
        usage = price_usage(usage, price)
        warning = None
        if price is None:
            warning = (f"no price known for model {self.model!r}: cost unknown (cost_source 'unpriced'); "
                       "set price: {input, output, cache_read, cache_write} in the config")
            if not self._warned_unpriced:
                self._warned_unpriced = True
                log.warning("anthropic: %s", warning)
        elif usage.cost is not None:
            creation = raw.get("cache_creation")
            hour = _int(creation.get("ephemeral_1h_input_tokens")) if isinstance(creation, Mapping) else 0
            if hour:  # 1-hour cache writes cost 2x the input price, not the 5-minute write price
                five = price.cache_write if price.cache_write is not None else price.input
                extra = hour * (2 * price.input - five) / MILLION
                usage = replace(usage, cost=usage.cost + extra)
        return usage, warning

    # --- the stream -------------------------------------------------------------------------

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        """Stream one Messages API call as :class:`Delta` values; the last carries
        ``finish_reason``, ``usage`` and ``raw_usage``. See the module docstring. A schema sent with
        its root wrapped (:class:`~seamkit_anthropic.request.Prepared`) is unwrapped here: the answer
        text and tool arguments follow the canonical schemas."""
        prepared = self.prepare(request)
        if prepared.output_wrap is None and not prepared.tool_wraps:
            deltas = self._events(prepared)
        else:
            deltas = unwrap_deltas(self._events(prepared), output_key=prepared.output_wrap,
                                   tool_keys=prepared.tool_wraps)
        async with aclosing(deltas):
            async for d in deltas:
                yield d

    async def _events(self, prepared: Prepared) -> AsyncIterator[Delta]:
        headers = self._headers()
        secrets = self.secrets()
        url = self._base_url() + "/v1/messages"
        for w in prepared.warnings:
            yield Delta(warning=w)
        output_tool = prepared.output_tool
        raw_usage: dict[str, Any] = {}
        stop_reason: str | None = None
        blocks: dict[int, str] = {}  # content index -> "text" | "thinking" | "tool" | "answer" | other
        tool_index: dict[int, int] = {}  # content index -> tool call ordinal
        thinking: list[dict[str, Any]] = []
        open_thinking: dict[int, dict[str, Any]] = {}
        calls = 0
        answered = False
        seen_tool = False
        def malformed(why: str) -> ProviderError:
            text = f"malformed event: {why}"
            for secret in secrets:
                if len(secret) >= 4:
                    text = text.replace(secret, "***")
            return ProviderError(text, FailureClass.SERVER_ERROR, provider=PROVIDER)

        async with open_sse(self._http(), "POST", url, provider=PROVIDER, headers=headers,
                            json=prepared.body, secrets=secrets) as events:
            async for ev in events:
                if not ev.data:
                    continue
                try:
                    data = json.loads(ev.data)
                except ValueError:
                    raise malformed(f"the data of a {ev.event[:100]!r} event is not JSON") from None
                if not isinstance(data, dict):
                    continue
                kind = data.get("type") or ev.event
                try:
                    checked = _check_event(kind, data)
                except TypeError as exc:
                    raise malformed(f"{str(kind)[:100]!r} event: {exc}") from None
                if checked is not None:
                    raise malformed(f"{str(kind)[:100]!r} event: {checked}")
                if kind == "content_block_delta":
                    idx = _int(data.get("index"))
                    delta = data.get("delta") or {}
                    dtype = delta.get("type")
                    if dtype == "text_delta":
                        text = delta.get("text")
                        if text:
                            yield Delta(text=text)
                    elif dtype == "input_json_delta":
                        part = delta.get("partial_json")
                        if part:
                            where = blocks.get(idx)
                            if where == "answer":
                                yield Delta(text=part)
                            elif where == "tool":
                                yield Delta(tool_call=ToolCallDelta(tool_index[idx], arguments=part))
                    elif dtype == "thinking_delta":
                        text = delta.get("thinking")
                        if text:
                            if idx in open_thinking:
                                open_thinking[idx]["thinking"] += text
                            yield Delta(reasoning=text)
                    elif dtype == "signature_delta":
                        if idx in open_thinking:
                            open_thinking[idx]["signature"] = open_thinking[idx].get("signature", "") + str(
                                delta.get("signature") or "")
                    continue
                if kind == "ping":
                    continue
                if kind == "message_start":
                    message = data.get("message") or {}
                    usage = message.get("usage")
                    if isinstance(usage, dict):
                        raw_usage.update({k: v for k, v in usage.items() if v is not None})
                    model = message.get("model")
                    if isinstance(model, str) and model:
                        yield Delta(model=model)
                elif kind == "content_block_start":
                    idx = _int(data.get("index"))
                    block = data.get("content_block") or {}
                    btype = block.get("type")
                    if btype == "text":
                        blocks[idx] = "text"
                        if block.get("text"):
                            yield Delta(text=block["text"])
                    elif btype == "thinking":
                        blocks[idx] = "thinking"
                        open_thinking[idx] = {"type": "thinking", "thinking": block.get("thinking") or ""}
                        if block.get("signature"):
                            open_thinking[idx]["signature"] = block["signature"]
                        if block.get("thinking"):
                            yield Delta(reasoning=block["thinking"])
                    elif btype == "redacted_thinking":
                        blocks[idx] = "thinking"
                        open_thinking[idx] = {"type": "redacted_thinking", "data": block.get("data") or ""}
                    elif btype == "tool_use":
                        pending = [b for b in thinking if b.get("_before") == ""]
                        if pending:  # interleaved thinking: these blocks preceded this tool call
                            for b in pending:
                                b["_before"] = str(block.get("id") or "")
                            signature = encode_thinking(thinking)
                            if signature:
                                yield Delta(reasoning_signature=signature)
                        seen_tool = True
                        if output_tool is not None and block.get("name") == output_tool:
                            blocks[idx] = "answer"
                            answered = True
                        else:
                            blocks[idx] = "tool"
                            tool_index[idx] = calls
                            calls += 1
                            yield Delta(tool_call=ToolCallDelta(tool_index[idx], id=block.get("id"),
                                                                name=block.get("name")))
                    else:
                        blocks[idx] = str(btype)
                elif kind == "content_block_stop":
                    idx = _int(data.get("index"))
                    done = open_thinking.pop(idx, None)
                    if done is not None:
                        if seen_tool:
                            done["_before"] = ""  # after a tool call; placed when the next one starts
                        thinking.append(done)
                        signature = encode_thinking(thinking)
                        if signature:
                            yield Delta(reasoning_signature=signature)
                elif kind == "message_delta":
                    delta = data.get("delta") or {}
                    if delta.get("stop_reason"):
                        stop_reason = str(delta["stop_reason"])
                    usage = data.get("usage")
                    if isinstance(usage, dict):
                        raw_usage.update({k: v for k, v in usage.items() if v is not None})
                elif kind == "message_stop":
                    usage_value, warning = self.usage_of(raw_usage)
                    if warning is not None:
                        yield Delta(warning=warning)
                    if stop_reason == "pause_turn":
                        yield Delta(warning="stop_reason pause_turn: a server-tool loop paused; send the turn "
                                            "back to let Claude continue")
                    finish = STOP_REASONS.get(stop_reason or "", "stop")
                    if finish == "tool_calls" and calls == 0 and answered:
                        finish = "stop"  # the only tool called was the structured-output answer
                    yield Delta(finish_reason=finish, usage=usage_value,
                                raw_usage=freeze(raw_usage) if raw_usage else FrozenDict())
                    return
                elif kind == "error":
                    raise classify_error_body(PROVIDER, data, secrets=secrets)
                # other event types: ignored, as the versioning policy asks
        raise ProviderError("the event stream ended before message_stop (connection dropped?)",
                            FailureClass.SERVER_ERROR, provider=PROVIDER)

    async def chat(self, request: ChatRequest) -> LLMResult:
        """``collect_result(self.stream(request))``."""
        return await collect_result(self.stream(request), provider=PROVIDER, model=self.model)


def build(config: AnthropicConfig, *, client: httpx.AsyncClient | None = None) -> AnthropicProvider:
    """Factory for ``use: anthropic``: an :class:`AnthropicProvider` for the validated ``config``."""
    return AnthropicProvider(config, client=client)

