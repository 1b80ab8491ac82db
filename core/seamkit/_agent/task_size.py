"""Refusing a task larger than the model's context window before a run starts.

A task that cannot fit the model would be tokenised, guarded, checkpointed and sent, and only then
refused by the provider (a 30 MB task took 111 s and 2.2 GB before failing, and was stored).
:func:`check_task_size` runs when a run starts (:meth:`seamkit.Agent.run` / ``stream``, before the
first checkpoint), in three steps, cheapest first:

1. a task of no more UTF-8 bytes than the window has tokens fits (a token holds one byte at
   least: tokenizers with byte fallback never give more tokens than bytes);
2. the default estimator (:func:`seamkit._tokens.count_text_tokens`, which samples a long text:
   bounded time and memory) counts the task; an estimate over the window by more than
   :data:`MARGIN` is refused (:class:`~seamkit.errors.TaskTooLarge`). On natural text of the
   measured languages (English, code, JSON, German, Japanese, Chinese, emoji) the estimate is
   within 5% of the Gemma 3 tokenizer (never 20% over), so what is refused here does not fit;
3. the estimate is not a lower bound for every text: text that no tokenizer was trained on
   (random characters: 450 random CJK ideographs are 926 Gemma tokens, estimated 269; random
   Hangul 4.5x, Cyrillic, Greek, Arabic or accented Latin about 3x, random ASCII 1.4x) is far
   underestimated. So when the estimate is within :data:`UNDERESTIMATE` times of the window
   and the model can count tokens exactly (a ``count_tokens(text) -> int`` method: the
   ``llamacpp`` provider's, which loads only the model's vocabulary, about a second once per
   process, and tokenizes about 2 million characters a second), the task of at most
   :data:`EXACT_MAX_CHARS` characters is counted exactly and refused when over the window.
   A model without an exact count leaves such a task to the provider's own check.

A model that declares no window is capped at :data:`MAX_TASK_TOKENS` (step 2 only). The window
is the provider's ``context_window`` attribute (tokens), else its config's ``n_ctx``
(``llamacpp``). Only the task is counted: the history may be compacted, the task never is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from seamkit.errors import TaskTooLarge
from seamkit.values import Message, TextBlock

__all__ = ["EXACT_MAX_CHARS", "MARGIN", "MAX_TASK_TOKENS", "UNDERESTIMATE", "check_task_size", "check_text_size",
           "context_window"]

#: the cap when the model declares no context window (tokens): above the largest context windows
#: offered (2 million tokens), so it refuses only what no model could take
MAX_TASK_TOKENS = 2_000_000
#: how far over the window an estimate must be to refuse on the estimate alone: on natural text
#: the estimator is within 5% of a real tokenizer and was never seen 20% over it (seamkit._tokens)
MARGIN = 1.2
#: how far below the true count the estimate was seen to fall (random Hangul: 4.5x low): a task
#: estimated above ``window / UNDERESTIMATE`` may not fit, and is counted exactly when the model can
UNDERESTIMATE = 5
#: the longest task (characters) counted with the model's exact tokenizer (about a second)
EXACT_MAX_CHARS = 2_000_000


def context_window(model: Any) -> tuple[int, str] | None:
    """The model's context window in tokens and where it was read, or ``None`` when it declares
    none: its ``context_window`` attribute, else its config's ``n_ctx``."""
    # (the two places written out, no loop over a tuple of pairs: read at every run's start)
    value = getattr(model, "context_window", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, "context_window"
    value = getattr(getattr(model, "config", None), "n_ctx", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, "n_ctx"
    return None


def _exact(model: Any, texts: list[str]) -> int | None:
    """The model's exact count of ``texts`` (tokens), or ``None`` when it has no ``count_tokens``
    or it fails (a model file that is missing: the provider says so when the run calls it)."""
    count = getattr(model, "count_tokens", None)
    if not callable(count):
        return None
    try:
        total = sum(count(t) for t in texts)
    except Exception:  # an exact count is an extra: the provider's own check remains
        return None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def check_task_size(messages: Iterable[Message], model: Any) -> None:
    """Raise :class:`~seamkit.errors.TaskTooLarge` when the text of ``messages`` (the task) does
    not fit ``model``'s context window (see the module doc)."""
    texts = [b.text for m in messages for b in m.content if isinstance(b, TextBlock)]
    _check_texts(texts, sum(map(len, texts)), model)


def check_text_size(text: str, model: Any) -> None:
    """:func:`check_task_size` for a task that is one text (``Agent.run("...")``): the same
    checks, without the messages to walk for their text."""
    found = context_window(model)
    if len(text) * 4 <= (found[0] if found is not None else MAX_TASK_TOKENS):
        return  # step 1 (see _check_texts), the common case
    _check_texts([text], len(text), model)


def _check_texts(texts: list[str], chars: int, model: Any) -> None:
    """The checks of :func:`check_task_size` on the task's ``texts`` (``chars`` characters)."""
    found = context_window(model)
    limit = found[0] if found is not None else MAX_TASK_TOKENS
    if chars * 4 <= limit:
        return  # a character is at most 4 UTF-8 bytes: no more bytes than the window has tokens
    if chars <= limit and sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) <= limit:
        return  # no more bytes than the window has tokens: it fits
    from seamkit._tokens import count_text_tokens

    where = found[1] if found is not None else ""
    estimated = sum(count_text_tokens(t) for t in texts)
    if estimated > limit * MARGIN:
        raise TaskTooLarge(estimated, limit, chars, window=found is not None, where=where)
    if found is None or estimated * UNDERESTIMATE <= limit or chars > EXACT_MAX_CHARS:
        return
    exact = _exact(model, texts)
    if exact is not None and exact > limit:
        raise TaskTooLarge(exact, limit, chars, window=True, where=where, exact=True)
