"""Refusing a task larger than the model's context window before a run starts.

A task that cannot fit the model would be tokenised, guarded, checkpointed and sent, and only then
refused by the provider (a 30 MB task took 111 s and 2.2 GB before failing, and was stored).
:func:`check_task_size` runs when a run starts (:meth:`seamkit.Agent.run` / ``stream``, before the
first checkpoint): it estimates the task's tokens with the default estimator
(:func:`seamkit._tokens.count_text_tokens`, which samples a long text: bounded time and memory,
never a model's tokenizer over the whole text) and raises :class:`~seamkit.errors.TaskTooLarge`
when the estimate is over the model's context window by more than the estimator's error margin
(:data:`MARGIN`; the provider's own exact check still sees what passes), or over
:data:`MAX_TASK_TOKENS` when the model declares no window.

The window is the provider's ``context_window`` attribute (tokens), else its config's ``n_ctx``
(``llamacpp``). Only the task is counted: the history may be compacted, the task never is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from seamkit.errors import TaskTooLarge
from seamkit.values import Message, TextBlock

__all__ = ["MARGIN", "MAX_TASK_TOKENS", "check_task_size", "context_window"]

#: the cap when the model declares no context window (tokens): above the largest context windows
#: offered (2 million tokens), so it refuses only what no model could take
MAX_TASK_TOKENS = 2_000_000
#: how far over the window an estimate must be to refuse: the estimator is within 15% of a real
#: tokenizer on the measured texts (seamkit._tokens), so a task that might fit is never refused
MARGIN = 1.2


def context_window(model: Any) -> tuple[int, str] | None:
    """The model's context window in tokens and where it was read, or ``None`` when it declares
    none: its ``context_window`` attribute, else its config's ``n_ctx``."""
    for value, where in ((getattr(model, "context_window", None), "context_window"),
                         (getattr(getattr(model, "config", None), "n_ctx", None), "n_ctx")):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, where
    return None


def check_task_size(messages: Iterable[Message], model: Any) -> None:
    """Raise :class:`~seamkit.errors.TaskTooLarge` when the text of ``messages`` (the task) is
    estimated over ``model``'s context window (see the module doc)."""
    from seamkit._tokens import count_text_tokens

    texts = [b.text for m in messages for b in m.content if isinstance(b, TextBlock)]
    chars = sum(len(t) for t in texts)
    found = context_window(model)
    limit = found[0] if found is not None else MAX_TASK_TOKENS
    if chars * 4 <= limit:  # a token holds a UTF-8 byte at least, a character 4 bytes at most: it fits
        return
    estimated = sum(count_text_tokens(t) for t in texts)
    if estimated > limit * MARGIN:
        raise TaskTooLarge(estimated, limit, chars, window=found is not None,
                           where=found[1] if found is not None else "")
