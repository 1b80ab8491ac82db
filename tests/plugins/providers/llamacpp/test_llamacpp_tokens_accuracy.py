"""The default token estimate against the real Gemma 3 tokenizer inside the packaged GGUF: within
15% on every test transcript (tests/core/data/tokens/), and the provider's exact tokenizer is
plugged into ``seamkit._tokens`` for its model. Loads the bundled model's vocabulary only."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seamkit._tokens import count_text_tokens, estimate_tokens, tokenizer_for
from seamkit_llamacpp import provider as provider_module
from seamkit_llamacpp.provider import TOKENIZE_PIECE, LlamaCppProvider

BOUND = 0.15
DATA = Path(__file__).parents[4] / "tests" / "core" / "data" / "tokens"


def _load_transcripts() -> ModuleType:
    spec = importlib.util.spec_from_file_location("seamkit_token_transcripts", DATA / "transcripts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


transcripts = _load_transcripts()


@pytest.fixture(scope="module")
def gemma() -> LlamaCppProvider:
    return LlamaCppProvider()


@pytest.mark.parametrize("name", transcripts.names())
def test_default_estimate_within_15_percent_of_the_gemma_tokenizer(gemma: LlamaCppProvider, name: str) -> None:
    req = transcripts.load(name)
    exact = estimate_tokens(req, gemma.count_tokens)
    # the recorded count the pure core tests use is still the truth
    assert exact == transcripts.gemma_counts()[name]
    estimate = estimate_tokens(req)
    assert abs(estimate - exact) <= BOUND * exact, (name, estimate, exact)
    overhead = estimate_tokens(req, lambda _text: 0)
    assert abs(estimate - exact) <= BOUND * (exact - overhead), (name, estimate - overhead, exact - overhead)


def test_the_provider_registers_its_tokenizer_for_its_model(gemma: LlamaCppProvider) -> None:
    assert tokenizer_for(gemma.model) == gemma.count_tokens
    req = transcripts.load("agent_transcript")
    assert estimate_tokens(req, model=gemma.model) == estimate_tokens(req, gemma.count_tokens)
    assert estimate_tokens(req, model=gemma.model) != estimate_tokens(req)


def test_count_tokens_matches_the_tokenizer(gemma: LlamaCppProvider) -> None:
    assert gemma.count_tokens("") == 0
    assert gemma.count_tokens("Hello, world!") == 4  # 'Hello' ',' ' world' '!'
    assert gemma.count_tokens("1234567890") == 10  # one token per digit
    assert gemma.count_tokens("x\ud800y") >= 2  # a lone surrogate does not raise
    assert gemma.count_tokens("<start_of_turn>") > 1  # special-token markup counts as text


def test_long_texts_are_counted_in_pieces_nearly_exactly(gemma: LlamaCppProvider) -> None:
    text = transcripts.big_content()[:40_000]
    pieces = provider_module._pieces(text)
    assert len(pieces) > 1
    loaded = provider_module._load_vocab(provider_module.resolve_model_path(None))
    whole = len(loaded.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    assert abs(gemma.count_tokens(text) - whole) <= len(pieces)  # a cut changes a token at most
    assert abs(count_text_tokens(text) - whole) <= BOUND * whole


@settings(max_examples=200)
@given(st.text(alphabet=st.sampled_from("ab \n"), max_size=3 * TOKENIZE_PIECE))
def test_pieces_cover_the_text(text: str) -> None:
    pieces = provider_module._pieces(text)
    assert "".join(pieces) == text
    assert all(pieces[:-1])
    for piece, after in itertools.pairwise(pieces):
        assert len(piece.rstrip("\n")) <= TOKENIZE_PIECE  # line breaks that end a piece aside
        # a cut lands after a run of line breaks, else before a space, else anywhere
        assert piece.endswith("\n") or after.startswith(" ") or ("\n" not in piece[1:] and " " not in piece[1:])
