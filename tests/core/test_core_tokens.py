"""The request token estimate counts everything a provider bills as input, and its default text
count is within 15% of the Gemma 3 tokenizer on every test transcript (the counts recorded in
tests/core/data/tokens/gemma_counts.json; tests/plugins/providers/llamacpp/
test_llamacpp_tokens_accuracy.py checks them against the live tokenizer)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit import _tokens as tokens
from seamkit._tokens import (
    IMAGE_TOKENS,
    count_text_tokens,
    estimate_message_tokens,
    estimate_tokens,
    register_tokenizer,
    tokenizer_for,
    unregister_tokenizer,
)
from seamkit.values import ChatRequest, ImageBlock, Message, ReasoningBlock, TextBlock, ToolCall, ToolResult, ToolSchema

BOUND = 0.15


def _load_transcripts() -> ModuleType:
    path = Path(__file__).parent / "data" / "tokens" / "transcripts.py"
    spec = importlib.util.spec_from_file_location("seamkit_token_transcripts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


transcripts = _load_transcripts()
GEMMA = transcripts.gemma_counts()


def test_every_transcript_has_a_recorded_gemma_count() -> None:
    assert sorted(GEMMA) == sorted(transcripts.names())
    assert len(GEMMA) >= 12


@pytest.mark.parametrize("name", transcripts.names())
def test_default_estimate_within_15_percent_of_gemma(name: str) -> None:
    req = transcripts.load(name)
    estimate = estimate_tokens(req)
    assert abs(estimate - GEMMA[name]) <= BOUND * GEMMA[name], (name, estimate, GEMMA[name])
    # the text alone (overheads are the same constants either way) is within the bound too
    overhead = estimate_tokens(req, lambda _text: 0)
    text_gemma, text_estimate = GEMMA[name] - overhead, estimate - overhead
    assert abs(text_estimate - text_gemma) <= BOUND * text_gemma, (name, text_estimate, text_gemma)


def test_324k_characters_of_tool_arguments_count_at_their_measured_size() -> None:
    # The "roughly 81,000" is four characters per token. Gemma 3 says otherwise:
    # 324,000 characters of source code written through a tool call are ~104,500 tokens as JSON
    # (escaped newlines and quotes included); the same length of one repeated letter ~40,500.
    code = transcripts.load("big_tool_args")
    assert len(code.messages[1].content[0].arguments["content"]) == 324_000
    assert 100_000 <= GEMMA["big_tool_args"] <= 110_000
    assert 89_000 <= estimate_tokens(code) <= 120_000
    blob = transcripts.load("big_blob_args")
    assert 39_000 <= GEMMA["big_blob_args"] <= 42_000
    assert 34_000 <= estimate_tokens(blob) <= 47_000
    # and the arguments dominate: the message text alone is a few tokens
    assert estimate_tokens(ChatRequest((Message.user("hi"),))) < 20


def test_tool_results_images_and_schemas_add_up() -> None:
    base = ChatRequest((Message.user("hello there"),))
    with_result = base.replace(messages=(*base.messages, Message("tool", (ToolResult("c1", "t", "y z " * 100),))))
    assert estimate_tokens(with_result) - estimate_tokens(base) >= 100
    with_image = base.replace(messages=(Message("user", (ImageBlock(url="https://x.invalid/a.png"),)),))
    assert estimate_tokens(with_image) >= IMAGE_TOKENS
    shot = ImageBlock(data=b"\x89PNG")
    plain = Message("tool", (ToolResult("c1", "t", "ok"),))
    two_shots = Message("tool", (ToolResult("c1", "t", "ok", images=(shot, shot)),))
    assert estimate_message_tokens(two_shots) - estimate_message_tokens(plain) == 2 * IMAGE_TOKENS
    schema = ToolSchema("lookup", "Look a thing up", {"type": "object", "properties": {"q": {"type": "string"}}}, False)
    assert estimate_tokens(base.replace(tools=(schema,))) > estimate_tokens(base)
    assert estimate_tokens(base.replace(output_schema={"type": "object"})) > estimate_tokens(base)
    reasoning = Message("assistant", (ReasoningBlock("let me think about this " * 20),))
    assert estimate_message_tokens(reasoning) > estimate_message_tokens(Message("assistant", ()))


def test_a_plugged_tokenizer_counts_every_piece_of_text() -> None:
    seen: list[str] = []

    def record(text: str) -> int:
        seen.append(text)
        return 1

    req = ChatRequest(
        (
            Message.system("sys"),
            Message("assistant", (TextBlock("hi"), ToolCall("c1", "save", {"a": 1}), ReasoningBlock("why"))),
            Message("tool", (ToolResult("c1", "save", "done"),)),
        ),
        tools=(ToolSchema("save", "Save it", {"type": "object"}, True),),
        output_schema={"type": "object"},
    )
    n = estimate_tokens(req, record)
    schema = '{"type": "object"}'
    assert seen == ["sys", "hi", "save", '{"a": 1}', "why", "done", "save", "Save it", schema, schema]
    overhead = estimate_tokens(req, lambda _text: 0)
    assert n == overhead + len(seen)
    assert estimate_message_tokens(req.messages[0], len) == tokens.MESSAGE_OVERHEAD + 3


@pytest.fixture
def clean_registry() -> Iterator[None]:
    saved = dict(tokens._TOKENIZERS)
    tokens._TOKENIZERS.clear()
    yield
    tokens._TOKENIZERS.clear()
    tokens._TOKENIZERS.update(saved)


@pytest.mark.usefixtures("clean_registry")
def test_tokenizers_are_registered_per_model_prefix() -> None:
    def short(text: str) -> int:
        return 1

    def exact(text: str) -> int:
        return len(text)

    assert tokenizer_for("gemma-3-270m") is None
    assert tokenizer_for(None) is None
    register_tokenizer("gemma", short)
    register_tokenizer("gemma-3-270m", exact)
    assert tokenizer_for("gemma-3-270m-q4_k_m.gguf") is exact  # the longest prefix wins
    assert tokenizer_for("gemma-2b") is short
    assert tokenizer_for("llama-3") is None
    req = ChatRequest((Message.user("x" * 100),))
    assert estimate_tokens(req, model="gemma-3-270m-q4") == estimate_tokens(req, exact)
    assert estimate_tokens(req, model="llama-3") == estimate_tokens(req)  # the default estimate
    assert estimate_tokens(req, short, model="gemma-3-270m") == estimate_tokens(req, short)  # explicit wins
    assert estimate_message_tokens(req.messages[0], model="gemma-3-270m") == tokens.MESSAGE_OVERHEAD + 100
    unregister_tokenizer("gemma-3-270m")
    unregister_tokenizer("never-registered")
    assert tokenizer_for("gemma-3-270m") is short


@pytest.mark.usefixtures("clean_registry")
def test_bad_registrations_are_refused() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        register_tokenizer("", len)
    with pytest.raises(TypeError, match="callable"):
        register_tokenizer("gemma", 3)  # type: ignore[arg-type]
    assert tokens._TOKENIZERS == {}


@given(st.text())
def test_count_text_tokens_is_zero_only_for_empty_text(text: str) -> None:
    n = count_text_tokens(text)
    assert n >= 0
    assert (n == 0) == (text == "")


@given(st.text(max_size=300), st.text(max_size=300))
def test_count_text_tokens_is_nearly_additive(a: str, b: str) -> None:
    # a run (word, number, spaces) can join across the seam; rounding adds at most one per part
    assert abs(count_text_tokens(a + b) - count_text_tokens(a) - count_text_tokens(b)) <= 4


@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=64))
def test_long_texts_are_sampled_in_proportion(unit: str) -> None:
    # a text over SAMPLE_ABOVE characters is estimated from slices; for a repeated unit the
    # estimate stays proportional to its length
    long = unit * (40_000 // len(unit) + 1)
    short = long[: tokens.SAMPLE_ABOVE]
    ratio = count_text_tokens(long) / len(long)
    expected = count_text_tokens(short) / len(short)
    # each slice may cut a unit: a few tokens per slice at most
    assert abs(ratio - expected) <= 0.05 * expected + 4 / tokens.SAMPLE_CHARS


def test_character_classes_follow_the_gemma_tokenizer() -> None:
    # digits are one token each, a common word is about one, CJK about 0.6 a character
    assert count_text_tokens("1234567890") >= 10
    assert count_text_tokens(" the quick brown fox jumps over the lazy dog") in range(8, 13)
    assert count_text_tokens("数据库索引的作用完全一样") in range(6, 10)
    assert count_text_tokens("🎂🎉🥳") in range(3, 7)
    assert count_text_tokens(" " * 62) in range(1, 5)
    assert count_text_tokens("\ud800 lone surrogate") >= 2


def test_deeply_nested_arguments_are_estimated_not_a_recursion_error() -> None:
    """Regression (newcomer): tool arguments nested ~600 JSON levels raised RecursionError."""
    from seamkit.values import ChatRequest, Message, ToolCall

    deep: object = "leaf"
    for _ in range(300):  # 600 JSON levels, as reported
        deep = {"a": [deep]}
    req = ChatRequest((Message("assistant", (ToolCall("c", "t", {"x": deep}),)),), output_schema={"nest": deep})
    n = estimate_tokens(req)
    assert n > 600
