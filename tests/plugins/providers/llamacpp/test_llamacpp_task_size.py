"""The task-size pre-check with the bundled Gemma 3 tokenizer (vocabulary only): texts no
tokenizer was trained on (random CJK, Hangul, kana, emoji, Cyrillic, accented Latin, mixed) are
underestimated up to 4.5x by the default estimate, so near the window the provider's exact count
decides: such a task over ``n_ctx`` is refused before anything is stored, one that fits is not."""

from __future__ import annotations

import random

import pytest
from seamkit._agent.task_size import check_task_size
from seamkit._tokens import count_text_tokens
from seamkit.errors import TaskTooLarge
from seamkit.values import Message
from seamkit_llamacpp.config import LlamaCppConfig
from seamkit_llamacpp.provider import LlamaCppProvider

pytestmark = pytest.mark.slow

SCRIPTS = {
    "cjk": [(0x4E00, 0x9FFF)],
    "hangul": [(0xAC00, 0xD7A3)],
    "kana": [(0x3041, 0x30FF)],
    "emoji": [(0x1F300, 0x1F64F)],
    "cyrillic": [(0x430, 0x44F)],
    "latin-ext": [(0xC0, 0x17F)],
    "mixed": [(0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1F64F), (0x430, 0x44F), (0x61, 0x7A)],
}


def _text(ranges: list[tuple[int, int]], n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(n))


@pytest.fixture(scope="module")
def small() -> LlamaCppProvider:
    return LlamaCppProvider(LlamaCppConfig(n_ctx=256))


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_precheck_refuses_exactly_what_is_over_the_window(small: LlamaCppProvider, script: str) -> None:
    for n in (60, 120, 200, 300, 450):
        text = _text(SCRIPTS[script], n, seed=n)
        true = small.count_tokens(text)
        if true > 256:
            with pytest.raises(TaskTooLarge) as info:
                check_task_size([Message.user(text)], small)
            assert info.value.estimated == true if info.value.exact else info.value.estimated > 1.2 * 256
        else:
            check_task_size([Message.user(text)], small)
        assert count_text_tokens(text) <= 1.2 * true  # the estimate alone never over-refuses

