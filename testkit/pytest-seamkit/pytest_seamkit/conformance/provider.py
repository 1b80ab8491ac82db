"""The conformance suite for model providers (:class:`~seamkit._ports.LLMPort`).

A provider plugin subclasses :class:`ProviderConformance` and provides the fixture
``make_provider`` returning ``make(scenario) -> LLMPort``: a fresh provider built with the
credential :data:`CONFORMANCE_SECRET` whose transport replays the plugin's own recorded exchange
for ``scenario`` (see :data:`SCENARIOS`), whatever the request. The suite sends its requests and
checks the behaviour every provider owes its callers: the stream contract (exactly one finish, on
the last delta, for every scenario), tool calls, parallel tool calls, structured output, reasoning,
usage invariants (no negative count), errors classified through ``stream()`` and ``chat()`` before
and in the middle of a stream, a cut-off stream raised, every HTTP response closed when the caller
stops early, credentials kept out of reprs, logs, answers (text, warnings, deltas), Python warnings,
stdout/stderr and every error of an error's ``__cause__``/``__context__`` chain; and **what the
provider sent**: a multi-turn conversation with a system prompt (and a second system message), tool
calls and their results (parallel ones too), the offered tool's schema, an output schema, an image
and the settings must each reach the request, and in the right places (read structurally by
:mod:`pytest_seamkit.conformance._shape`, whatever the wire format): each turn a message of its own,
in order and sent once, an assistant turn unlike a user turn, each tool result after its call and
with its own call's id, the image a value of its own with its media type (unless the test class says
its API has none, :attr:`ProviderConformance.images_carry_media_type`) in its text's message.
The settings (``max_tokens``, ``temperature``, ``tool_choice``) must sit exactly at the fields the
test class declares in :attr:`ProviderConformance.sent_fields` (from the provider's API reference:
where a setting lives is the one thing the suite cannot read from the structure); ``seed`` and
``stop`` likewise, ``extra`` merged into the body. Tool calls and results are sent as the API wants
them (:attr:`ProviderConformance.tool_fields`: arguments a JSON string or an object, the result's
role, an error result flagged or, without a flag, said in its text); a tool result's image and two
images in one message are sent; non-ASCII and long text arrive unchanged; the credential sits in
one header only (:attr:`ProviderConformance.auth_header`) and is kept on no error. A warning or a
refusal excuses only what it names. Answers: each finish read as the API gave it (``length`` too),
parallel calls keep their own ids (:attr:`ProviderConformance.parallel_call_ids`), reasoning text
reaches the answer (:attr:`ProviderConformance.reasoning_text`).

What was sent is read through the fixture ``last_sent`` (``() -> SentRequest | None``). By default
it is the suite's ``recorder`` fixture (:class:`~pytest_seamkit.conformance.wire.Recorder`): an HTTP
provider's ``make_provider`` takes ``recorder`` and builds its client on
``recorder.transport(*replies)`` (an ``httpx`` transport that records each request and replays the
plugin's recorded responses; ``inner=`` wraps another transport instead); an in-process provider
calls ``recorder.record(SentRequest(...))`` from a test double of its engine, or overrides
``last_sent``. ``Recorder.last_sent`` is a method; the fixture is that bound method.

Features: a provider declares what it can do in ``features`` (a ``frozenset[str]`` of
:data:`seamkit._ports.PROVIDER_FEATURES` names; a provider without the attribute claims them all).
A scenario needing an undeclared feature is skipped naming it; for the features a request can ask
for (``tools``, ``images``, ``structured_output``, ``temperature``), a provider that does not declare
one must raise :class:`~seamkit.errors.UnsupportedFeature` or report a warning when asked for it,
never drop it silently. The error scenarios apply to a provider whose requests went through the
recorder's HTTP transport even when it does not declare ``service``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import traceback
import warnings
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from seamkit.errors import FailureClass, ProviderError, UnsupportedFeature
from seamkit.plugin import PROVIDER_FEATURES, LLMPort, collect_result
from seamkit.values import (
    ChatRequest,
    Delta,
    FrozenDict,
    ImageBlock,
    LLMResult,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSchema,
    freeze,
)

from pytest_seamkit.conformance._shape import (
    MISSING,
    find,
    image_problems,
    leaves,
    once_problems,
    order_problems,
    owner_of,
    parent_of,
    result_id_problems,
    schema_loss,
    schema_sent,
    turn_problems,
    value_at,
)
from pytest_seamkit.conformance.wire import Recorder, SentRequest

__all__ = ["CONFORMANCE_SECRET", "MARKERS", "SCENARIOS", "ProviderConformance", "features_of"]

CONFORMANCE_SECRET = "sk-conformance-7f3a9c1e5b2d4086"
"""The credential ``make_provider`` must build providers with; it must never show up in a repr or
an error."""

SCENARIOS = (
    "text",
    "tool_call",
    "parallel_tool_calls",
    "structured_output",
    "reasoning",
    "error_auth",
    "error_quota",
    "error_rate_limited",
    "error_server",
    "error_midstream",
    "truncated",
    "length",
    "content_filter",
)
"""What each scenario's replayed exchange must contain:

- ``text``: some text, finish ``stop``, usage with input and output tokens.
- ``tool_call``: one call ``get_weather`` with ``{"city": "Paris"}``.
- ``parallel_tool_calls``: ``get_weather`` for Paris and for Tokyo, with distinct ids.
- ``structured_output``: the text is the JSON document ``{"answer": 42}``.
- ``reasoning``: reasoning text, or ``reasoning_tokens > 0`` in the usage.
- ``error_auth``: the API's answer to a bad credential, classified ``authentication``: HTTP 401 or
  403 (Gemini: 400 ``API_KEY_INVALID``). ``error_quota``: the provider's out-of-credit answer.
  ``error_rate_limited``: HTTP 429 with a retry-after of 2 seconds (reported as ``retry_after`` or
  as ``retry_at``). ``error_server``: HTTP 500.
- ``error_midstream``: at least one text delta, then the provider's in-stream error event.
- ``truncated``: at least one text delta, then the stream ends cleanly (no error, no exception)
  before the provider's terminal event (SSE closed before ``[DONE]`` / ``message_stop`` /
  ``response.completed``; an in-process engine's generator ending without its final chunk).
- ``length``: some text, then the API's "cut off at the output-token limit" finish (OpenAI chat
  ``finish_reason: "length"``, Responses ``response.incomplete`` with ``max_output_tokens``,
  Anthropic ``stop_reason: "max_tokens"``): read as finish ``length``, never ``stop`` (a cut-off
  answer passed off as a whole one).
- ``content_filter``: some text, then the API's "stopped by its safety system" finish (OpenAI chat
  ``finish_reason: "content_filter"``, Responses ``response.incomplete`` with ``content_filter``,
  Anthropic ``stop_reason: "refusal"``): read as :attr:`ProviderConformance.filter_finish`. Only
  asked for when the test class declares one.

The checks of what a provider sends all replay ``text`` (the reply does not depend on the request).
Scenarios of a feature the provider does not declare are never asked for.
"""

MARKERS: dict[str, Any] = {
    "system": "You are Marker-SYS-5521, a terse assistant.",
    "system_2": "Marker-SYS2-9047: answer in French from now on.",
    "first_user": "First question, Marker-U1-8830?",
    "first_answer": "First answer, Marker-A1-1907.",
    "user": "And now, Marker-U2-6674?",
    "call_id": "call_Marker9d41",
    "call_id_2": "call_Marker7b22",
    "city": "Marker-City-3318",
    "city_2": "Marker-City-4420",
    "result": "Marker-RESULT-7731: 18 degrees",
    "result_2": "Marker-RESULT-2468: 25 degrees",
    "image": b"\x89PNG\r\n\x1a\nMarker-IMG-6012\x00\x01",
    "max_tokens": 1234,
    "temperature": 0.37,
    "tool_description": "Marker-TOOL-5150: current weather for a city.",
    "tool_parameter": "units_marker_5150",
    "schema_property": "answer_marker_6071",
    "named_tool": "clock_marker_2291",
    "tool_description_2": "Marker-TOOL2-2291: current time in a city.",
    "tool_parameter_2": "format_marker_2291",
    "property_description": "Marker-PROP-8802: the city's name, in English.",
    "user_part_2": "Marker-U2B-5187: and answer briefly.",
    "seed": 8191,
    "stop": ("Marker-STOP-5309", "Marker-STOP2-7140"),
    "extra_key": "marker_extra_6128",
    "extra_value": "Marker-EXTRA-6128",
    "error_result": "Marker-RESULT3-3902: no such city",
    "result_image": b"\x89PNG\r\n\x1a\nMarker-RIMG-4417\x00\x02",
    "image_2": b"\x89PNG\r\n\x1a\nMarker-IMG2-8075\x00\x03",
    "unicode": "Marker-UNI-3047: fa\u00e7ade, na\u00efve, \u6771\u4eac\u306e\u5929\u6c17, "
               "\u0395\u03bb\u03bb\u03ac\u03b4\u03b1, "
               "\U0001f327 \u2014 \u00bfs\u00ed?",
    "long": "Marker-LONG-5521 " + " ".join(f"part {i:05d} of the long text." for i in range(800)) + " Marker-LONG-END",
}
"""The distinctive values the suite's requests carry; each must occur in what the provider sent
(:meth:`~pytest_seamkit.conformance.wire.SentRequest.mentions`), and the turns, tool results and
their call ids where the conversation puts them (see :meth:`ProviderConformance.conversation_for`)."""


WEATHER = ToolSchema(
    "get_weather",
    "Current weather for a city.",
    freeze({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
            "additionalProperties": False}),
    False,
)
ANSWER_SCHEMA: FrozenDict = freeze({
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
})

MARKED_WEATHER = ToolSchema(
    "get_weather",
    MARKERS["tool_description"],
    freeze({"type": "object", "properties": {"city": {"type": "string"},
                                             MARKERS["tool_parameter"]: {"type": "string", "enum": ["C", "F"]}},
            "required": ["city"], "additionalProperties": False}),
    False,
)
"""The tool the conversations offer: its description and a parameter name are markers, so the
suite can tell the tool was offered (its name alone also occurs in the history's tool calls)."""
MARKED_CLOCK = ToolSchema(
    MARKERS["named_tool"],
    MARKERS["tool_description_2"],
    freeze({"type": "object",
            "properties": {"city": {"type": "string", "description": MARKERS["property_description"]},
                           MARKERS["tool_parameter_2"]: {"type": "string", "enum": ["12h", "24h"]}},
            "required": ["city", MARKERS["tool_parameter_2"]], "additionalProperties": False}),
    False,
)
"""The second tool of the ``tool_choice`` conversation: the one a named ``tool_choice`` names. Its
description, a property's description, a parameter name, an enum and two required names are what
:meth:`ProviderConformance.test_sends_every_tool_whole` looks for."""
MARKED_SCHEMA: FrozenDict = freeze({
    "type": "object",
    "properties": {MARKERS["schema_property"]: {"type": "integer"}},
    "required": [MARKERS["schema_property"]],
    "additionalProperties": False,
})

# scenario -> (failure class, the HTTP statuses accepted or None)
_ERRORS: dict[str, tuple[FailureClass, tuple[int, ...] | None]] = {
    # most APIs answer a bad key with 401 (403: forbidden); Gemini with 400 API_KEY_INVALID
    "error_auth": (FailureClass.AUTHENTICATION, (400, 401, 403)),
    "error_quota": (FailureClass.QUOTA, None),
    "error_rate_limited": (FailureClass.RATE_LIMITED, (429,)),
    "error_server": (FailureClass.SERVER_ERROR, (500,)),
}

SETTINGS = ("max_tokens", "temperature", "tool_choice", "seed", "stop")
"""The settings whose place in the body a test class declares (:attr:`ProviderConformance.sent_fields`)."""

_UNDECLARED: Any = object()
"""A test class attribute not given (distinct from ``None``: "the API has none")."""

Make = Callable[[str], LLMPort]
LastSent = Callable[[], SentRequest | None]


def features_of(provider: object) -> frozenset[str]:
    """The features ``provider`` declares (its ``features`` attribute; every name of
    :data:`~seamkit._ports.PROVIDER_FEATURES` when it has none)."""
    declared = getattr(provider, "features", None)
    return PROVIDER_FEATURES if declared is None else frozenset(declared)


def _needs(provider: object, *features: str) -> None:
    missing = [f for f in features if f not in features_of(provider)]
    if missing:
        pytest.skip(f"the provider does not declare the feature(s) {', '.join(missing)}")


#: the features each check needs: a check whose features the provider does not declare does not
#: apply to it (skipped at run time, or left out at collection when the test class says
#: ``declared_features``)
NEEDS: dict[str, tuple[str, ...]] = {
    "test_sends_the_system_prompt": ("system_prompt",),
    "test_sends_every_system_message": ("system_prompt",),
    "test_sends_tool_choice": ("tools",),
    "test_sends_tool_calls_and_their_results": ("tools",),
    "test_sends_every_tool_whole": ("tools",),
    "test_sends_tool_call_ids": ("tools", "tool_call_ids"),
    "test_sends_parallel_tool_results": ("tools", "parallel_tool_calls"),
    "test_sends_images": ("images",),
    "test_sends_every_image": ("images",),
    "test_sends_tool_call_arguments_as_the_api_wants": ("tools",),
    "test_sends_tool_results_in_their_role": ("tools",),
    "test_sends_tool_errors_as_errors": ("tools",),
    "test_sends_tool_result_images": ("tools",),
    "test_reasoning_text_reaches_the_answer": ("reasoning",),
    "test_sends_the_output_schema": ("structured_output",),
    "test_sends_temperature": ("temperature",),
    "test_sends_the_credential": ("credential",),
    "test_tool_call": ("tools",),
    "test_parallel_tool_calls_are_kept_apart": ("tools", "parallel_tool_calls"),
    "test_parallel_tool_calls_keep_their_own_ids": ("tools", "parallel_tool_calls", "tool_call_ids"),
    "test_structured_output": ("structured_output",),
    "test_reasoning_is_reported": ("reasoning",),
    "test_errors_are_classified": ("service",),
}


def _turns() -> list[tuple[str, str]]:
    return [("user", MARKERS["first_user"]), ("assistant", MARKERS["first_answer"]), ("user", MARKERS["user"])]


def _reads_auto(value: Any) -> bool:
    """Whether ``value`` or a string inside it is ``auto`` (any case): OpenAI's ``"auto"``,
    Anthropic's ``{"type": "auto"}``, Gemini's ``{"mode": "AUTO"}``."""
    return any(isinstance(v, str) and v.lower() == "auto" for _, v in leaves(value))


class _Shown(str):
    """A value shown in a failure message as it is (``nothing``), not quoted."""

    def __repr__(self) -> str:
        return str(self)


def _named(turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(role, marker)`` turns as ``(what, marker)`` for the order and once checks."""
    names = {0: "first user turn", 1: "first answer", 2: "last user turn"}
    return [(names.get(i, f"turn {i}"), marker) for i, (_, marker) in enumerate(turns)]


def _sent(last_sent: LastSent) -> SentRequest:
    sent = last_sent()
    assert sent is not None, (
        "nothing was recorded: make_provider must build the provider on recorder.transport(...) "
        "(HTTP) or record what it sends with recorder.record(...), or the test class must override "
        "the last_sent fixture"
    )
    return sent


def _call(cid: str, city: str) -> ToolCall:
    return ToolCall(cid, "get_weather", freeze({"city": city}))


def _result(cid: str, text: str) -> ToolResult:
    return ToolResult(cid, "get_weather", text)


async def _deltas(model: LLMPort, request: ChatRequest) -> list[Delta]:
    return [d async for d in model.stream(request)]


def _no_secret(*texts: str, where: str = "") -> None:
    for t in texts:
        assert CONFORMANCE_SECRET not in t, "the credential leaked" + (f" {where}" if where else "")


def _no_secret_in_error(err: BaseException) -> None:
    """The credential is in no error of ``err``'s chain (``__cause__``, ``__context__``): not in its
    str, repr or args, nor in the traceback printed for it."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [err]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        try:
            texts = [str(e), repr(e), repr(e.args), *map(str, getattr(e, "__notes__", ()))]
        except Exception as exc:  # a broken __str__ is a bug of its own
            raise AssertionError(f"{type(e).__name__} cannot be printed: {exc!r}") from None
        for t in texts:
            assert CONFORMANCE_SECRET not in t, (
                "the credential leaked" + ("" if e is err else f" in the error's chain ({type(e).__name__})"))
        kept = _secret_kept_in(e)
        assert kept is None, (f"the credential is kept on the error{'' if e is err else ' chain'} "
                              f"({type(e).__name__}{kept}): whoever logs or pickles the error gets it")
        todo += [e.__cause__, e.__context__]
    _no_secret("".join(traceback.format_exception(err)))


def _secret_kept_in(value: Any) -> str | None:
    """Where the credential sits among ``value``'s attributes, arguments and what they hold
    (mappings, sequences, objects' attributes, recursively; an SDK's ``.request`` with its headers),
    as ``.attr[key]...``; ``None`` when nowhere. A masking holder (``SecretStr``: it has
    ``get_secret_value``) is not opened: that is the secret kept as it should be."""
    seen: set[int] = set()

    def walk(v: Any, where: str, depth: int) -> str | None:
        if isinstance(v, str | bytes | bytearray):
            text = v if isinstance(v, str) else bytes(v).decode("utf-8", "replace")
            return where if CONFORMANCE_SECRET in text else None
        if depth > 8 or id(v) in seen or v is None or isinstance(v, int | float | type) or callable(v) \
                or hasattr(v, "get_secret_value"):
            return None
        seen.add(id(v))
        kids: list[tuple[str, Any]] = []
        if isinstance(v, Mapping):
            kids = [(f"[{k!r}]", k) for k in v] + [(f"[{k!r}]", x) for k, x in v.items()]
        elif isinstance(v, list | tuple | set | frozenset):
            kids = [(f"[{i}]", x) for i, x in enumerate(v)]
        else:
            attrs: dict[str, Any] = dict(getattr(v, "__dict__", {}) or {})
            for cls in type(v).__mro__:
                for name in getattr(cls, "__slots__", ()):
                    if isinstance(name, str) and hasattr(v, name):
                        attrs.setdefault(name, getattr(v, name, None))
            if isinstance(v, BaseException):
                attrs["args"] = v.args
                attrs.pop("__traceback__", None)
            kids = [(f".{k}", x) for k, x in attrs.items() if k not in ("__cause__", "__context__")]
        for step, kid in kids:
            found = walk(kid, where + step, depth + 1)
            if found is not None:
                return found
        return None

    return walk(value, "", 0)


#: other names a warning or a refusal may use for what it could not send
_ALIASES: dict[str, tuple[str, ...]] = {
    "tool_choice": ("tool_choice", "tool choice"),
    "tools": ("tool",),
    "images": ("image",),
    "structured_output": ("structured output", "output schema", "response_format", "response format", "json schema",
                          "schema"),
    "max_tokens": ("max_tokens", "max tokens", "max_completion_tokens", "max_output_tokens", "maxoutputtokens",
                   "output tokens"),
    "stop": ("stop",),
}


def _says(text: str, what: str) -> bool:
    """Whether ``text`` names ``what`` (a setting or feature, or one of its :data:`_ALIASES`;
    case and ``_`` / space ignored)."""
    low = text.lower().replace("_", " ")
    return any(a.replace("_", " ") in low for a in _ALIASES.get(what, (what,)))


def _warned(result: LLMResult, what: str) -> bool:
    """Whether one of ``result``'s warnings names ``what``: a warning excuses only what it names
    (an unrelated one, "preview API", says nothing about a setting left out)."""
    return any(_says(w, what) for w in result.warnings)


def _warning_names(result: LLMResult, what: str, why: str) -> None:
    assert _warned(result, what), (
        f"{why}: the provider must raise UnsupportedFeature or report a warning naming {what!r}, not drop "
        f"it silently" + (f" (its warnings {list(result.warnings)} do not name it)" if result.warnings else ""))


async def _sent_unless_excused(provider: Any, conversation: Any, setting: str, path: str | None) -> bool:
    """Chat with ``setting`` in ``conversation``: ``True`` when the provider sent it (the caller
    checks where), ``False`` when it excused it as the test class declares (``path`` ``None``:
    refused with :class:`~seamkit.errors.UnsupportedFeature`, or warned about, naming it); a
    refusal of a setting declared as sent fails."""
    try:
        result = await provider.chat(conversation)
    except UnsupportedFeature as exc:
        assert path is None, f"{setting} was refused, but the test class says it is sent as {path!r}"
        _refusal_names(exc, setting)
        return False
    if path is None:
        _warning_names(result, setting, f"the test class says {setting} is never sent")
        return False
    return True


def _refusal_names(exc: UnsupportedFeature, what: str) -> None:
    said = f"{exc} {getattr(exc, 'feature', None) or ''}"
    assert _says(said, what), f"UnsupportedFeature raised for {what!r} does not name it: {exc}"


def _owner_value(body: Any, marker: str | bytes, field: str) -> Any:
    """The value of ``field`` (a dotted path) in the nearest object around ``marker``'s first
    occurrence where the path leads somewhere (:data:`MISSING` when none does): the message or
    block holding a tool result says its role and its error flag there."""
    where = find(body, marker) if isinstance(marker, str) else _bytes_path(body, marker)
    if where is None:
        return MISSING
    for n in range(len(where), -1, -1):
        obj = _value(body, where[:n])
        if isinstance(obj, Mapping) or (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
            found = value_at(obj, field)
            if found is not MISSING:
                return found
    return MISSING


def _value(body: Any, path: tuple[Any, ...]) -> Any:
    return value_at(body, ".".join(map(str, path))) if path else body


def _bytes_path(body: Any, data: bytes) -> tuple[Any, ...] | None:
    """Where the image ``data`` sits (raw bytes, base64 or a data URL holding it), or ``None``."""
    encoded = (base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode())
    for path, v in leaves(body):
        if isinstance(v, bytes | bytearray) and data in bytes(v):
            return path
        if isinstance(v, str) and any(e in v for e in encoded):
            return path
    return None


def _around(body: Any, marker: str, width: int = 80) -> str:
    """The text of the string leaf holding ``marker``, ``width`` characters either side of it."""
    where = find(body, marker)
    if where is None:
        return ""
    text = _value(body, where)
    text = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
    start = text.index(marker)
    return text[max(0, start - width):start] + text[start + len(marker):start + len(marker) + width]


def _problems(found: list[str]) -> None:
    assert not found, "; ".join(found)


def _retry_in_two_seconds(err: ProviderError, sent_at: datetime) -> None:
    """The rate-limit advice of 2 seconds, as ``retry_after`` or as ``retry_at`` (an aware
    datetime about 2 seconds after the request; 1 second of slack for an HTTP-date's rounding)."""
    if err.retry_after is not None or err.retry_at is None:
        assert err.retry_after == 2.0, f"retry_after {err.retry_after}, not 2.0 (and no retry_at)"
        return
    assert err.retry_at.tzinfo is not None, "retry_at must be an aware (UTC) datetime"
    ahead = (err.retry_at - sent_at).total_seconds()
    late = (datetime.now(UTC) - sent_at).total_seconds()
    assert 1.0 <= ahead <= 3.0 + late, f"retry_at is {ahead:.1f}s after the request, not about 2s"


class ProviderConformance:
    """Tests every model provider must pass. Subclass it and provide the fixture ``make_provider``
    (``make(scenario) -> LLMPort``, see the module docstring); take ``recorder`` in it (or override
    ``last_sent``) so the suite can read what the provider sent."""

    pytestmark = pytest.mark.asyncio

    #: the features the provider declares, said again on the test class (optional): the checks of
    #: features it does not declare (and the refusal checks of those it does) are then left out
    #: when the tests are collected, listed in pytest's summary as not applicable, instead of being
    #: skipped one by one; ``test_the_declared_features_are_the_providers`` holds the two equal.
    declared_features: frozenset[str] | None = None

    #: where the provider's request body carries each setting, from its API reference: the
    #: setting (:data:`SETTINGS`) -> the dotted path of its field in the body (``"max_tokens"``,
    #: ``"generationConfig.maxOutputTokens"``; a number steps into an array), or ``None`` for a
    #: setting the provider never sends (it must then refuse it or warn). Required: the checks of
    #: the settings fail until it names every setting they send (``max_tokens``; ``temperature``
    #: and ``tool_choice`` when the provider declares ``temperature`` / ``tools``); a value
    #: mentioned elsewhere (another field, pasted into a prompt) is not sent.
    sent_fields: Mapping[str, str | None] | None = None

    #: whether the provider's API carries a media type with an inline image. Set it to ``False``
    #: only when the API reference gives an image no media type field (Ollama's ``POST /api/chat``:
    #: a message's ``images`` is a list of bare base64 strings; cite the reference beside the
    #: attribute): ``test_sends_images`` then accepts the base64 without a media type beside it, and
    #: still requires it as a value of its own (not in a URL, not inside text), in the message of its
    #: text, and no media type other than the image's.
    images_carry_media_type: bool = True

    #: how the provider's API carries tool calls and results, from its API reference (required
    #: when the provider declares ``tools``): ``"arguments"``: ``"string"`` (a call's arguments are
    #: a JSON text: OpenAI's ``function.arguments``) or ``"object"`` (Anthropic's ``input``, Gemini's
    #: ``args``, an in-process request's mapping) or ``None`` (a rendered prompt, where a call is
    #: text: not checked); ``"result_role"``: ``(field, value)`` the object
    #: holding a tool result carries (OpenAI chat ``("role", "tool")``; Anthropic, whose
    #: ``tool_result`` blocks sit in a user message, ``("role", "user")``; Responses
    #: ``("type", "function_call_output")``), or ``None`` for a rendered prompt; ``"is_error"``: the
    #: field that flags an error result (dotted, read in the nearest object around the result:
    #: Anthropic ``"is_error"``), or ``None`` for an API without one: the result's text must then
    #: say it failed (the word "error" within 80 characters of its content).
    tool_fields: Mapping[str, Any] | None = None

    #: the header carrying the credential (``"authorization"``, ``"x-api-key"``,
    #: ``"x-goog-api-key"``), or ``None`` (default) for "one header, whichever": the credential must
    #: be in that header and in no other header, nor the URL, nor the body.
    auth_header: str | None = None

    #: the ids the ``parallel_tool_calls`` scenario's recorded answer gives its calls: city -> id
    #: (``{"Paris": "call_...", "Tokyo": "call_..."}``), each of which must reach the answer on its
    #: own call. Required when the provider declares ``parallel_tool_calls`` and ``tool_call_ids``
    #: (an API giving calls no ids, as Ollama's, declares no ``tool_call_ids``: the check does not apply).
    parallel_call_ids: Mapping[str, str] | None = None

    #: the finish the API's "stopped by its safety system" answer (the ``content_filter`` scenario)
    #: must be read as: ``"content_filter"`` (OpenAI) or ``"refusal"`` (Anthropic's ``refusal``), or
    #: ``None`` for an API without one (a local engine). Required when the provider declares
    #: ``service``.
    filter_finish: Any = _UNDECLARED

    #: the reasoning text the ``reasoning`` scenario's recorded answer carries (a part of it), which
    #: must reach the answer as a :class:`~seamkit.values.ReasoningBlock`'s text; ``None`` for an API
    #: whose answers carry only a count of reasoning tokens (OpenAI Chat Completions). Required
    #: when the provider declares ``reasoning``.
    reasoning_text: Any = _UNDECLARED

    @classmethod
    def field_of(cls, setting: str) -> str | None:
        """The declared path of ``setting`` in the body (see :attr:`sent_fields`), ``None`` when the
        provider declares it never sends it; an undeclared setting fails the check asking for it."""
        fields = cls.sent_fields
        assert fields is not None and setting in fields, (
            f"{cls.__name__} does not say where the request body carries {setting!r}: add "
            f"sent_fields = {{{', '.join(repr(s) + ': <path>' for s in SETTINGS)}}} to the test class, each "
            "the dotted path of the field in the body as the provider's API reference names it "
            "(e.g. OpenAI chat: 'max_completion_tokens', 'temperature', 'tool_choice'), or None for a "
            "setting the provider never sends")
        return fields[setting]

    @classmethod
    def not_applicable(cls, name: str, params: dict[str, Any]) -> str | None:
        """Why the check ``name`` (with ``params``) does not apply to a provider with
        :attr:`declared_features`, or ``None`` (it applies, or nothing is declared)."""
        declared = cls.declared_features
        if declared is None:
            return None
        if name == "test_an_undeclared_feature_is_refused_or_warned" and params.get("feature") in declared:
            return f"the provider declares {params['feature']!r}, so there is no refusal to check"
        missing = [f for f in NEEDS.get(name, ()) if f not in declared]
        return f"the provider does not declare {', '.join(map(repr, missing))}" if missing else None

    @pytest.fixture
    def recorder(self) -> Recorder:
        """A fresh :class:`~pytest_seamkit.conformance.wire.Recorder` per test."""
        return Recorder()

    @pytest.fixture
    def last_sent(self, recorder: Recorder) -> LastSent:
        """``() -> SentRequest | None``: what the provider sent last (default: the recorder's)."""
        return recorder.last_sent

    @staticmethod
    def request_for(scenario: str) -> ChatRequest:
        """The request the suite sends for ``scenario`` (a provider's fixtures may assert it)."""
        system = Message.system("You are a terse assistant.")
        if scenario == "tool_call":
            # the reply is replayed whatever was asked, so the choice is left to the model ("auto"): a
            # provider that cannot force a tool (refusing "required", as it may) is checked here too;
            # forced choices belong to test_sends_tool_choice, which accepts a refusal or a warning
            return ChatRequest((system, Message.user("What is the weather in Paris?")), tools=(WEATHER,),
                               max_tokens=256)
        if scenario == "parallel_tool_calls":
            return ChatRequest((system, Message.user("What is the weather in Paris and in Tokyo?")), tools=(WEATHER,),
                               max_tokens=256)
        if scenario == "structured_output":
            return ChatRequest((system, Message.user("What is six times seven?")), output_schema=ANSWER_SCHEMA,
                               max_tokens=256)
        if scenario == "reasoning":
            return ChatRequest((Message.user("Is 1001 prime? Think it through."),), max_tokens=4096)
        if scenario == "length":
            return ChatRequest((system, Message.user("Tell me a long story.")), max_tokens=16)
        return ChatRequest((system, Message.user("Say hello.")), max_tokens=256)

    @staticmethod
    def conversation_for(part: str) -> ChatRequest:
        """The multi-turn request whose sending is checked for ``part``: ``turns`` (system prompt,
        user, assistant, user), ``tool_results`` (an assistant tool call and its result),
        ``parallel_tool_results`` (two calls in one turn and both results; both offer
        :data:`MARKED_WEATHER`), ``image`` (a user image), ``structured_output`` (the output schema
        :data:`MARKED_SCHEMA`), ``settings`` (``max_tokens`` and ``temperature``), ``systems`` (a
        second system message, ``system_2``, before the last user turn), ``tool_choice`` (two
        tools offered, :data:`MARKED_WEATHER` and :data:`MARKED_CLOCK`, and ``tool_choice`` ``auto``:
        the check replaces it). Values from :data:`MARKERS`."""
        m = MARKERS
        head = (Message.system(m["system"]), Message.user(m["first_user"]), Message.assistant(m["first_answer"]))
        if part == "systems":
            return ChatRequest((*head, Message.system(m["system_2"]), Message.user(m["user"])), max_tokens=256)
        if part == "tool_choice":
            return ChatRequest((*head, Message.user(m["user"])), tools=(MARKED_WEATHER, MARKED_CLOCK),
                               max_tokens=256)
        if part == "tool_results":
            return ChatRequest((*head, Message.user(m["user"]),
                                Message("assistant", (_call(m["call_id"], m["city"]),)),
                                Message("tool", (_result(m["call_id"], m["result"]),))),
                               tools=(MARKED_WEATHER,), max_tokens=256)
        if part == "parallel_tool_results":
            calls = (_call(m["call_id"], m["city"]), _call(m["call_id_2"], m["city_2"]))
            results = (_result(m["call_id"], m["result"]), _result(m["call_id_2"], m["result_2"]))
            return ChatRequest((*head, Message.user(m["user"]), Message("assistant", calls), Message("tool", results)),
                               tools=(MARKED_WEATHER,), max_tokens=256)
        if part == "image":
            image = ImageBlock(media_type="image/png", data=m["image"])
            return ChatRequest((*head, Message("user", (TextBlock(m["user"]), image))), max_tokens=256)
        if part == "structured_output":
            return ChatRequest((*head, Message.user(m["user"])), output_schema=MARKED_SCHEMA, max_tokens=256)
        if part in ("seed", "stop", "extra"):
            value = freeze({m["extra_key"]: m["extra_value"]}) if part == "extra" else m[part]
            return ChatRequest((*head, Message.user(m["user"])), max_tokens=256, **{part: value})
        if part in ("error_result", "result_image"):
            text = m["error_result"] if part == "error_result" else m["result"]
            images: tuple[ImageBlock, ...] = (
                (ImageBlock(media_type="image/png", data=m["result_image"]),) if part == "result_image" else ())
            result = ToolResult(m["call_id"], "get_weather", text, is_error=part == "error_result", images=images)
            return ChatRequest((*head, Message.user(m["user"]), Message("assistant", (_call(m["call_id"], m["city"]),)),
                                Message("tool", (result,))), tools=(MARKED_WEATHER,), max_tokens=256)
        if part == "two_texts":
            return ChatRequest((*head, Message("user", (TextBlock(m["user"]), TextBlock(m["user_part_2"])))),
                               max_tokens=256)
        if part == "two_images":
            images = (ImageBlock(media_type="image/png", data=m["image"]),
                      ImageBlock(media_type="image/png", data=m["image_2"]))
            return ChatRequest((*head, Message("user", (TextBlock(m["user"]), *images))), max_tokens=256)
        if part == "exact_text":
            return ChatRequest((Message.system(m["system"] + " " + m["unicode"]), Message.user(m["long"]),
                                Message.assistant(m["unicode"].replace("UNI", "UNI-A")),
                                Message.user(m["unicode"].replace("UNI", "UNI-U") + " " + m["long"].replace(
                                    "LONG", "LONG-U"))), max_tokens=256)
        if part == "exact_tool_text":
            return ChatRequest((*head, Message.user(m["user"]), Message("assistant", (_call(m["call_id"], m["city"]),)),
                                Message("tool", (_result(m["call_id"], m["unicode"] + " " + m["long"]),))),
                               tools=(MARKED_WEATHER,), max_tokens=256)
        if part == "settings":
            return ChatRequest((*head, Message.user(m["user"])), max_tokens=m["max_tokens"],
                               temperature=m["temperature"])
        return ChatRequest((*head, Message.user(m["user"])), max_tokens=256)

    async def _send(self, make_provider: Make, last_sent: LastSent, part: str, *features: str,
                    scenario: str = "text") -> SentRequest:
        p = make_provider(scenario)
        _needs(p, *features)
        await p.chat(self.conversation_for(part))
        return _sent(last_sent)

    # --- the port and the stream contract ---------------------------------------------------

    async def test_is_an_llm_port(self, make_provider: Make) -> None:
        p = make_provider("text")
        assert isinstance(p, LLMPort)
        assert isinstance(p.provider, str) and p.provider
        assert isinstance(p.model, str) and p.model

    async def test_features_are_known_names(self, make_provider: Make) -> None:
        declared = getattr(make_provider("text"), "features", None)
        if declared is not None:
            assert isinstance(declared, frozenset), "features must be a frozenset[str]"
            unknown = set(declared) - PROVIDER_FEATURES
            assert not unknown, f"unknown feature name(s) {sorted(unknown)}; known: {sorted(PROVIDER_FEATURES)}"

    async def test_the_declared_features_are_the_providers(self, make_provider: Make, recorder: Recorder) -> None:
        declared = type(self).declared_features
        if declared is None:
            return  # nothing said on the test class: the checks read the provider's own declaration
        p = make_provider("text")
        assert frozenset(declared) == features_of(p), (
            f"the test class says declared_features={sorted(declared)} but the provider declares "
            f"{sorted(features_of(p))}")
        if "service" not in declared:  # checks of a service's errors are left out: it must not be one
            await p.chat(self.request_for("text"))
            assert not recorder.sent_over_http, (
                "the provider sends its requests over HTTP: declare the feature 'service' (its error "
                "checks apply)")

    async def test_text_stream_ends_with_one_finish(self, make_provider: Make) -> None:
        deltas = await _deltas(make_provider("text"), self.request_for("text"))
        finishes = [d for d in deltas if d.finish_reason is not None]
        assert len(finishes) == 1 and deltas[-1] is finishes[0], "exactly one finish_reason, on the last delta"
        assert finishes[0].finish_reason == "stop"
        assert "".join(d.text or "" for d in deltas).strip(), "no text streamed"
        usage = [d.usage for d in deltas if d.usage is not None]
        assert usage, "no usage reported"
        u = usage[-1]
        assert u.input_tokens > 0 and u.output_tokens > 0 and u.requests == 1

    async def test_chat_equals_the_collected_stream(self, make_provider: Make) -> None:
        req = self.request_for("text")
        streamed = await collect_result(make_provider("text").stream(req))
        chatted = await make_provider("text").chat(req)
        assert isinstance(chatted, LLMResult)
        assert chatted.text == streamed.text
        assert chatted.finish_reason == streamed.finish_reason
        assert chatted.usage == streamed.usage

    async def test_usage_is_consistent(self, make_provider: Make) -> None:
        for scenario, feature in (("text", None), ("tool_call", "tools"), ("reasoning", "reasoning")):
            p = make_provider(scenario)
            if feature is not None and feature not in features_of(p):
                continue
            r = await p.chat(self.request_for(scenario))
            u = r.usage
            for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                         "reasoning_tokens", "requests"):
                value = getattr(u, name)
                assert value is None or value >= 0, f"{scenario}: usage.{name} is negative ({value})"
            assert u.input_tokens >= u.cache_read_tokens + u.cache_write_tokens, scenario
            assert u.output_tokens >= u.reasoning_tokens, scenario
            assert (u.cost is None) == (u.cost_source == "unpriced"), scenario
            if u.cost is not None:
                assert u.cost >= 0

    async def test_every_answer_ends_with_one_finish(self, make_provider: Make) -> None:
        for scenario, features in (("tool_call", ("tools",)), ("parallel_tool_calls", ("tools", "parallel_tool_calls")),
                                   ("structured_output", ("structured_output",)), ("reasoning", ("reasoning",))):
            p = make_provider(scenario)
            if any(f not in features_of(p) for f in features):
                continue
            deltas = await _deltas(p, self.request_for(scenario))
            finishes = [d for d in deltas if d.finish_reason is not None]
            assert len(finishes) == 1 and deltas[-1] is finishes[0], (
                f"{scenario}: exactly one finish_reason, on the last delta (got {len(finishes)})")

    async def test_closing_the_stream_early_is_clean(self, make_provider: Make, recorder: Recorder) -> None:
        stream = make_provider("text").stream(self.request_for("text"))
        first = await stream.__anext__()
        assert isinstance(first, Delta)
        await stream.aclose()  # type: ignore[attr-defined,unused-ignore]
        assert recorder.unclosed == 0, "the HTTP response was left open after the caller closed the stream"

    # --- what the provider sends ------------------------------------------------------------

    async def test_sends_every_turn(self, make_provider: Make, last_sent: LastSent) -> None:
        sent = await self._send(make_provider, last_sent, "turns")
        for key in ("first_user", "first_answer", "user"):
            assert sent.mentions(MARKERS[key]), f"the {key.replace('_', ' ')} turn was not sent"
        _problems(turn_problems(sent.body, _turns()))
        _problems(once_problems(sent.body, _named(_turns())))

    async def test_sends_the_system_prompt(self, make_provider: Make, last_sent: LastSent) -> None:
        sent = await self._send(make_provider, last_sent, "turns", "system_prompt")
        assert sent.mentions(MARKERS["system"]), "the system prompt was not sent"
        _problems([p for p in turn_problems(sent.body, _turns(), MARKERS["system"]) if "system" in p])
        _problems(once_problems(sent.body, [("system prompt", MARKERS["system"])]))

    async def test_sends_every_system_message(self, make_provider: Make, last_sent: LastSent) -> None:
        sent = await self._send(make_provider, last_sent, "systems", "system_prompt")
        m = MARKERS
        for key in ("system", "system_2"):
            assert sent.mentions(m[key]), f"the {'second ' if key == 'system_2' else ''}system message was not sent"
        _problems(once_problems(sent.body, [("system prompt", m["system"]), ("second system message", m["system_2"])]))
        turns = [find(sent.body, marker) for _, marker in _turns()]
        if len(set(turns)) == len(turns):  # each turn a message of its own: a system text is in none of them
            _problems([p.replace("system prompt", "second system message")
                       for p in turn_problems(sent.body, _turns(), m["system_2"], leading=False) if "system" in p])

    async def test_sends_tool_calls_and_their_results(self, make_provider: Make, last_sent: LastSent) -> None:
        sent = await self._send(make_provider, last_sent, "tool_results", "tools")
        assert sent.mentions(MARKERS["city"]), "the assistant's tool call was not sent back"
        assert sent.mentions(MARKERS["result"]), "the tool result was not sent"
        assert sent.mentions(MARKERS["tool_description"]) and sent.mentions(MARKERS["tool_parameter"]), (
            "the tool was not offered (its description and parameters were not sent)")
        conversation = [*_named(_turns()), ("tool call", MARKERS["city"]), ("tool result", MARKERS["result"])]
        _problems(order_problems(sent.body, conversation))
        _problems(once_problems(sent.body, conversation))

    async def test_sends_tool_call_ids(self, make_provider: Make, last_sent: LastSent) -> None:
        sent = await self._send(make_provider, last_sent, "tool_results", "tools", "tool_call_ids")
        assert sent.mentions(MARKERS["call_id"]), "the tool call's id was not sent (the result cannot be matched)"
        _problems(result_id_problems(sent.body, MARKERS["result"], MARKERS["call_id"], (), MARKERS["city"]))

    async def test_sends_parallel_tool_results(self, make_provider: Make, last_sent: LastSent) -> None:
        sent = await self._send(make_provider, last_sent, "parallel_tool_results", "tools", "parallel_tool_calls")
        for key in ("city", "city_2"):
            assert sent.mentions(MARKERS[key]), f"a parallel tool call ({key}) was not sent back"
        for key in ("result", "result_2"):
            assert sent.mentions(MARKERS[key]), f"a parallel tool result ({key}) was not sent"
        calls = [("tool call", MARKERS["city"]), ("second tool call", MARKERS["city_2"])]
        results = [("tool result", MARKERS["result"]), ("second tool result", MARKERS["result_2"])]
        # both calls (one assistant turn) before both results, in either order within each
        _problems(order_problems(sent.body, [("last user turn", MARKERS["user"]), *calls[:1], *results[:1]])
                  + order_problems(sent.body, [*calls[1:], *results[:1]])
                  + order_problems(sent.body, [*calls[:1], *results[1:]])
                  + order_problems(sent.body, [*calls[1:], *results[1:]]))
        _problems(once_problems(sent.body, [*calls, *results]))
        if "tool_call_ids" in features_of(make_provider("text")):
            for key in ("call_id", "call_id_2"):
                assert sent.mentions(MARKERS[key]), f"a parallel tool call id ({key}) was not sent"
            m = MARKERS
            _problems(result_id_problems(sent.body, m["result"], m["call_id"], (m["call_id_2"],), m["city"])
                      + result_id_problems(sent.body, m["result_2"], m["call_id_2"], (m["call_id"],), m["city_2"]))

    async def test_sends_images(self, make_provider: Make, last_sent: LastSent) -> None:
        sent = await self._send(make_provider, last_sent, "image", "images")
        assert sent.mentions(MARKERS["image"]), "the image's bytes were not sent"
        assert sent.mentions(MARKERS["user"]), "the text next to the image was not sent"
        _problems(image_problems(sent.body, MARKERS["image"], "image/png", MARKERS["user"],
                                 (MARKERS["first_user"], MARKERS["first_answer"]),
                                 media_type_required=self.images_carry_media_type))

    async def test_sends_the_output_schema(self, make_provider: Make, last_sent: LastSent) -> None:
        """The output schema (:data:`MARKED_SCHEMA`) is sent whole: nothing of it lost or loosened
        (:func:`~pytest_seamkit.conformance._shape.schema_loss`: its property and type, ``required``,
        ``additionalProperties: false``); a ``strict: false`` beside it (the API would not enforce
        it) only with a warning naming the structured output."""
        p = make_provider("structured_output")
        _needs(p, "structured_output")
        result = await p.chat(self.conversation_for("structured_output"))
        sent = _sent(last_sent)
        assert sent.mentions(MARKERS["schema_property"]), "the output schema was not sent"
        found = schema_sent(sent.body, MARKERS["schema_property"])
        assert found is not None, (
            "the output schema was not sent as a JSON Schema object (one whose properties hold "
            f"{MARKERS['schema_property']!r})")
        path, schema, _ = found
        _problems([f"the output schema was not sent whole: {p}" for p in schema_loss(MARKED_SCHEMA, schema)])
        beside = parent_of(sent.body, path)
        flipped = isinstance(beside, Mapping) and beside.get("strict") is False
        assert not flipped or _warned(result, "structured_output"), (
            "the output schema was sent with strict: false beside it (the API need not follow it) and no "
            "warning naming the structured output")

    async def test_sends_max_tokens(self, make_provider: Make, last_sent: LastSent) -> None:
        await self._check_setting(make_provider, last_sent, "max_tokens")

    async def test_sends_temperature(self, make_provider: Make, last_sent: LastSent) -> None:
        await self._check_setting(make_provider, last_sent, "temperature")

    async def _check_setting(self, make_provider: Make, last_sent: LastSent, setting: str) -> None:
        """The setting's marker value is exactly at its declared field (:attr:`sent_fields`); a
        setting declared as never sent is refused or warned about."""
        p = make_provider("text")
        _needs(p, *(("temperature",) if setting == "temperature" else ()))
        path = self.field_of(setting)
        if not await _sent_unless_excused(p, self.conversation_for("settings"), setting, path) or path is None:
            return
        sent = _sent(last_sent)
        assert sent.mentions(MARKERS[setting]), f"{setting} was not sent"
        found = value_at(sent.body, path)
        assert type(found) in (int, float) and found == MARKERS[setting], (
            f"{setting} {MARKERS[setting]} was not sent as the field {path!r} (found "
            f"{'nothing' if found is MISSING else repr(found)} there): a value under another name is ignored "
            "by the API")

    async def test_sends_tool_choice(self, make_provider: Make, last_sent: LastSent) -> None:
        """``auto``, ``required``, a tool's name and ``none`` each reach the declared field
        (:attr:`sent_fields` ``tool_choice``) as different values (``auto`` may be left out: it is
        every API's default), the named one naming the tool; a choice the provider cannot send is
        refused (:class:`~seamkit.errors.UnsupportedFeature`) or warned about, never replaced."""
        _needs(make_provider("text"), "tools")
        path = self.field_of("tool_choice")
        named = MARKERS["named_tool"]
        sent_as: dict[str, Any] = {}
        offered: dict[str, bool] = {}
        for choice in ("auto", "required", named, "none"):
            before = last_sent()
            request = self.conversation_for("tool_choice").replace(tool_choice=choice)
            try:
                result: LLMResult | None = await make_provider(
                    "text" if choice in ("auto", "none") else "tool_call").chat(request)
            except UnsupportedFeature as exc:
                assert choice != "auto", "tool_choice 'auto' (the default) was refused"
                _refusal_names(exc, "tool_choice")
                continue
            except ProviderError:
                result = None  # the replayed answer need not fit the choice (an engine parsing it may object)
            if result is not None and choice != "auto" and _warned(result, "tool_choice"):
                # said it could not send this choice (a warning naming tool_choice; any other excuses
                # nothing); left out, not replaced by "auto"
                excused = _sent(last_sent)
                value = MISSING if path is None else value_at(excused.body, path)
                assert value is MISSING or not _reads_auto(value), (
                    f"tool_choice {choice!r} was warned about but sent as {value!r} at {path!r}: a choice the "
                    "provider cannot send is left out (or refused), never replaced by 'auto'")
                continue
            sent = _sent(last_sent)
            assert sent is not before, f"tool_choice {choice!r}: nothing was sent"
            if path is None:
                assert choice == "auto", (
                    f"the test class says tool_choice is never sent, but {choice!r} was neither refused "
                    "nor warned about")
                continue
            sent_as[choice] = value_at(sent.body, path)
            offered[choice] = sent.mentions(MARKERS["tool_description"])
        shown = {c: _Shown("nothing") if v is MISSING else v for c, v in sent_as.items()}
        auto = sent_as.get("auto", MISSING)
        # auto may be left out: a forced choice must not read "auto" ("auto", {"type": "auto"}, AUTO)
        for choice, value in sent_as.items():
            assert choice == "auto" or not _reads_auto(value), (
                f"tool_choice {choice!r} was sent as {shown[choice]!r} at {path!r}: that is 'auto'")
        if "required" in sent_as:
            assert sent_as["required"] is not MISSING and sent_as["required"] != auto, (
                f"tool_choice 'required' was sent as {shown['required']!r} at {path!r}, like 'auto' "
                f"({shown.get('auto', _Shown('nothing'))!r}): the model is not made to call a tool")
        if named in sent_as:
            value = sent_as[named]
            assert value is not MISSING and named in json.dumps(value, default=str), (
                f"tool_choice {named!r} (a tool's name) was sent as {shown[named]!r} at {path!r}: it does not "
                "name the tool")
            assert value != sent_as.get("required", MISSING), (
                f"tool_choice {named!r} was sent like 'required' ({shown[named]!r}): any tool may be called")
        if "none" in sent_as:
            assert sent_as["none"] != auto or not offered["none"], (
                f"tool_choice 'none' was sent like 'auto' ({shown['none']!r} at {path!r}) with the tools "
                "offered: the model may still call one")

    async def test_sends_the_credential(self, make_provider: Make, last_sent: LastSent) -> None:
        sent = await self._send(make_provider, last_sent, "turns", "credential")
        assert sent.mentions(CONFORMANCE_SECRET), "the credential was not sent"

    async def test_sends_the_credential_only_in_its_header(self, make_provider: Make, recorder: Recorder) -> None:
        """Over HTTP, the credential sits in one header (:attr:`auth_header` when declared) and
        nowhere else: not in another header (proxies log custom ones), the URL (access logs keep
        URLs) or the body."""
        p = make_provider("text")
        await p.chat(self.conversation_for("turns"))
        # an in-process engine has no headers or URL: only what went over HTTP is read
        for sent in recorder.sent_over_http:
            holding = sorted(k.lower() for k, v in sent.headers.items() if CONFORMANCE_SECRET in v)
            declared = type(self).auth_header
            if declared is not None:
                assert declared.lower() in holding, f"the credential was not sent in its header {declared!r}"
                others = [h for h in holding if h != declared.lower()]
                assert not others, f"the credential was sent in the header(s) {others} besides {declared!r}"
            else:
                assert len(holding) <= 1, f"the credential was sent in several headers: {holding}"
            assert CONFORMANCE_SECRET not in sent.url, "the credential was sent in the URL (access logs keep URLs)"
            assert CONFORMANCE_SECRET not in json.dumps(sent.body, default=repr), "the credential was sent in the body"

    @pytest.mark.parametrize("feature", ["tools", "images", "structured_output", "temperature"])
    async def test_an_undeclared_feature_is_refused_or_warned(self, make_provider: Make, feature: str) -> None:
        p = make_provider("text")
        if feature in features_of(p):
            pytest.skip(f"the provider declares {feature!r}, so there is no refusal to check")
        base = self.conversation_for("turns")
        request = {
            "tools": base.replace(tools=(WEATHER,)),
            "images": self.conversation_for("image"),
            "structured_output": base.replace(output_schema=ANSWER_SCHEMA),
            "temperature": self.conversation_for("settings"),
        }[feature]
        try:
            result = await p.chat(request)
        except UnsupportedFeature as exc:
            _refusal_names(exc, feature)
            return
        _warning_names(result, feature, f"{feature} is not declared")

    async def test_sends_seed(self, make_provider: Make, last_sent: LastSent) -> None:
        await self._check_sampling(make_provider, last_sent, "seed")

    async def test_sends_stop_sequences(self, make_provider: Make, last_sent: LastSent) -> None:
        await self._check_sampling(make_provider, last_sent, "stop")

    async def _check_sampling(self, make_provider: Make, last_sent: LastSent, setting: str) -> None:
        """``seed`` (an integer) or ``stop`` (every sequence, in order, as an array) exactly at the
        declared field (:attr:`sent_fields`); declared ``None``: refused or warned about by name."""
        path = self.field_of(setting)
        sent_it = await _sent_unless_excused(make_provider("text"), self.conversation_for(setting), setting, path)
        if not sent_it or path is None:
            return
        found = value_at(_sent(last_sent).body, path)
        want: Any = MARKERS[setting] if setting == "seed" else list(MARKERS[setting])
        shown = "nothing" if found is MISSING else repr(found)
        if setting == "seed":
            ok = type(found) is int and found == want
        else:
            # every sequence an item of its own, in order (the provider may add stops of its own)
            ok = isinstance(found, list | tuple) and [x for x in found if x in want] == want
        assert ok, (f"{setting} {want!r} was not sent as the field {path!r} (found {shown} there)"
                    + ("" if setting == "seed" else ": every stop sequence, in order, each an item of an array"))

    async def test_sends_extra_settings(self, make_provider: Make, last_sent: LastSent) -> None:
        """``request.extra`` is merged into the body (each key a top-level field of the body, as the
        bundled providers do; :attr:`sent_fields` ``extra`` may name the object it is merged into
        instead), or a warning names the key the provider did not send."""
        m = MARKERS
        key = m["extra_key"]
        try:
            result = await make_provider("text").chat(self.conversation_for("extra"))
        except UnsupportedFeature as exc:
            assert key in str(exc), f"UnsupportedFeature raised for extra setting {key!r} does not name it: {exc}"
            return
        if any(key in w for w in result.warnings):
            return
        into = (self.sent_fields or {}).get("extra") or ""
        found = value_at(_sent(last_sent).body, f"{into}.{key}" if into else key)
        assert found == m["extra_value"], (
            f"request.extra {{{key!r}: {m['extra_value']!r}}} was not merged into the body (found "
            f"{'nothing' if found is MISSING else repr(found)} at {key!r}) and no warning names {key!r}")

    def _tool_field(self, name: str) -> Any:
        fields = type(self).tool_fields
        assert fields is not None and name in fields, (
            f"{type(self).__name__} does not say how its API carries tool calls and results: add tool_fields = "
            "{'arguments': 'string' | 'object', 'result_role': (field, value) | None, 'is_error': field | None} "
            "to the test class, from the provider's API reference (e.g. OpenAI chat: {'arguments': 'string', "
            "'result_role': ('role', 'tool'), 'is_error': None})")
        return fields[name]

    async def test_sends_tool_call_arguments_as_the_api_wants(self, make_provider: Make, last_sent: LastSent) -> None:
        """A call's arguments sent back as the declared kind (:attr:`tool_fields` ``arguments``): a
        JSON text whose object is the arguments, or an object holding them as values."""
        kind = self._tool_field("arguments")
        sent = await self._send(make_provider, last_sent, "tool_results", "tools")
        if kind is None:
            return  # a rendered prompt: the call is text in it (test_sends_tool_calls_and_their_results)
        m = MARKERS
        where = find(sent.body, m["city"])
        assert where is not None, "the assistant's tool call was not sent back"
        value = _value(sent.body, where)
        if kind == "string":
            try:
                parsed = json.loads(value) if isinstance(value, str) else None
            except ValueError:
                parsed = None
            assert isinstance(parsed, dict) and parsed.get("city") == m["city"], (
                f"the tool call's arguments were not sent as a JSON string (the API wants one): found {value!r} at "
                f"{'.'.join(map(str, where))}")
        else:
            assert kind == "object", f"tool_fields 'arguments' is 'string' or 'object', not {kind!r}"
            assert value == m["city"] and where[-1] == "city", (
                f"the tool call's arguments were not sent as an object (the API wants one): the city sits in "
                f"{value!r} at {'.'.join(map(str, where))}")

    async def test_sends_tool_results_in_their_role(self, make_provider: Make, last_sent: LastSent) -> None:
        """The object holding a tool result carries the declared role (:attr:`tool_fields`
        ``result_role``): a result sent as a user message is read as the user speaking."""
        declared = self._tool_field("result_role")
        sent = await self._send(make_provider, last_sent, "tool_results", "tools")
        m = MARKERS
        if declared is not None:
            field, want = declared
            got = _owner_value(sent.body, m["result"], field)
            assert got == want, (f"the tool result was not sent with {field}={want!r} (found "
                                 f"{'nothing' if got is MISSING else repr(got)}): the API reads it as another turn")

    async def test_sends_tool_errors_as_errors(self, make_provider: Make, last_sent: LastSent) -> None:
        """An error result (``is_error``) is flagged at the declared field (:attr:`tool_fields`
        ``is_error``) and a plain result is not; an API without a flag: the error result's text
        says "error" (within 80 characters of its content) and the plain result's does not."""
        field = self._tool_field("is_error")
        m = MARKERS
        error = await self._send(make_provider, last_sent, "error_result", "tools")
        assert error.mentions(m["error_result"]), "the error tool result was not sent"
        plain = await self._send(make_provider, last_sent, "tool_results", "tools")
        if field is not None:
            got = _owner_value(error.body, m["error_result"], field)
            shown = "nothing" if got is MISSING else repr(got)
            assert got is True, (f"the error tool result was not flagged {field}=true (found {shown}): the model "
                                 "reads a failure as a success")
            assert _owner_value(plain.body, m["result"], field) is not True, (
                f"a successful tool result was flagged {field}=true: the model reads a success as a failure")
            return
        assert "error" in _around(error.body, m["error_result"]).lower(), (
            "the error tool result was sent like a successful one (no error flag, and its text does not say "
            "'error'): the model reads a failure as a success")
        assert "error" not in _around(plain.body, m["result"]).lower(), (
            "a successful tool result was sent marked as an error")

    async def test_sends_tool_result_images(self, make_provider: Make, last_sent: LastSent) -> None:
        """A tool result's image is sent (a value of its own with its media type, after the
        call) or left out with a warning naming the image (refused: UnsupportedFeature naming it)."""
        p = make_provider("text")
        _needs(p, "tools")
        m = MARKERS
        try:
            result = await p.chat(self.conversation_for("result_image"))
        except UnsupportedFeature as exc:
            _refusal_names(exc, "images")
            return
        sent = _sent(last_sent)
        assert sent.mentions(m["result"]), "the tool result's text was not sent with its image"
        if _warned(result, "images"):
            return
        assert sent.mentions(m["result_image"]), (
            "the tool result's image was neither sent nor reported left out (a warning naming the image)")
        _problems(image_problems(sent.body, m["result_image"], "image/png", m["result"],
                                 media_type_required=self.images_carry_media_type))
        _problems(order_problems(sent.body, [("tool call", m["city"]), ("tool result", m["result"])]))

    async def test_sends_every_tool_whole(self, make_provider: Make, last_sent: LastSent) -> None:
        """Both offered tools (:data:`MARKED_WEATHER`, :data:`MARKED_CLOCK`) are sent whole: each
        name with its own description and its parameters schema, nothing of the schema lost or
        loosened (:func:`~pytest_seamkit.conformance._shape.schema_loss`: every property with its
        type and description, every ``enum`` value, every ``required`` name,
        ``additionalProperties: false``); a provider may add (strict mode's extras)."""
        request = self.conversation_for("tool_choice")
        sent = await self._send(make_provider, last_sent, "tool_choice", "tools")
        found: list[str] = []
        for tool in request.tools:
            others = {n for t in request.tools if t is not tool for n in t.parameters.get("properties", {})}
            own = next(n for n in tool.parameters["properties"] if n not in others)
            at = schema_sent(sent.body, own)
            if at is None:
                found.append(f"the tool {tool.name!r}: its parameters schema was not sent (no object whose "
                             f"properties hold {own!r})")
                continue
            path, schema, lead = at
            found += [f"the tool {tool.name!r} was not sent whole: {p}" for p in schema_loss(tool.parameters, schema)]
            if lead is not None:  # written in a text (a rendered prompt): its name and description before it
                if tool.name not in lead or tool.description not in lead:
                    found.append(f"the tool {tool.name!r}: its name and description {tool.description!r} were not "
                                 "written before its parameters")
                continue
            owner = owner_of(sent.body, path, tool.name)
            if owner is None:
                found.append(f"the tool {tool.name!r}: its name was not sent beside its parameters")
            elif not any(isinstance(v, str) and tool.description in v for _, v in leaves(owner)):
                found.append(f"the tool {tool.name!r}: its description {tool.description!r} was not sent with it")
        _problems(found)

    async def test_sends_every_text_part(self, make_provider: Make, last_sent: LastSent) -> None:
        """A user message of two text parts: both sent, in their order (as two parts, or joined)."""
        sent = await self._send(make_provider, last_sent, "two_texts")
        m = MARKERS
        for key, what in (("user", "first"), ("user_part_2", "second")):
            assert sent.mentions(m[key]), f"the {what} text part of the user message was not sent"
        _problems(order_problems(sent.body, [("first text part", m["user"]), ("second text part", m["user_part_2"])]))
        _problems(once_problems(sent.body, [("first text part", m["user"]), ("second text part", m["user_part_2"])]))

    async def test_sends_every_image(self, make_provider: Make, last_sent: LastSent) -> None:
        """Two images in one message: both sent, in order, each a value of its own in that message."""
        sent = await self._send(make_provider, last_sent, "two_images", "images")
        m = MARKERS
        for key in ("image", "image_2"):
            assert sent.mentions(m[key]), (f"the {'second' if key == 'image_2' else 'first'} image of the message "
                                           "was not sent")
            _problems(image_problems(sent.body, m[key], "image/png", m["user"], (m["first_user"], m["first_answer"]),
                                     media_type_required=self.images_carry_media_type))
        order = [p for p, _ in leaves(sent.body)]
        first, second = _bytes_path(sent.body, m["image"]), _bytes_path(sent.body, m["image_2"])
        assert first is not None and second is not None and first != second, "the two images were not sent apart"
        assert order.index(first) < order.index(second), "the message's images were not sent in their order"

    async def test_sends_text_exactly(self, make_provider: Make, last_sent: LastSent) -> None:
        """Non-ASCII text (accents, CJK, Greek, an emoji) and a long text (over 20,000 characters)
        reach the request unchanged, in every turn (and a tool result, with ``tools``)."""
        m = MARKERS
        texts = [m["unicode"], m["long"],
                 m["unicode"].replace("UNI", "UNI-A"), m["unicode"].replace("UNI", "UNI-U"),
                 m["long"].replace("LONG", "LONG-U")]
        try:
            sent = await self._send(make_provider, last_sent, "exact_text")
        except ProviderError as exc:
            # a small context window (a local model) may refuse the long texts: then the rest, without them
            if exc.failure_class is not FailureClass.CONTEXT_LENGTH:
                raise
            longs = (m["long"], m["long"].replace("LONG", "LONG-U"))
            short = tuple(Message(msg.role, (TextBlock(msg.text.replace(longs[0], "").replace(longs[1], "")),))
                          for msg in self.conversation_for("exact_text").messages)
            await make_provider("text").chat(self.conversation_for("exact_text").replace(messages=short))
            sent = _sent(last_sent)
            texts = [t for t in texts if "LONG" not in t]
        if "tools" in features_of(make_provider("text")) and type(self).tool_fields is not None:
            tool_text = m["unicode"] + " " + m["long"] if any("LONG" in t for t in texts) else m["unicode"]
            request = self.conversation_for("exact_tool_text")
            tool = request.messages[-1].content[0]
            assert isinstance(tool, ToolResult)
            await make_provider("text").chat(request.replace(messages=(
                *request.messages[:-1], Message("tool", (_result(tool.call_id, tool_text),)))))
            checks = [(sent, t) for t in texts] + [(_sent(last_sent), tool_text)]
        else:
            checks = [(sent, t) for t in texts]
        for where, text in checks:
            if not where.mentions(text):
                head = text.split(":")[0].split(" ")[0]  # its marker: ASCII
                hint = "changed or cut" if where.mentions(head) else "not sent"
                raise AssertionError(
                    f"the text {text[:24]!r}... ({len(text)} characters, non-ASCII: {not text.isascii()}) was {hint}: "
                    "every character must reach the model as written")

    # --- tool calls, structured output, reasoning -------------------------------------------

    async def test_tool_call(self, make_provider: Make) -> None:
        p = make_provider("tool_call")
        _needs(p, "tools")
        r = await p.chat(self.request_for("tool_call"))
        assert r.finish_reason == "tool_calls"
        (call,) = r.tool_calls
        assert call.name == "get_weather" and dict(call.arguments) == {"city": "Paris"}
        assert call.id

    async def test_parallel_tool_calls_are_kept_apart(self, make_provider: Make) -> None:
        p = make_provider("parallel_tool_calls")
        _needs(p, "tools", "parallel_tool_calls")
        r = await p.chat(self.request_for("parallel_tool_calls"))
        calls = r.tool_calls
        assert len(calls) == 2
        assert len({c.id for c in calls}) == 2, "parallel calls share an id"
        assert sorted(c.arguments["city"] for c in calls) == ["Paris", "Tokyo"]
        assert {c.name for c in calls} == {"get_weather"}

    async def test_parallel_tool_calls_keep_their_own_ids(self, make_provider: Make) -> None:
        """Each parallel call carries the id the answer gave it (:attr:`parallel_call_ids`): a
        result sent back under another call's id answers the wrong call."""
        ids = type(self).parallel_call_ids
        assert ids is not None, (
            f"{type(self).__name__} does not say which id the parallel_tool_calls answer gives each call: add "
            "parallel_call_ids = {'Paris': '<id>', 'Tokyo': '<id>'} from the recorded exchange")
        r = await make_provider("parallel_tool_calls").chat(self.request_for("parallel_tool_calls"))
        got = {str(c.arguments.get("city")): c.id for c in r.tool_calls}
        assert got == dict(ids), f"the parallel calls' ids were mixed up: got {got}, the answer says {dict(ids)}"

    async def test_a_length_finish_is_read_as_length(self, make_provider: Make) -> None:
        """An answer cut off at the output-token limit finishes ``length`` (``chat()`` and
        ``stream()``), with its text: reported as ``stop``, the caller takes it for a whole answer."""
        r = await make_provider("length").chat(self.request_for("length"))
        assert r.finish_reason == "length", (
            f"an answer cut off at max_tokens finished {r.finish_reason!r}, not 'length'")
        assert r.text, "the cut-off answer's text was lost"
        deltas = await _deltas(make_provider("length"), self.request_for("length"))
        finishes = [d.finish_reason for d in deltas if d.finish_reason is not None]
        assert finishes == ["length"] and deltas[-1].finish_reason == "length", (
            f"stream(): the finishes {finishes}, not one 'length' on the last delta")

    async def test_a_filtered_answer_finishes_as_the_api_says(self, make_provider: Make) -> None:
        """The ``content_filter`` scenario finishes :attr:`filter_finish` (``chat()`` and
        ``stream()``): read as ``stop``, a blocked answer passes for a whole one."""
        declared = type(self).filter_finish
        if declared is _UNDECLARED:
            assert "service" not in features_of(make_provider("text")), (
                f"{type(self).__name__} does not say how the API's content-filter finish is read: add "
                "filter_finish = 'content_filter' | 'refusal' (from the API reference), or None for an API without one")
            return  # a local engine that says nothing: it has no safety system's finish
        if declared is None:
            return  # the test class says the API has no such finish
        r = await make_provider("content_filter").chat(self.request_for("text"))
        assert r.finish_reason == declared, (
            f"an answer stopped by the API's content filter finished {r.finish_reason!r}, not {declared!r}")
        deltas = await _deltas(make_provider("content_filter"), self.request_for("text"))
        finishes = [d.finish_reason for d in deltas if d.finish_reason is not None]
        assert finishes == [declared], f"stream(): the finishes {finishes}, not one {declared!r}"

    async def test_structured_output(self, make_provider: Make) -> None:
        p = make_provider("structured_output")
        _needs(p, "structured_output")
        r = await p.chat(self.request_for("structured_output"))
        assert json.loads(r.text) == {"answer": 42}

    async def test_reasoning_is_reported(self, make_provider: Make) -> None:
        p = make_provider("reasoning")
        _needs(p, "reasoning")
        r = await p.chat(self.request_for("reasoning"))
        blocks = [b for b in r.message.content if isinstance(b, ReasoningBlock)]
        assert (blocks and (blocks[0].text or blocks[0].signature)) or r.usage.reasoning_tokens > 0
        if blocks:
            assert blocks[0].provider and blocks[0].model, "a reasoning block must say which model wrote it"

    async def test_reasoning_text_reaches_the_answer(self, make_provider: Make) -> None:
        """The recorded answer's reasoning text (:attr:`reasoning_text`) reaches the answer as a
        reasoning block's text, through ``chat()`` and ``stream()``: a count of reasoning tokens is not
        the reasoning."""
        declared = type(self).reasoning_text
        assert declared is not _UNDECLARED, (
            f"{type(self).__name__} does not say which reasoning text its reasoning scenario carries: add "
            "reasoning_text = '<a part of it>' to the test class, or None for an API whose answers carry only "
            "a count of reasoning tokens")
        if declared is None:
            pytest.skip("the test class says the API's answers carry no reasoning text")
        r = await make_provider("reasoning").chat(self.request_for("reasoning"))
        texts = "".join(b.text for b in r.message.content if isinstance(b, ReasoningBlock) and b.text)
        assert declared in texts, (f"the reasoning text {declared!r} did not reach the answer (its reasoning: "
                                   f"{texts[:200]!r})")
        deltas = await _deltas(make_provider("reasoning"), self.request_for("reasoning"))
        assert declared in "".join(d.reasoning or "" for d in deltas), "the reasoning text was not streamed"

    # --- failures ---------------------------------------------------------------------------

    @pytest.mark.parametrize("scenario", sorted(_ERRORS))
    async def test_errors_are_classified(self, make_provider: Make, recorder: Recorder, scenario: str) -> None:
        expected, statuses = _ERRORS[scenario]
        declared = "service" in features_of(make_provider(scenario))
        for via in ("stream", "chat"):
            p = make_provider(scenario)
            sent_at = datetime.now(UTC)
            try:
                if via == "stream":
                    await _deltas(p, self.request_for("text"))
                else:
                    await p.chat(self.request_for("text"))
            except ProviderError as exc:
                err: ProviderError | None = exc
            else:
                err = None
            if not declared and not recorder.sent_over_http:
                pytest.skip("the provider does not declare the feature(s) service (and sent nothing over HTTP)")
            assert err is not None, (
                f"{scenario}: {via}() raised no ProviderError"
                + ("" if declared else " (the provider sent its request over HTTP, so the service's errors "
                                       "apply although it does not declare 'service')"))
            assert err.failure_class is expected, f"{scenario} through {via}(): got {err.failure_class}"
            assert err.failure_class.transient == expected.transient
            if statuses is not None:
                assert err.status in statuses, f"{scenario} through {via}(): status {err.status}, not in {statuses}"
            assert err.provider
            if scenario == "error_rate_limited":
                _retry_in_two_seconds(err, sent_at)
            _no_secret_in_error(err)

    async def test_an_error_mid_stream_is_raised_not_swallowed(self, make_provider: Make) -> None:
        seen: list[Delta] = []
        with pytest.raises(ProviderError) as info:
            async for d in make_provider("error_midstream").stream(self.request_for("text")):
                seen.append(d)
        assert any(d.text for d in seen), "the scenario must stream text before its error event"
        assert not any(d.finish_reason for d in seen), "a failed stream must not finish"
        assert info.value.failure_class is not FailureClass.UNKNOWN or info.value.code
        _no_secret_in_error(info.value)

    async def test_a_cut_off_stream_is_an_error(self, make_provider: Make) -> None:
        seen: list[Delta] = []
        with pytest.raises(ProviderError) as info:
            async for d in make_provider("truncated").stream(self.request_for("text")):
                seen.append(d)
        assert any(d.text for d in seen), "the scenario must stream text before the stream ends"
        assert not any(d.finish_reason for d in seen), "a cut-off stream must not finish"
        assert info.value.failure_class is not FailureClass.UNKNOWN, "a cut-off stream is classified (server_error)"
        assert info.value.provider
        _no_secret_in_error(info.value)

    async def test_the_credential_never_shows(self, make_provider: Make, recorder: Recorder,
                                              caplog: pytest.LogCaptureFixture,
                                              capfd: pytest.CaptureFixture[str]) -> None:
        """Not in the provider's or its config's repr/str, an answer (its text, its warnings,
        any streamed delta), an error's chain, a log record, a Python warning, nor anything
        written to stdout/stderr (``print``, a library's debug output)."""
        p = make_provider("text")
        _no_secret(repr(p), str(p))
        config: Any = getattr(p, "config", None)
        if config is not None:
            _no_secret(repr(config), str(config))
        with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as raised:
            warnings.simplefilter("always")
            result = await p.chat(self.conversation_for("turns"))
            _no_secret(result.text, where="in the answer's text")
            _no_secret(*result.warnings, where="in the answer's warnings")
            _no_secret(repr(result), where="in the answer")
            deltas = await _deltas(make_provider("text"), self.conversation_for("turns"))
            _no_secret(*(repr(d) for d in deltas), where="in a streamed delta")
            service = "service" in features_of(p) or bool(recorder.sent_over_http)
            for scenario in ("error_auth", "error_midstream"):
                if scenario == "error_auth" and not service:
                    continue
                with pytest.raises(ProviderError) as info:
                    await make_provider(scenario).chat(self.request_for("text"))
                _no_secret_in_error(info.value)
        _no_secret(caplog.text, *(repr(r.__dict__) for r in caplog.records))
        for w in raised:
            assert CONFORMANCE_SECRET not in str(w.message), (
                f"the credential leaked in a Python warning ({w.category.__name__})")
        out, err = capfd.readouterr()
        assert CONFORMANCE_SECRET not in out, "the credential leaked to stdout"
        assert CONFORMANCE_SECRET not in err, "the credential leaked to stderr"
