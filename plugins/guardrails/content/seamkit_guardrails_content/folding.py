"""Unicode folding shared by the content guardrails: the one place that decides which spellings of a
text are "the same" for matching.

Two views of a text, built from the same per-character rules:

- :func:`fold` (markers of ``wrap_tool_output``, patterns of ``deny``): Unicode *tag characters*
  (U+E0020-U+E007E, the invisible copies of ASCII used for "ASCII smuggling": Unicode TS #51
  section 7, Riley Goodside 2024) decoded to the ASCII they stand for, NFKC (fullwidth and
  compatibility forms become plain ones: UAX #15), the remaining invisible format characters
  (general category Cf: zero-width space/joiners, word joiner, BOM, soft hyphen, bidi controls)
  removed, lower-cased, Cyrillic/Greek letters that look Latin folded to Latin (a subset of Unicode
  TR39 ``confusables.txt``), Unicode dashes folded to ``-``, and whitespace runs collapsed to one
  space (with ``lines=True`` a run holding a line break becomes one ``\\n``).
- :func:`view` (``redact``): the same tag decoding, NFKC, Cf removal and dash folding, *without*
  case or homoglyph folding, plus the position in the original text of every character of the
  view, so a match found in the view is replaced in the original text, covering the invisible
  characters inside it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["TAG_CHARACTERS", "fold", "folds", "has_hidden_tags", "view"]

#: Unicode tag characters (U+E0000-U+E007F), also matched by :func:`has_hidden_tags`.
TAG_CHARACTERS = re.compile("[\U000e0000-\U000e007f]")

# An emoji tag sequence (UTS #51 section 2.8: black flag U+1F3F4, tag letters/digits, cancel tag
# U+E007F), e.g. the flag of England: the one legitimate use of tag characters in running text.
_EMOJI_TAG_SEQUENCE = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]+\U000e007f")

# Cyrillic and Greek letters that look like Latin ones (a subset of Unicode TR39 confusables.txt,
# https://www.unicode.org/Public/security/latest/confusables.txt: the lowercase letters that
# spell marker words). NFKC leaves these alone because they are distinct letters, not variants.
_HOMOGLYPHS: dict[int, str] = {  # code points: the letters themselves trip linters (RUF001)
    0x0430: "a", 0x0441: "c", 0x0435: "e", 0x04BB: "h", 0x0456: "i", 0x0458: "j", 0x04CF: "l", 0x043E: "o",
    0x0440: "p", 0x051B: "q", 0x0455: "s", 0x051D: "w", 0x0445: "x", 0x0443: "y", 0x0501: "d", 0x0261: "g",
    0x0578: "n", 0x057D: "u", 0x03B1: "a", 0x03B5: "e", 0x03B9: "i", 0x03BF: "o", 0x03C1: "p", 0x03C4: "t",
    0x03C5: "u", 0x03BD: "v", 0x03C7: "x", 0x03BA: "k", 0x03B7: "n", 0x0475: "v", 0x0131: "i",
}
_HOMOGLYPH_RX = re.compile("[" + "".join(map(chr, _HOMOGLYPHS)) + "]")


def has_hidden_tags(text: str) -> bool:
    """Whether ``text`` holds Unicode tag characters outside emoji tag sequences (flags)."""
    if text.isascii() or TAG_CHARACTERS.search(text) is None:
        return False
    return TAG_CHARACTERS.search(_EMOJI_TAG_SEQUENCE.sub("", text)) is not None


@lru_cache(maxsize=8192)
def _char(ch: str, invisible: str = "") -> str:
    """What one character becomes in :func:`view` (and, before case and homoglyph folding, in :func:`fold`)."""
    cp = ord(ch)
    if 0xE0020 <= cp <= 0xE007E:
        return chr(cp - 0xE0000)  # a tag character means its ASCII twin (and NFKC leaves ASCII alone)
    if unicodedata.category(ch) == "No":
        return ch  # superscripts, fractions, circled numbers: not digits of a number written next to them
    out = []
    for c in unicodedata.normalize("NFKC", ch):
        cat = unicodedata.category(c)
        if cat == "Cf":
            out.append(invisible)
            continue
        out.append("-" if cat == "Pd" or c == "\u2212" else c)  # dashes (and the minus sign) are "-"
    return "".join(out)


def _map_chars(text: str, invisible: str) -> str:
    chars = set(text)
    if all(_char(c, invisible) == c for c in chars):
        return text
    return "".join(_char(c, invisible) for c in text)


def fold(text: str, *, lines: bool = False, invisible: str = "") -> str:
    """``text`` folded for matching (see the module doc). ``lines``: keep line breaks (a whitespace
    run holding one becomes ``\\n``), so that ``^`` / ``(?m)`` patterns still see lines; else every
    whitespace run is one space. ``invisible``: what an invisible format character becomes (``""``:
    removed, for one hidden inside a word; ``" "``: for one used as a word separator).
    Idempotent: ``fold(fold(t)) == fold(t)``."""
    if text.isascii():  # no tags, format characters or homoglyphs: this runs on every tool result
        t = text.lower()
    else:
        # Whole-text NFKC first (it composes across characters), then the per-character rules.
        t = _map_chars(unicodedata.normalize("NFKC", text), invisible).lower()
        t = _HOMOGLYPH_RX.sub(lambda m: _HOMOGLYPHS[ord(m.group())], unicodedata.normalize("NFKC", t))
    if lines:
        return re.sub(r"[^\S\n]*\n\s*", "\n", re.sub(r"[^\S\n]+", " ", t))
    return re.sub(r"\s+", " ", t)


def folds(text: str, *, lines: bool = False) -> tuple[str, ...]:
    """The distinct views a pattern is matched against: :func:`fold` with invisible format
    characters removed (``ig\\u200bnore``), and, when ``text`` has any, with each one a space
    (``project\\u200bfalcon`` is two words to a reader)."""
    removed = fold(text, lines=lines)
    if text.isascii():
        return (removed,)
    spaced = fold(text, lines=lines, invisible=" ")
    return (removed,) if spaced == removed else (removed, spaced)


def view(text: str) -> tuple[str, Sequence[int] | None]:
    """``(v, where)``: ``text`` with tag characters decoded, NFKC per character, invisible format
    characters removed and dashes folded to ``-``; ``where[i]`` is the index in ``text`` of the
    character ``v[i]`` came from (``where`` is ``None`` when ``v`` is ``text`` itself). Lengths
    differ: a removed character has no ``v`` index, an expanded one (``\\ufb01`` -> ``fi``) several."""
    if text.isascii():
        return text, None
    if all(_char(c) == c for c in set(text)):
        return text, None
    parts: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        out = _char(ch)
        parts.append(out)
        where.extend([i] * len(out))
    return "".join(parts), where
