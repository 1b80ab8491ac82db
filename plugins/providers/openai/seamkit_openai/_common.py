"""What the ``openai`` (Responses) and ``openai_chat`` (Chat Completions) providers share.

Public API (stable; ``seamkit_openai.responses`` and ``seamkit_openai.chat`` build on it):

- :class:`OpenAIProviderBase` — subclass it, set the class attribute ``provider`` (component name)
  and implement ``stream(request)``. It gives:

  * ``__init__(config, *, client=None, environ=None)``: ``client`` an ``httpx.AsyncClient`` to use
    (tests pass one over a ``seamkit_http.ReplayTransport``); ``environ`` a mapping read instead
    of ``os.environ`` (tests). Resolves ``base_url`` (config, else ``$OPENAI_BASE_URL``, else
    ``https://api.openai.com/v1``), ``capabilities`` (:func:`capabilities_for` + config overrides),
    ``local`` and ``price``.
  * attributes ``provider``, ``model``, ``config``, ``base_url``, ``capabilities``, ``price``
    (:class:`~seamkit._pricing.Price`; ``None`` when unpriced; zero for a local model), ``local`` (bool).
  * ``url(path) -> str``: ``base_url + path`` (``path`` like ``"/chat/completions"``).
  * ``http_client() -> httpx.AsyncClient``: the injected client, else a pooled one
    (``seamkit_http.shared_client``, or a per-loop client of this provider when ``http2`` is set).
  * ``secrets() -> list[str]``: credential values to mask in error messages (key, header values).
  * ``headers() -> dict[str, str]``: ``Authorization: Bearer <key>`` (only when a key resolves, see
    :meth:`api_key`), ``OpenAI-Organization``, ``OpenAI-Project`` and the config's extra
    ``headers``; read at dispatch. Raises ``ProviderError(authentication)`` when OpenAI's own
    host would be called without a key.
  * ``settings(request) -> Settings``: the checked sampling settings (see :class:`Settings`);
    raises :class:`~seamkit.errors.UnsupportedFeature` before dispatch (temperature on a reasoning
    model, stop sequences, tools or images the model does not take).
  * ``output_format(request) -> OutputFormat | None``: the structured-output plan (strict-compiled
    JSON Schema, the non-strict schema where strict mode cannot express it, or JSON mode), with its
    warnings; raises ``UnsupportedFeature`` only for a model with no structured output at all.
  * ``tool_plan(tool) -> SchemaPlan``: a tool's parameters schema, whether to send it with ``strict:
    true`` (only when strict compilation changes nothing: no optional properties, nothing relaxed),
    the key its arguments are wrapped in (a root that is not an object) and its warnings;
    ``tool_spec(tool) -> tuple[dict, bool]`` is its ``(schema, strict)``.
  * ``root_wraps(request) -> tuple[str | None, dict[str, str]]``: the keys the answer and each
    tool's arguments are wrapped in; :func:`unwraps_roots` (a decorator on ``stream``) unwraps them
    from the stream, so the text and arguments a caller sees follow the canonical schemas.
  * ``usage_from(raw) -> Usage`` (chat or responses usage object -> priced :class:`Usage`),
    ``price_usage(usage) -> Usage``, ``unpriced_warning() -> str | None`` (text for a
    ``Delta(warning=...)``, logged once per instance).
  * ``chat(request)``: ``collect_result(self.stream(request), provider=..., model=...)``.
  * ``repr()`` shows provider, model and base URL, never a credential or header value.

- :func:`image_url(block) -> str`: an :class:`ImageBlock` as a URL (``data:`` URL for bytes).
- :func:`reasoning_is_ours(block, provider, model) -> bool`: a ReasoningBlock may be sent back.
- :func:`is_loopback(url)`, :func:`is_openai_host(url)`, :func:`price_table()`.
- :func:`is_loopback` and :func:`local_pricing` are ``seamkit_http``'s (one rule for every HTTP provider).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import os
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
from seamkit.errors import FailureClass, ProviderError, UnsupportedFeature
from seamkit.plugin import Price, PriceTable, collect_result, load_price_table, price_usage, unwrap_deltas
from seamkit.values import (
    ChatRequest,
    Delta,
    ImageBlock,
    LLMResult,
    ReasoningBlock,
    ToolResult,
    ToolSchema,
    Usage,
    thaw,
)
from seamkit_http import is_loopback, local_pricing

from seamkit_openai.capabilities import Capabilities, capabilities_for, nearest_effort
from seamkit_openai.config import DEFAULT_BASE_URL, OpenAIConfigBase
from seamkit_openai.schema import SchemaPlan, plan_schema, schema_name, wrap_key

__all__ = [
    "error_marked",
    "OpenAIProviderBase",
    "Settings",
    "unwraps_roots",
    "OutputFormat",
    "image_url",
    "reasoning_is_ours",
    "is_loopback",
    "is_openai_host",
    "price_table",
    "usage_counts",
    "local_pricing",
]

log = logging.getLogger("seamkit_openai")


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def is_openai_host(url: str) -> bool:
    """``True`` when ``url``'s host is ``api.openai.com`` (or another ``*.openai.com`` host)."""
    host = (urlsplit(url).hostname or "").lower()
    return host == "openai.com" or host.endswith(".openai.com")


@lru_cache(maxsize=1)
def price_table() -> PriceTable:
    """The packaged OpenAI price table (``seamkit_openai/prices.json``)."""
    return load_price_table("seamkit_openai", "prices.json")


def image_url(block: ImageBlock) -> str:
    """The block's URL, or a ``data:<media_type>;base64,...`` URL for inline bytes."""
    if block.url is not None:
        return block.url
    assert block.data is not None
    return f"data:{block.media_type};base64,{base64.b64encode(block.data).decode('ascii')}"


def reasoning_is_ours(block: ReasoningBlock, provider: str, model: str) -> bool:
    """Whether ``block`` was written by this provider component and model (so its signature /
    encrypted content may be sent back)."""
    return block.provider == provider and block.model == model


def usage_counts(raw: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """``(input, output, cache_read, reasoning)`` token counts from a Chat Completions usage
    object (``prompt_tokens``, ``completion_tokens``, ``prompt_tokens_details.cached_tokens``,
    ``completion_tokens_details.reasoning_tokens``) or a Responses one (``input_tokens``,
    ``output_tokens``, ``input_tokens_details.cached_tokens``,
    ``output_tokens_details.reasoning_tokens``). ``input`` already includes the cached tokens, as
    OpenAI reports it. Missing or null fields count 0."""

    def num(v: Any) -> int:
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0

    def details(key: str) -> Mapping[str, Any]:
        d = raw.get(key)
        return d if isinstance(d, Mapping) else {}

    if "prompt_tokens" in raw or "completion_tokens" in raw:
        inp, out = num(raw.get("prompt_tokens")), num(raw.get("completion_tokens"))
        cached = num(details("prompt_tokens_details").get("cached_tokens"))
        reasoning = num(details("completion_tokens_details").get("reasoning_tokens"))
    else:
        inp, out = num(raw.get("input_tokens")), num(raw.get("output_tokens"))
        cached = num(details("input_tokens_details").get("cached_tokens"))
        reasoning = num(details("output_tokens_details").get("reasoning_tokens"))
    return inp, out, min(cached, inp), min(reasoning, out)


@dataclass(slots=True)
class Settings:
    """Checked sampling settings of one request.

    ``temperature`` (``None``: not sent), ``max_tokens`` (output tokens; ``None``: not sent) and
    ``max_tokens_param`` (its chat-completions name), ``reasoning_effort`` (the level to send,
    already mapped to one the model supports; ``None``: not sent), ``seed``, ``stop`` (tuple),
    ``extra`` (``request.extra`` minus ``reasoning_effort``, passed through to the body) and
    ``warnings`` (explicit degradations, each to be yielded as ``Delta(warning=...)``)."""

    temperature: float | None = None
    max_tokens: int | None = None
    max_tokens_param: str = "max_completion_tokens"
    reasoning_effort: str | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class OutputFormat:
    """How to ask for structured output: ``kind`` ``"json_schema"`` (``name``, ``schema``,
    ``strict``) or ``"json_object"`` (JSON mode; ``schema`` set when the server takes it inside JSON
    mode, else ``None`` and the schema is not enforced); ``warnings`` as in :class:`Settings`."""

    kind: str
    name: str = "output"
    schema: dict[str, Any] | None = None
    strict: bool = False
    warnings: list[str] = field(default_factory=list)
    wrap_key: str | None = None
    """The one property the answer is wrapped in (a root that is not an object), else ``None``."""


def unwraps_roots(stream: Callable[[Any, ChatRequest], AsyncIterator[Delta]]
                  ) -> Callable[[Any, ChatRequest], AsyncIterator[Delta]]:
    """Decorate a provider's ``stream(request)`` so that the answer text and the arguments of tools
    whose schemas were sent wrapped (:meth:`OpenAIProviderBase.root_wraps`) come out unwrapped
    (:func:`seamkit._schema_wrap.unwrap_deltas`); a request with nothing wrapped streams as is."""

    @functools.wraps(stream)
    def wrapper(self: OpenAIProviderBase, request: ChatRequest) -> AsyncIterator[Delta]:
        output_key, tool_keys = self.root_wraps(request)
        inner = stream(self, request)
        if output_key is None and not tool_keys:
            return inner
        return unwrap_deltas(inner, output_key=output_key, tool_keys=tool_keys)

    return wrapper


class OpenAIProviderBase:
    """Shared provider behaviour (see the module doc). Subclasses set ``provider`` and implement
    ``stream``."""

    provider: ClassVar[str] = "openai"

    def __init__(self, config: OpenAIConfigBase, *, client: httpx.AsyncClient | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.model = config.model
        self._environ: Mapping[str, str] | None = environ
        env = self.environ
        base = config.base_url or _env(env, "OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.base_url = base.rstrip("/")
        # An OpenAI key may be read from the environment for OpenAI's host, or for the base URL the
        # environment itself names (the pairing the official SDK reads).
        self._env_key_allowed = is_openai_host(self.base_url) or (
            config.base_url is None and _env(env, "OPENAI_BASE_URL") is not None
        )
        overrides = config.capabilities.as_changes() if config.capabilities is not None else None
        self.capabilities: Capabilities = capabilities_for(
            self.model, openai_host=is_openai_host(self.base_url), overrides=overrides
        )
        p = config.price
        configured = p.to_price() if p is not None else None
        self.price: Price | None
        self.local, self.price = local_pricing(
            config.local, configured, lambda: price_table().lookup(self.model.removeprefix("openai/")),
            loopback=is_loopback(self.base_url),
        )
        self._client = client
        self._own: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._warned_unpriced = False

    # -- identity ---------------------------------------------------------------------------

    @property
    def features(self) -> frozenset[str]:
        """What this model and API can do, as :data:`seamkit._ports.PROVIDER_FEATURES` names, from
        :attr:`capabilities`: ``system_prompt`` and ``service`` always; ``tools``,
        ``tool_call_ids`` and ``parallel_tool_calls`` with ``tools``; ``structured_output`` with
        ``json_schema`` or ``json_object``; ``reasoning``, ``images`` and ``temperature`` with the
        capability of that name; ``credential`` when a key resolves (:meth:`api_key`)."""
        caps = self.capabilities
        found = {"system_prompt", "service"}
        if caps.tools:
            found |= {"tools", "tool_call_ids", "parallel_tool_calls"}
        if caps.json_schema or caps.json_object:
            found.add("structured_output")
        found |= {name for name in ("reasoning", "images", "temperature") if getattr(caps, name)}
        if self.api_key():
            found.add("credential")
        return frozenset(found)

    @property
    def environ(self) -> Mapping[str, str]:
        return self._environ if self._environ is not None else os.environ

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r})"

    __str__ = __repr__

    def url(self, path: str) -> str:
        """``base_url`` joined with ``path`` (which starts with ``/``)."""
        return self.base_url + path

    # -- transport --------------------------------------------------------------------------

    def http_client(self) -> httpx.AsyncClient:
        """The client to send with (see the module doc). Call from inside a coroutine."""
        if self._client is not None:
            return self._client
        from seamkit_http import make_client, shared_client

        cfg = self.config
        if cfg.http2 is None:
            return shared_client(timeout_s=cfg.timeout_s, connect_timeout_s=cfg.connect_timeout_s)
        loop = asyncio.get_running_loop()
        client = self._own.get(loop)
        if client is None or client.is_closed:
            client = self._own[loop] = make_client(
                timeout_s=cfg.timeout_s, connect_timeout_s=cfg.connect_timeout_s, http2=cfg.http2
            )
        return client

    def api_key(self) -> str | None:
        """The key to send (read at dispatch): ``config.api_key``; else ``$<api_key_env>``; else
        ``$OPENAI_API_KEY`` when the base URL is OpenAI's or came from ``$OPENAI_BASE_URL``."""
        cfg = self.config
        if cfg.api_key is not None and cfg.api_key.get_secret_value():
            return cfg.api_key.get_secret_value()
        if cfg.api_key_env:
            return _env(self.environ, cfg.api_key_env)
        if self._env_key_allowed:
            return _env(self.environ, "OPENAI_API_KEY")
        return None

    def secrets(self) -> list[str]:
        """The credential values to mask in error messages: the API key that would be sent and
        every configured header value (read at dispatch)."""
        found = [v.get_secret_value() for v in self.config.headers.values()]
        key = self.api_key()
        if key:
            found.append(key)
        return [s for s in found if s]

    def headers(self) -> dict[str, str]:
        """Request headers (see the module doc). Raises ``ProviderError(authentication)`` when
        OpenAI's host would be called without a key."""
        h: dict[str, str] = {}
        key = self.api_key()
        if key:
            h["Authorization"] = f"Bearer {key}"
        elif is_openai_host(self.base_url):
            where = f"${self.config.api_key_env}" if self.config.api_key_env else "$OPENAI_API_KEY"
            raise ProviderError(
                f"no API key: set api_key in the configuration or {where}", FailureClass.AUTHENTICATION,
                provider=self.provider,
            )
        org = self.config.organization or _env(self.environ, "OPENAI_ORG_ID")
        if org:
            h["OpenAI-Organization"] = org
        project = self.config.project or _env(self.environ, "OPENAI_PROJECT_ID")
        if project:
            h["OpenAI-Project"] = project
        for name, value in self.config.headers.items():
            h[name] = value.get_secret_value()
        return h

    # -- settings ---------------------------------------------------------------------------

    def _refuse(self, feature: str, message: str) -> UnsupportedFeature:
        return UnsupportedFeature(message, provider=self.provider, model=self.model, feature=feature)

    def settings(self, request: ChatRequest) -> Settings:
        """Check ``request`` against :attr:`capabilities` (see :class:`Settings`). Raises
        :class:`UnsupportedFeature` before dispatch for what the model cannot take."""
        caps = self.capabilities
        s = Settings(max_tokens_param=caps.max_tokens_param)
        if request.temperature is not None:
            if not caps.temperature:
                kind = "a reasoning model" if caps.reasoning else "this model"
                raise self._refuse(
                    "temperature",
                    f"temperature is not supported by {kind} ({self.model}); remove the temperature setting",
                )
            s.temperature = request.temperature
        if request.max_tokens is not None:
            if request.max_tokens < 1:
                raise self._refuse("max_tokens", f"max_tokens must be at least 1, got {request.max_tokens}")
            s.max_tokens = request.max_tokens
        if request.seed is not None:
            if caps.seed:
                s.seed = request.seed
            else:
                s.warnings.append(f"seed not supported by {self.model}; not sent")
        if request.stop:
            if not caps.stop:
                raise self._refuse("stop", f"stop sequences are not supported by {self.model}")
            s.stop = tuple(request.stop)
        if request.tools and request.tool_choice != "none" and not caps.tools:
            raise self._refuse("tools", f"tools are not supported by {self.model}")
        if not caps.images and any(
            isinstance(b, ImageBlock) for m in request.messages for b in m.content
        ):
            raise self._refuse("images", f"image inputs are not supported by {self.model}")
        extra = dict(thaw(request.extra)) if request.extra else {}
        effort = extra.pop("reasoning_effort", None) or self.config.reasoning_effort
        if effort is not None:
            effort = str(effort)
            if not caps.reasoning_efforts:
                s.warnings.append(f"reasoning_effort {effort!r} not supported by {self.model}; not sent")
            else:
                chosen = nearest_effort(effort, caps.reasoning_efforts)
                if chosen != effort:
                    s.warnings.append(f"reasoning_effort {effort!r} not supported by {self.model}; sent {chosen!r}")
                s.reasoning_effort = chosen
        s.extra = extra
        return s

    def output_format(self, request: ChatRequest) -> OutputFormat | None:
        """The structured-output plan for ``request.output_schema`` (``None`` when there is none).

        ``json_schema`` capability: with ``strict_schema``, :func:`~seamkit_openai.schema.plan_schema`
        (strict-compiled, or ``strict: false`` with one warning where strict mode cannot express the
        schema; a root that is not an object wrapped, see ``wrap_key``); the compiler's relaxations
        become warnings. Without ``strict_schema``: the schema as is. Without ``json_schema``:
        ``json_object`` with the schema (``json_object_schema``), else plain JSON mode
        (``json_object``) with a warning, else :class:`UnsupportedFeature` (no structured output at
        all)."""
        schema = request.output_schema
        if schema is None:
            return None
        caps = self.capabilities
        plain = thaw(schema)
        name = schema_name(plain)
        if caps.json_schema:
            if caps.strict_schema:
                plan = plan_schema(plain, strict=True, provider=self.provider, model=self.model)
                return OutputFormat("json_schema", name, plan.schema, plan.strict, list(plan.warnings),
                                    plan.wrap_key)
            return OutputFormat("json_schema", name, plain, False)
        if caps.json_object_schema:
            return OutputFormat("json_object", name, plain, False)
        if caps.json_object:
            return OutputFormat(
                "json_object", name, None, False,
                [f"structured output: {self.model} has no json_schema mode; sent JSON mode with the schema in "
                 "the prompt; the answer is checked against the schema"],
            )
        raise self._refuse("output_schema", f"structured output (JSON Schema or JSON mode) is not supported by "
                           f"{self.model}")

    def tool_plan(self, tool: ToolSchema) -> SchemaPlan:
        """How ``tool``'s parameters go on the wire (:func:`~seamkit_openai.schema.plan_schema`):
        strict only with the ``strict_tools`` capability and when compilation changes nothing (no
        optional properties, nothing relaxed); else as written with ``strict: false``, with one
        warning when strict mode cannot express them. A root that is not an object is wrapped in any
        mode (function ``parameters`` must be ``type: object``). Never raises for a schema."""
        params = thaw(tool.parameters) if tool.parameters else {"type": "object", "properties": {}}
        what = f"tool {tool.name!r} parameters"
        if self.capabilities.strict_tools:
            plan = plan_schema(params, strict=True, tool=True, what=what, provider=self.provider, model=self.model)
            if not plan.strict or plan.exact:
                return plan
        return plan_schema(params, strict=False, tool=True, what=what, provider=self.provider, model=self.model)

    def tool_spec(self, tool: ToolSchema) -> tuple[dict[str, Any], bool]:
        """``(parameters, strict)`` of :meth:`tool_plan`."""
        plan = self.tool_plan(tool)
        return plan.schema, plan.strict

    def root_wraps(self, request: ChatRequest) -> tuple[str | None, dict[str, str]]:
        """``(output key, {tool name: key})``: where :meth:`output_format` and :meth:`tool_plan` wrap
        ``request``'s schemas (``None`` / ``{}``: nothing wrapped). Never raises."""
        tool_keys: dict[str, str] = {}
        for tool in request.tools:
            if tool.parameters:
                key = wrap_key(tool.parameters, strict=False, tool=True)
                if key is not None:
                    tool_keys[tool.name] = key
        caps = self.capabilities
        schema = request.output_schema
        output_key = None
        if schema is not None and caps.json_schema and caps.strict_schema:
            output_key = wrap_key(schema, strict=True)
        return output_key, tool_keys

    # -- usage ------------------------------------------------------------------------------

    def price_usage(self, usage: Usage) -> Usage:
        """``usage`` priced: cost 0 ``local`` for a local server, else with :attr:`price`
        (``estimated``), else ``unpriced`` (cost ``None``)."""
        if self.local:
            return Usage(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
                         usage.reasoning_tokens, usage.requests, Decimal(0), "local")
        return price_usage(usage, self.price)

    def usage_from(self, raw: Mapping[str, Any]) -> Usage:
        """A priced :class:`Usage` (one request) from an OpenAI usage object (see :func:`usage_counts`)."""
        inp, out, cached, reasoning = usage_counts(raw)
        return self.price_usage(Usage(inp, out, cached, 0, reasoning, 1))

    def unpriced_warning(self) -> str | None:
        """The warning text for an unpriced model (``None`` when priced or local); logged once
        per provider instance."""
        if self.local or self.price is not None:
            return None
        text = (f"model {self.model!r} has no price in seamkit-openai's price table "
                f"({price_table().version}); cost is unknown (set price: in the configuration)")
        if not self._warned_unpriced:
            self._warned_unpriced = True
            log.warning("%s: %s", self.provider, text)
        return text

    # -- calls ------------------------------------------------------------------------------

    def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:  # pragma: no cover - abstract
        raise NotImplementedError

    async def chat(self, request: ChatRequest) -> LLMResult:
        """The collected :meth:`stream` (same errors)."""
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)

    async def aclose(self) -> None:
        """Close clients this provider created itself (not an injected or shared one)."""
        for client in list(self._own.values()):
            await client.aclose()
        self._own.clear()


def error_marked(result: ToolResult) -> ToolResult:
    """``result`` with ``"Error: "`` before its content when it is an error result: OpenAI's tool
    messages and ``function_call_output`` items have no error field, so the text says it (a failed
    tool's output is otherwise read as a success)."""
    if not result.is_error:
        return result
    return replace(result, content=f"Error: {result.content}" if result.content else "Error")
