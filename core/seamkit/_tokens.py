"""Token estimates for requests, before anything is sent (budget reservations, compaction).

One estimator for everything (request builder, compactors, the compaction middleware, budget
reservations). It counts everything a provider bills as input: message text, tool-call names and
arguments (as JSON), tool results, reasoning text, the advertised tool schemas and the output
schema, plus a fixed cost per image and a small overhead per message, per tool call and per tool.

Text is counted by a tokenizer: a callable ``str -> int`` (tokens). Pass one to
:func:`estimate_tokens` / :func:`estimate_message_tokens`, or register one per model with
:func:`register_tokenizer` (the ``llamacpp`` provider's ``count_tokens`` is the exact Gemma
tokenizer) and pass ``model=``. Without one, :func:`count_text_tokens` estimates from character
classes: ASCII letters and letter runs (words), digits (one token each, as in Gemma, Llama 3 and
GPT-4's tokenizers), punctuation, whitespace runs, and non-ASCII characters by UTF-8 length
(accented and Cyrillic letters, CJK, emoji). Its weights (:data:`WEIGHTS`) were fitted against
the Gemma 3 tokenizer of the packaged GGUF; on the test transcripts in tests/core/data/tokens/
(English, code, JSON tool arguments, numeric tool results, German, Japanese, Chinese, emoji,
whitespace-heavy text, an agent run, 324,000-character tool arguments) it is within 5% of that
tokenizer, and within 15% is asserted (tests/core/test_core_tokens.py against the recorded counts,
tests/plugins/providers/llamacpp/test_llamacpp_tokens_accuracy.py against the live tokenizer).
Other models' tokenizers differ (not measured here): plug theirs in where exact counts matter.

Cost: the default estimate reads a text of up to ``SAMPLE_ABOVE`` characters whole; a longer one
is estimated from ``SAMPLES`` evenly spaced slices of ``SAMPLE_CHARS`` characters and scaled by
length, so its cost is bounded; a string that long inside tool arguments or schemas is not even
JSON-encoded whole (its slices are). A 324,000-character tool argument costs well under 2 ms
(benchmarks/tokens_bench.py). A plugged tokenizer sees every text whole.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence

from seamkit.values import (
    ChatRequest,
    FrozenDict,
    ImageBlock,
    Message,
    MessageSnapshot,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSchema,
    thaw,
)

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "MessageTokenCache",
    "REPLY_PRIMING",
    "TOOL_CALL_OVERHEAD",
    "TOOL_SCHEMA_OVERHEAD",
    "Tokenizer",
    "count_text_tokens",
    "estimate_message_tokens",
    "estimate_tokens",
    "register_tokenizer",
    "tokenizer_for",
    "unregister_tokenizer",
]

Tokenizer = Callable[[str], int]
"""Counts the tokens of one text (``str -> int``, tokens, no BOS or special tokens)."""

IMAGE_TOKENS = 1600
"""Fixed estimate per image: Anthropic's vision guide puts an image of about 1.15 megapixels (the
largest sent without resizing) at about 1,600 tokens; OpenAI's high-detail images cost less."""

MESSAGE_OVERHEAD = 4
"""Role markers and separators per message (OpenAI's cookbook counts 3-4 tokens per message)."""

TOOL_CALL_OVERHEAD = 3
"""Markers around one tool call or one tool result (tokens)."""

TOOL_SCHEMA_OVERHEAD = 8
"""Markers around one advertised tool (tokens)."""

REPLY_PRIMING = 3
"""The tokens that open the reply (tokens)."""

SAMPLE_ABOVE = 16_384
"""Texts longer than this (characters) are estimated from samples (see the module doc)."""
SAMPLES = 64
SAMPLE_CHARS = 256

# -- the default estimate ------------------------------------------------------------------------
#
# Each character becomes one class byte (``bytes.translate`` of its UTF-8 encoding, UTF-8
# continuation bytes deleted):  a  ASCII lowercase letter    A  ASCII uppercase letter
#                               d  digit                     s  space or tab
#                               n  newline                   p  ASCII punctuation or control
#                               l  2-byte character (accented Latin, Cyrillic, Greek, Arabic, ...)
#                               c  3-byte character (CJK, kana, Hangul, typographic punctuation, ...)
#                               e  4-byte character (emoji, rare CJK)
# Runs are counted on binary views of that string (one class against a blank), with
# ``bytes.count``. Tokens = sum of weight * feature.


def _table(pairs: dict[bytes, int], default: int) -> bytes:
    table = bytearray([default]) * 256
    for chars, cls in pairs.items():
        for ch in chars:
            table[ch] = cls
    return bytes(table)


_LOWER = bytes(range(ord("a"), ord("z") + 1))
_UPPER = bytes(range(ord("A"), ord("Z") + 1))
CLASS_TABLE = _table(
    {
        _LOWER: ord("a"),
        _UPPER: ord("A"),
        b"0123456789": ord("d"),
        b" \t": ord("s"),
        b"\n\r": ord("n"),
        bytes(range(0xC0, 0xE0)): ord("l"),
        bytes(range(0xE0, 0xF0)): ord("c"),
        bytes(range(0xF0, 0x100)): ord("e"),
    },
    ord("p"),
)
_CONTINUATION = bytes(range(0x80, 0xC0))
_LETTERS_VIEW = _table({b"aAl": ord("a")}, ord(" "))  # letter runs (words): " a"
_PUNCT_VIEW = _table({b"p": ord("p")}, ord(" "))  # punctuation runs: " p"
_SPACE_VIEW = _table({b"s": ord("s")}, ord(" "))  # space runs of two or more: " ss"
_NEWLINE_VIEW = _table({b"n": ord("n")}, ord(" "))  # newline runs: " n"

FEATURES = (
    "lowercase letters",
    "uppercase letters",
    "2-byte characters",
    "letter runs (words, 2-byte letters included)",
    "lowercase-to-uppercase changes (camelCase humps)",
    "digits",
    "punctuation characters",
    "punctuation runs",
    "spaces and tabs",
    "runs of two or more spaces or tabs",
    "newline runs",
    "3-byte characters",
    "4-byte characters",
)
"""What :func:`features` counts, in order."""

WEIGHTS = (0.122, 0.55, 0.256, 0.437, 0.923, 1.096, 0.131, 0.779, 0.032, 1.396, 0.499, 0.597, 1.639)
"""Tokens per unit of each of :data:`FEATURES`: least squares on the relative error over the
transcripts in tests/core/data/tokens/ and the project's docs and sources, against the Gemma 3
tokenizer of the packaged GGUF (Gemma, like Llama 3 and GPT-4's tokenizers, gives every digit
its own token and a whole word of common English one token)."""


def features(text: str) -> tuple[int, ...]:
    """The counts of :data:`FEATURES` in ``text`` (exposed for calibration)."""
    ascii_only = text.isascii()
    data = text.encode("ascii") if ascii_only else text.encode("utf-8", "surrogatepass")
    c = b" " + (data.translate(CLASS_TABLE) if ascii_only else data.translate(CLASS_TABLE, _CONTINUATION))
    cnt = c.count
    return (
        cnt(b"a"),
        cnt(b"A"),
        0 if ascii_only else cnt(b"l"),
        c.translate(_LETTERS_VIEW).count(b" a"),
        cnt(b"aA"),
        cnt(b"d"),
        cnt(b"p"),
        c.translate(_PUNCT_VIEW).count(b" p"),
        cnt(b"s"),
        c.translate(_SPACE_VIEW).count(b" ss"),
        c.translate(_NEWLINE_VIEW).count(b" n"),
        0 if ascii_only else cnt(b"c"),
        0 if ascii_only else cnt(b"e"),
    )


def _class_tokens(text: str) -> float:
    return sum([w * f for w, f in zip(WEIGHTS, features(text), strict=True)])


def _sampled_tokens(text: str, *, json_escaped: bool = False) -> float:
    """Estimate of a text over ``SAMPLE_ABOVE`` characters from ``SAMPLES`` evenly spaced slices
    of ``SAMPLE_CHARS`` characters (joined, and JSON-escaped when ``json_escaped``), scaled to
    the text's length."""
    n = len(text)
    step = n // SAMPLES
    sample = "".join([text[i : i + SAMPLE_CHARS] for i in range(0, step * SAMPLES, step)])
    if json_escaped:
        sample = json.dumps(sample, ensure_ascii=False)[1:-1]
    return _class_tokens(sample) * n / (SAMPLES * SAMPLE_CHARS)


def count_text_tokens(text: str) -> int:
    """The default estimate of ``text``'s tokens (tokens; 0 for ``""``, at least 1 otherwise).

    Dependency-free and cheap: see the module doc. Never raises for a ``str`` (lone surrogates
    included)."""
    n = len(text)
    if not n:
        return 0
    est = _class_tokens(text) if n <= SAMPLE_ABOVE else _sampled_tokens(text)
    return max(1, round(est))


def _shrink(value: object, long: list[str]) -> object:
    """``value`` (JSON data, frozen or not) as plain data with every string over ``SAMPLE_ABOVE`` characters moved to
    ``long`` and replaced by ``""``."""
    if isinstance(value, str):
        if len(value) > SAMPLE_ABOVE:
            long.append(value)
            return ""
        return value
    if isinstance(value, dict):
        return {k: _shrink(v, long) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_shrink(v, long) for v in value]
    return value


def _json_tokens(value: object, count: Tokenizer) -> int:
    """Tokens of ``value`` (JSON data, possibly frozen) written as JSON (``ensure_ascii=False``).
    A plugged tokenizer counts the JSON text; the default estimate skips encoding the long
    strings (the cost of a 324,000-character argument is mostly ``json.dumps``) and estimates
    them from JSON-escaped samples instead."""
    if count is not count_text_tokens:
        return count(json.dumps(thaw(value), ensure_ascii=False))
    long: list[str] = []
    try:
        short = _shrink(value, long)  # a plain copy: frozen dicts and lists are dict and list subclasses
        n = count_text_tokens(json.dumps(short, ensure_ascii=False))
    except (RecursionError, ValueError):  # nested deeper than Python's recursion limit
        return _deep_json_tokens(value)
    for text in long:
        n += round(_sampled_tokens(text, json_escaped=True))
    return n


def _deep_json_tokens(value: object) -> int:
    """An iterative estimate for JSON nested too deeply to walk recursively: every string and key
    counted as text, one token per bracket, comma or colon."""
    n = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            n += count_text_tokens(v) + 1
        elif isinstance(v, dict):
            n += 2 + len(v)
            for k, x in v.items():
                n += count_text_tokens(str(k)) + 1
                stack.append(x)
        elif isinstance(v, list | tuple):
            n += 2 + len(v)
            stack.extend(v)
        else:
            n += 1
    return n


# -- tokenizers per model ------------------------------------------------------------------------

_TOKENIZERS: dict[str, Tokenizer] = {}
_TOKENIZERS_LOCK = threading.Lock()


def register_tokenizer(model_prefix: str, tokenizer: Tokenizer) -> None:
    """Use ``tokenizer`` for every model whose name starts with ``model_prefix`` (the longest
    registered prefix wins; registering a prefix again replaces it). Raises ValueError for an
    empty prefix and TypeError when ``tokenizer`` is not callable."""
    if not isinstance(model_prefix, str) or not model_prefix:
        raise ValueError("register_tokenizer needs a non-empty model name prefix")
    if not callable(tokenizer):
        raise TypeError(f"a tokenizer is a callable str -> int, got {type(tokenizer).__name__}")
    with _TOKENIZERS_LOCK:
        _TOKENIZERS[model_prefix] = tokenizer


def unregister_tokenizer(model_prefix: str) -> None:
    """Forget the tokenizer registered for ``model_prefix`` (nothing when there is none)."""
    with _TOKENIZERS_LOCK:
        _TOKENIZERS.pop(model_prefix, None)


def tokenizer_for(model: str | None) -> Tokenizer | None:
    """The tokenizer registered for ``model`` (longest matching prefix), or ``None`` when none
    is (or ``model`` is ``None``): callers then use :func:`count_text_tokens`."""
    if not model:
        return None
    with _TOKENIZERS_LOCK:
        best = max((p for p in _TOKENIZERS if model.startswith(p)), key=len, default=None)
        return None if best is None else _TOKENIZERS[best]


def _pick(tokenizer: Tokenizer | None, model: str | None) -> Tokenizer:
    if tokenizer is not None:
        return tokenizer
    return tokenizer_for(model) or count_text_tokens


# -- requests ------------------------------------------------------------------------------------


def _message_tokens(message: Message, count: Tokenizer) -> int:
    n = MESSAGE_OVERHEAD
    for b in message.content:
        t = type(b)
        if t is TextBlock or t is ReasoningBlock:
            if b.text:  # type: ignore[union-attr]
                n += count(b.text)  # type: ignore[union-attr]
        elif t is ToolCall:
            n += count(b.name) + _json_tokens(b.arguments, count) + TOOL_CALL_OVERHEAD  # type: ignore[union-attr]
        elif t is ToolResult:
            if b.content:  # type: ignore[union-attr]
                n += count(b.content)  # type: ignore[union-attr]
            n += TOOL_CALL_OVERHEAD + IMAGE_TOKENS * len(b.images)  # type: ignore[union-attr]
        elif t is ImageBlock:
            n += IMAGE_TOKENS
    return n


def estimate_message_tokens(message: Message, tokenizer: Tokenizer | None = None, *, model: str | None = None) -> int:
    """Estimated input tokens of one message (tokens): ``MESSAGE_OVERHEAD`` plus its text and
    reasoning, each tool call's name and JSON arguments and each tool result's content (plus
    ``TOOL_CALL_OVERHEAD`` each), ``IMAGE_TOKENS`` per image (a tool result's too). Text is counted by ``tokenizer``,
    else the one registered for ``model``, else :func:`count_text_tokens`. Raises whatever the
    tokenizer raises."""
    return _message_tokens(message, _pick(tokenizer, model))


def estimate_tokens(request: ChatRequest, tokenizer: Tokenizer | None = None, *, model: str | None = None) -> int:
    """Estimated input tokens of ``request`` (tokens): every message
    (:func:`estimate_message_tokens`), each tool schema's name, description and JSON parameters
    (plus ``TOOL_SCHEMA_OVERHEAD``), the output schema as JSON and ``REPLY_PRIMING``. Output
    tokens are not included (see ``request.max_tokens``). Text is counted by ``tokenizer``, else
    the one registered for ``model``, else :func:`count_text_tokens`. Raises whatever the
    tokenizer raises."""
    count = _pick(tokenizer, model)
    n = REPLY_PRIMING
    for m in request.messages:
        n += _message_tokens(m, count)
    for t in request.tools:
        n += count(t.name) + (count(t.description) if t.description else 0)
        n += _json_tokens(t.parameters, count) + TOOL_SCHEMA_OVERHEAD
    if request.output_schema is not None:
        n += _json_tokens(request.output_schema, count)
    return n


class MessageTokenCache:
    """The default estimate (:func:`estimate_message_tokens`, :func:`estimate_tokens` with
    :func:`count_text_tokens`) of one run's requests, each message counted once however many
    requests carry it: a request builder estimates every turn's whole request, and counting the
    transcript again each turn made a long run's turns grow with its length.

    Messages are frozen, so a message's estimate never changes: it is remembered by the message's
    identity (the message itself is held with it, so its ``id`` is not reused while remembered).
    The sum over a :class:`~seamkit.values.MessageSnapshot` that extends the one summed last (the
    agent loop's requests: one append-only log) adds only the messages after it. The tools and
    output schema part is remembered for the last tools and schema (compared by equality).
    Every figure equals the uncached estimate. Not thread-safe: one run's requests are built one
    at a time."""

    __slots__ = ("_fixed", "_memo", "_sum", "_sum_items", "_sum_n")

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Message, int]] = {}
        # (tools, output schema, their tokens with REPLY_PRIMING), for the last ones estimated
        self._fixed: tuple[tuple[ToolSchema, ...], FrozenDict | None, int] | None = None
        # the storage and length of the snapshot summed last, and its sum (tokens)
        self._sum_items: list[Message] | None = None
        self._sum_n = 0
        self._sum = 0

    def __len__(self) -> int:
        """Messages remembered."""
        return len(self._memo)

    def message(self, message: Message) -> int:
        """``estimate_message_tokens(message)`` (tokens), counted on the message's first call."""
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        n = _message_tokens(message, count_text_tokens)
        self._memo[id(message)] = (message, n)
        return n

    def messages(self, messages: Sequence[Message]) -> int:
        """The sum of :meth:`message` over ``messages`` (tokens): for a snapshot extending the one
        summed last, that sum plus the messages after it."""
        if type(messages) is MessageSnapshot:
            items, n = messages._items, messages._n  # the log's shared storage, append-only
            if items is self._sum_items and n >= self._sum_n:
                total = self._sum
                for i in range(self._sum_n, n):
                    total += self.message(items[i])
            else:
                total = sum([self.message(m) for m in messages])
            self._sum_items, self._sum_n, self._sum = items, n, total
            return total
        return sum([self.message(m) for m in messages])

    def fixed(self, tools: tuple[ToolSchema, ...], output_schema: FrozenDict | None) -> int:
        """``estimate_tokens`` of a request with no messages and these ``tools`` and
        ``output_schema`` (tokens: ``REPLY_PRIMING`` included)."""
        last = self._fixed
        if last is not None and last[0] == tools and last[1] == output_schema:
            return last[2]
        n = estimate_tokens(ChatRequest((), tools, output_schema=output_schema))
        self._fixed = (tools, output_schema, n)
        return n

    def request(self, parts: Sequence[Sequence[Message]], tools: tuple[ToolSchema, ...],
                output_schema: FrozenDict | None) -> int:
        """``estimate_tokens(ChatRequest(parts[0] + parts[1] + ..., tools, output_schema=...))``
        (tokens), without joining the parts."""
        return self.fixed(tools, output_schema) + sum([self.messages(p) for p in parts])

    def retain(self, messages: Sequence[Message]) -> None:
        """Forget the messages not in ``messages`` once more than about twice as many are
        remembered (messages a fitted request made and the next one makes anew): the memory stays
        proportional to the request, and the cost of forgetting is spread over the requests."""
        if len(self._memo) > 2 * len(messages) + 64:
            memo = self._memo
            self._memo = {id(m): memo[id(m)] for m in messages if id(m) in memo and memo[id(m)][0] is m}
