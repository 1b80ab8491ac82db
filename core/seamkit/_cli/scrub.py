"""Masking secrets in everything the CLI writes.

A composition's ``${NAME}`` references take values from the environment (API keys, tokens...).
Once a command has loaded a composition, :func:`scrub_output` replaces ``sys.stdout`` and
``sys.stderr`` with :class:`ScrubbingWriter` s that replace each secret among them
(:meth:`seamkit.composition.Composition.secret_values`: a secret-named or ``SecretStr``
parameter's) with ``***``, whoever writes: renderers, error reports, ``SEAMKIT_DEBUG`` tracebacks,
warnings, plugins. Other environment values (a team name in a prompt) are shown as they are.
A secret of :data:`~seamkit._plugins.redact.MIN_SECRET_LENGTH` characters or more is masked
wherever it occurs (and a long enough start of it, see :class:`TextScrubber`); a shorter one (a
one-letter password in a DSN) is never masked on its own, only inside the longer value it was put
into, which ``secret_values`` lists instead (the DSN, its ``user:g@``).
:func:`restore_output` puts the original streams back (``seamkit._cli.main.main`` calls it last).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterable
from typing import Any, TextIO, cast

__all__ = ["MASK", "ScrubbingWriter", "TextScrubber", "restore_output", "scrub_output", "secret_forms"]

MASK = "***"


def secret_forms(secrets: Iterable[str]) -> frozenset[str]:
    """Each secret as it may appear in output: as is, escaped in a JSON string (``ensure_ascii``
    on and off) and in a Python ``repr``. Empty strings are dropped."""
    forms: set[str] = set()
    for s in secrets:
        if not s:
            continue
        forms.add(s)
        forms.add(json.dumps(s, ensure_ascii=False)[1:-1])
        forms.add(json.dumps(s)[1:-1])
        forms.add(repr(s)[1:-1])
    forms.discard("")
    return frozenset(forms)


def _shortest_masked(form: str) -> int:
    """How long a leading part of a secret must be to be masked on its own: a third of it, at
    least 4 characters (a reply cut off mid-secret, ``hunter2SEC...``, must not show the part)."""
    return min(len(form), max(4, len(form) // 3))


class TextScrubber:
    """Masks ``secrets`` (see :func:`secret_forms`) in text that arrives in pieces.

    Masked: every whole secret, and every leading part of one at least a third of its length
    (4 characters at least) — a model's reply cut off in the middle of a secret. Secrets shorter
    than :data:`~seamkit._plugins.redact.MIN_SECRET_LENGTH` are ignored (see the module doc). :meth:`feed`
    returns the text that can be shown now; the end of a piece that could be the start of a
    secret is held back until the next piece shows whether it is one. :meth:`drain` returns what
    is held, masked when it is a long enough start of a secret.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        from seamkit._plugins.redact import MIN_SECRET_LENGTH

        forms = sorted((f for f in secret_forms(secrets) if len(f) >= MIN_SECRET_LENGTH), key=len, reverse=True)
        self.forms = tuple(forms)
        long = forms
        parts = sorted(
            {f[:n] for f in long for n in range(_shortest_masked(f), len(f) + 1)}, key=len, reverse=True
        )
        self._pattern = re.compile("|".join(re.escape(p) for p in parts)) if parts else None
        self._whole = re.compile("|".join(re.escape(f) for f in long)) if long else None
        self._starts = frozenset(f[0] for f in forms)
        self._longest = len(forms[0]) if forms else 0
        self._pending = ""

    def __bool__(self) -> bool:
        return self._pattern is not None

    def scrub(self, text: str) -> str:
        """``text`` with every secret (and long enough start of one) replaced by ``***``
        (nothing held back)."""
        return self._pattern.sub(MASK, text) if self._pattern is not None else text

    def _held_from(self, text: str) -> int:
        """Index where the longest end of ``text`` that starts some secret begins (``len(text)``
        when none does)."""
        for i in range(max(0, len(text) - self._longest), len(text)):
            if text[i] in self._starts:
                tail = text[i:]
                if any(f.startswith(tail) for f in self.forms):
                    return i
        return len(text)

    def feed(self, text: str) -> str:
        if not self:
            return text
        # hold back an end that may be a secret's start (masking it as a mere start now would
        # show the secret's rest when the next piece comes), and a whole secret reaching into
        # it: it may be part of a longer one (user:g@ of a DSN still coming); mask the rest
        text = self._pending + text
        cut = self._held_from(text)
        if self._whole is not None:
            for m in self._whole.finditer(text):
                if m.start() < cut < m.end():
                    cut = m.start()
                    break
        self._pending = text[cut:]
        shown = text[:cut]
        return self.scrub(self._whole.sub(MASK, shown) if self._whole is not None else shown)

    def drain(self) -> str:
        pending, self._pending = self._pending, ""
        return self.scrub(pending)


class ScrubbingWriter:
    """A text stream wrapper that writes to ``stream`` with every occurrence of ``secrets``
    replaced by ``***`` (a :class:`TextScrubber`: a secret split across two ``write`` calls is
    caught too; ``flush`` does not release a held-back end, :meth:`release` does, at the end of
    the command). Other attributes (``encoding``, ``isatty``, ``fileno``...) are the wrapped
    stream's, except ``buffer``, which would bypass the masking.
    """

    def __init__(self, stream: TextIO, secrets: Iterable[str]) -> None:
        self.stream = stream
        self.scrubber = TextScrubber(secrets)
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            out = self.scrubber.feed(text)
            if out:
                self.stream.write(out)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.stream.flush()

    def release(self) -> None:
        """Write what was held back (it is not a whole secret) and flush."""
        with self._lock:
            pending = self.scrubber.drain()
        if pending:
            self.stream.write(pending)
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":
            raise AttributeError("a scrubbing stream has no binary buffer")
        return getattr(self.stream, name)


_originals: tuple[TextIO, TextIO] | None = None


def scrub_output(secrets: Iterable[str]) -> None:
    """Mask ``secrets`` in everything written to ``sys.stdout`` and ``sys.stderr`` from now on,
    until :func:`restore_output`. Nothing changes when ``secrets`` is empty. Calling it again
    adds to the masked values."""
    global _originals
    values = [s for s in secrets if s]
    if not values:
        return
    if _originals is not None:  # already scrubbing: wrap the original streams with every secret
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, ScrubbingWriter):
                values += stream.scrubber.forms
                stream.release()
        sys.stdout, sys.stderr = _originals
    _originals = (sys.stdout, sys.stderr)
    sys.stdout = cast(TextIO, ScrubbingWriter(sys.stdout, values))
    sys.stderr = cast(TextIO, ScrubbingWriter(sys.stderr, values))


def restore_output() -> None:
    """Write what the scrubbing streams held back and put the original streams back (no-op
    when not scrubbing)."""
    global _originals
    if _originals is None:
        return
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, ScrubbingWriter):
            try:
                stream.release()
            except (OSError, ValueError):  # a closed pipe: nothing more can be shown
                pass
    sys.stdout, sys.stderr = _originals
    _originals = None
