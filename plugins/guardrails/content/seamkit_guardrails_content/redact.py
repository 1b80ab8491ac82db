"""``redact``: emails, phone numbers, credentials and payment card numbers replaced in text.

Off by default: it acts only where a composition lists it (``agent.guardrails: [{use: redact,
at: [output, tool_result]}]``; ``input`` too when wanted). At each point it returns
``rewrite(value, "redacted 2 emails, 1 card number")``: the reason counts by category and never
contains what was redacted.

Categories (``RedactConfig.categories``) and what each matches:

- ``email``: ``local@domain.tld`` (RFC 5322 dot-atom local parts; a domain of DNS labels and a
  2-63 letter TLD).
- ``phone``: international numbers written with ``+`` or ``00`` and a country code (E.164, ITU-T
  E.164: at most 15 digits), and national numbers in the common written forms: North American
  ``(555) 123-4567`` / ``555-123-4567`` / ``555.123.4567`` / ``555 123 4567`` (optionally after
  ``1-`` / ``1 ``), ``415 5550132`` / ``(415) 5550132`` (NANP area and exchange codes), and trunk-prefix
  numbers ``0`` + 9-10 digits in groups (``020 7946 0958``, ``06 12 34 56 78``, ``030-1234 5678``).
  A bare run of digits is not a phone number (ids, amounts), nor is anything next to letters,
  ``/``, ``:`` or ``.``-separated digit groups of a date or version (``2024-01-15``, ``1.2.3``).
- ``api_key``: credentials by their documented shapes: OpenAI ``sk-``/``sk-proj-``/
  ``sk-svcacct-``/``sk-admin-``, Anthropic ``sk-ant-``, AWS access key ids ``AKIA``/``ASIA`` + 16
  (AWS IAM "Unique identifiers"), GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and
  ``github_pat_`` (GitHub blog "Behind GitHub's new authentication token formats", 2021), Slack
  ``xoxb-``/``xoxp-``/``xoxa-``/``xoxr-``/``xoxs-`` (Slack "Token types"), Google ``AIza`` + 35,
  Stripe ``sk_live_``/``rk_live_``/``sk_test_``/``rk_test_`` (Stripe "API keys"), JWTs (three
  base64url parts, the first two JSON objects, so starting ``eyJ``; RFC 7519), the token of an
  ``Authorization: Bearer`` (RFC 6750 section 2.1 ``b64token``; ``Bearer`` is kept), and PEM
  private keys (RFC 7468 ``-----BEGIN ... PRIVATE KEY-----`` to the matching END line).
- ``card``: 13-19 digits, optionally in groups of 3 or more joined by one kind of separator (space,
  dash, dot or underscore), starting with a prefix a card network issues (Visa, Mastercard
  including its 2221-2720 range, Mir, American Express, Diners Club, JCB, Maestro, Discover,
  UnionPay: see ``_issued_prefix``; so an id like ``2024-0601-0012-3456`` is not a card) and valid
  under the Luhn check (ISO/IEC 7812-1 annex B). A Luhn-invalid run, a longer or shorter one, or
  one inside a word, hash, UUID or decimal number is left alone.

Every pattern is matched on a folded view of the text (:func:`find_matches`): fullwidth digits and
letters, no-break spaces, Unicode dashes (``(415) 555\u20130132``), zero-width characters and soft
hyphens inside a number or address (``b\u200bob@example.com``) do not hide it, and the whole
original span, invisible characters included, is replaced.

Typed outputs: :func:`redact_value` walks ``str``, ``dict`` / mappings, ``list``, ``tuple``,
``set``, pydantic models and dataclasses, redacting every string (mapping keys are left as they
are) and rebuilding a value of the same type; an object it does not know is left unchanged.
Integers are redacted too, as their decimal digits (``{"card": 4111111111111111}``: a card number
typed as a number is still one; in practice only ``card`` matches a bare integer), and a redacted
integer becomes the replacement *string*. That changes the value's type: the host re-validates a
rewritten typed output against the agent's output schema and fails the run closed when it no
longer validates. Type fields that may hold such numbers as strings in the output schema when the
run must go on with them redacted.

What this does not cover: names, postal addresses and other free-form personal data (use a model
or an NER-based guardrail), secrets without a recognisable shape (a generic password), phone
numbers written in words or without the separators above, and anything inside images.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from seamkit.plugin import ALLOW, GuardContext, Verdict, rewrite
from seamkit.values import ToolResult

from seamkit_guardrails_content.config import CATEGORIES, Category, RedactConfig
from seamkit_guardrails_content.folding import view

__all__ = ["LABELS", "MAX_PASSES", "Redact", "Redactor", "build_redact", "find_matches", "luhn_valid", "redact_value"]

#: How each category is named in replacements and reasons (singular, plural).
LABELS: Mapping[Category, tuple[str, str]] = {
    "email": ("email", "emails"),
    "phone": ("phone number", "phone numbers"),
    "api_key": ("API key", "API keys"),
    "card": ("card number", "card numbers"),
}


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` (ASCII digits only) passes the Luhn check (ISO/IEC 7812-1 annex B):
    doubling every second digit from the right, the digit sum is a multiple of 10."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


# The local part never starts with ' or = and holds no / (legal in RFC 5322, but what precedes an
# @ in a URL's userinfo or path: 'https://user@host/' must stay a URL, not become 'https:[email]/'),
# and no match starts right after a / or :.
_EMAIL = re.compile(
    r"(?<![\w.%+\-/:])[A-Za-z0-9!#$%&*+?^_`{|}~-][A-Za-z0-9!#$%&'*+=?^_`{|}~-]*"
    r"(?:\.[A-Za-z0-9!#$%&'*+=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(?![\w-])"
)

# Digits may not touch letters, digits, or characters that make them part of a date, version,
# decimal, path or time; separators inside a number are single spaces, dashes or dots.
_NB = r"(?<![\w+/:.,\-])(?<!\d[ \-])"
_NA = r"(?![\w/:\-]|[.,]\d)"
_PHONE = re.compile(
    # International: +CC or 00CC, then groups; the digit count is checked afterwards (8-15).
    rf"{_NB}(?:\+|\b00)[1-9]\d{{0,2}}(?:[ .\-]?\(?\d{{1,4}}\)?){{2,6}}{_NA}"
    # North American: (NXX) NXX-XXXX, NXX-NXX-XXXX, NXX.NXX.XXXX, NXX NXX XXXX.
    rf"|{_NB}(?:1[ .\-])?(?:\(\d{{3}}\) ?|\d{{3}}(?P<s>[ .\-]))\d{{3}}(?(s)(?P=s)|[ .\-])\d{{4}}{_NA}"
    # North American with a 7-digit subscriber part: NXX NXXXXXX, (NXX) NXXXXXX (NANP: N is 2-9).
    rf"|{_NB}(?:\([2-9]\d{{2}}\) ?|[2-9]\d{{2}} )[2-9]\d{{6}}{_NA}"
    # Trunk prefix 0: 0 + 9-10 digits in groups of 2-5 with one kind of separator.
    rf"|{_NB}0\d{{1,4}}(?P<t>[ \-])\d{{2,5}}(?:(?P=t)\d{{2,5}}){{0,3}}{_NA}"
    rf"|{_NB}\(0\d{{1,4}}\) ?\d{{2,5}}(?:[ \-]\d{{2,5}}){{0,3}}{_NA}"
)

_KEY_PATTERNS: tuple[str, ...] = (
    r"\bsk-ant-[A-Za-z0-9_\-]{20,}",  # Anthropic (before OpenAI's generic sk-)
    r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
    r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b",  # GitHub classic / OAuth / app tokens
    r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b",  # GitHub fine-grained token
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API key
    r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe secret / restricted key
    r"\beyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{8,}",  # JWT (JWS compact)
    r"(?i:(?<=\bbearer )|(?<=\bbearer\t))[A-Za-z0-9\-._~+/]{16,}=*",  # RFC 6750 b64token
    r"-----BEGIN (?P<pem>(?:[A-Z0-9]+ )*)PRIVATE KEY-----[\s\S]*?-----END (?P=pem)PRIVATE KEY-----",
)
_API_KEY = re.compile("|".join(f"(?:{p})" for p in _KEY_PATTERNS))

# 13-19 digits, ungrouped or in groups of at least 3 joined by one kind of separator (space, dash,
# dot or underscore): 4-4-4-4, 4-6-5 (Amex), 4-6-4 (Diners), 8-8... Matched on the folded view
# (see :func:`find_matches`), where no-break spaces are spaces, Unicode dashes are ``-``, fullwidth
# digits are ASCII and zero-width characters and soft hyphens are gone.
_CARD = re.compile(
    r"(?<![\w.,\-])(?<!\d[ \-])[2-6]\d{2,}(?:(?P<c>[ \-._])\d{3,}(?:(?P=c)\d{3,})*)?"
    r"(?![\w]|[.,]\d|[ \-._]\d)"
)


def _issued_prefix(digits: str) -> bool:
    """Whether ``digits`` start like a number a card network issues (its IIN range): Visa 4;
    Mastercard 51-55 and 2221-2720; Mir 2200-2204; American Express 34, 37; Diners Club 300-305,
    36, 38, 39; JCB 3528-3589; Maestro 50, 56-58; Discover, UnionPay, RuPay and Maestro in 6.
    (The networks' published ranges, as collected in ISO/IEC 7812's IIN register summaries.)
    A Luhn-valid id starting 2024... or 3000... that no network issues is left alone."""
    first = digits[0]
    if first in "46":
        return True
    two, four = int(digits[:2]), int(digits[:4])
    if first == "5":
        return two <= 58
    if first == "2":
        return 2221 <= four <= 2720 or 2200 <= four <= 2204
    if first == "3":
        return two in (34, 36, 37, 38, 39) or 300 <= int(digits[:3]) <= 305 or 3528 <= four <= 3589
    return False


def _cards(text: str) -> Iterable[tuple[int, int]]:
    for m in _CARD.finditer(text):
        digits = "".join(c for c in m.group() if c.isdigit())
        if 13 <= len(digits) <= 19 and _issued_prefix(digits) and luhn_valid(digits):
            yield m.span()


def _phones(text: str) -> Iterable[tuple[int, int]]:
    for m in _PHONE.finditer(text):
        n = sum(c.isdigit() for c in m.group())
        intl = m.group().startswith(("+", "00"))
        if (8 <= n - (2 if m.group().startswith("00") else 0) <= 15) if intl else (10 <= n <= 11):
            yield m.span()


def _spans(rx: re.Pattern[str]) -> Callable[[str], Iterable[tuple[int, int]]]:
    return lambda text: (m.span() for m in rx.finditer(text))


_FINDERS: Mapping[Category, Callable[[str], Iterable[tuple[int, int]]]] = {
    # Order matters on overlap: a credential or email wins over the digits inside it.
    "api_key": _spans(_API_KEY),
    "email": _spans(_EMAIL),
    "card": _cards,
    "phone": _phones,
}


def find_matches(text: str, categories: Iterable[Category] = CATEGORIES) -> list[tuple[int, int, Category]]:
    """The non-overlapping ``(start, end, category)`` spans of ``text`` to redact, in text order.
    On overlap the earlier span wins, and at one start the category earlier in ``api_key, email,
    card, phone``.

    The patterns are matched on :func:`~seamkit_guardrails_content.folding.view` of ``text`` (tag
    characters decoded, NFKC per character, invisible format characters removed, Unicode dashes
    folded to ``-``) and each span is mapped back to ``text``: ``b\u200bob@example.com`` and
    fullwidth digits are found, and the span covers the invisible characters inside the match."""
    wanted = set(categories)
    folded, where = view(text)
    found: list[tuple[int, int, int, Category]] = []
    for rank, (cat, finder) in enumerate(_FINDERS.items()):
        if cat in wanted:
            for s, e in finder(folded):
                if e > s:
                    found.append((s, e, rank, cat) if where is None else (where[s], where[e - 1] + 1, rank, cat))
    found.sort(key=lambda f: (f[0], f[2], -f[1]))
    out: list[tuple[int, int, Category]] = []
    end = 0
    for s, e, _, cat in found:
        if s >= end:
            out.append((s, e, cat))
            end = e
    return out


#: The most redaction passes over one text (see :meth:`Redactor.text`); in practice one or two.
MAX_PASSES = 8


class Redactor:
    """Redacts text and typed values for one :class:`~seamkit_guardrails_content.config.RedactConfig`.
    Raises ``ValueError`` when a replacement would itself be redacted (redaction must be idempotent)."""

    def __init__(self, config: RedactConfig | None = None) -> None:
        self.config = config if config is not None else RedactConfig()
        self.categories: tuple[Category, ...] = tuple(self.config.categories)
        self._replacement = {c: self.config.replacement.format(label=LABELS[c][0], category=c) for c in CATEGORIES}
        for c, r in self._replacement.items():
            if find_matches(r, self.categories):
                raise ValueError(f"the replacement for {c} ({r!r}) would itself be redacted; choose another")

    def text(self, text: str, counts: Counter[Category] | None = None) -> str:
        """``text`` with every match replaced; ``counts`` (when given) is incremented per category.

        Applied until nothing matches (at most :data:`MAX_PASSES` passes): a replacement changes
        what surrounds the text next to it (``x@example.com+14155550132``: the phone number is
        glued to the email until the email is replaced), and a second call must change nothing."""
        for _ in range(MAX_PASSES):
            matches = find_matches(text, self.categories)
            if not matches:
                break
            parts: list[str] = []
            pos = 0
            for s, e, cat in matches:
                parts += [text[pos:s], self._replacement[cat]]
                pos = e
                if counts is not None:
                    counts[cat] += 1
            parts.append(text[pos:])
            text = "".join(parts)
        return text

    def value(self, value: Any, counts: Counter[Category] | None = None) -> Any:
        """See :func:`redact_value`."""
        return redact_value(value, lambda s: self.text(s, counts))


def redact_value(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with ``redact`` applied to every string in it: ``str``; ``int`` (not ``bool``), as
    its decimal digits: when they are redacted the integer becomes the redacted *string*; mappings (values only;
    rebuilt as the same type when it can be built from a ``dict``, else a ``dict``); ``list``,
    ``tuple`` (named tuples too), ``set``, ``frozenset``; pydantic models (``model_copy`` with the
    changed fields); dataclasses (``dataclasses.replace`` with the changed init fields). Anything
    else, and any container in which nothing changed, is returned as it is (the same object)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, int) and not isinstance(value, bool):
        # A card number typed as an integer is still a card number: redacted into the replacement
        # string (the output's type changes; see the module doc on typed outputs).
        digits = str(value)
        redacted = redact(digits)
        return value if redacted == digits else redacted
    if isinstance(value, Mapping):
        items = {k: redact_value(v, redact) for k, v in value.items()}
        if all(items[k] is v for k, v in value.items()):
            return value
        try:
            return type(value)(items)
        except Exception:  # a mapping type that cannot be built from a dict
            return items
    if isinstance(value, list | tuple | set | frozenset):
        seq = [redact_value(v, redact) for v in value]
        if all(a is b for a, b in zip(seq, value, strict=True)):
            return value
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*seq)
        try:
            return type(value)(seq)
        except Exception:  # a subclass with another constructor: its base type
            base = next(t for t in (list, tuple, frozenset, set) if isinstance(value, t))
            return base(seq)
    model_fields = getattr(type(value), "model_fields", None)
    if model_fields is not None and hasattr(value, "model_copy"):
        update = {}
        for name in model_fields:
            old = getattr(value, name, None)
            new = redact_value(old, redact)
            if new is not old:
                update[name] = new
        return value.model_copy(update=update) if update else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = redact_value(old, redact)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


def _reason(counts: Counter[Category]) -> str:
    parts = []
    for c in CATEGORIES:
        n = counts.get(c, 0)
        if n:
            parts.append(f"{n} {LABELS[c][0] if n == 1 else LABELS[c][1]}")
    return "redacted " + ", ".join(parts)


class Redact:
    """The ``redact`` guardrail (points ``input``, ``tool_result``, ``output``); see the module doc."""

    name = "redact"

    def __init__(self, config: RedactConfig | None = None) -> None:
        self.redactor = Redactor(config)

    def _verdict(self, value: Any) -> Verdict:
        counts: Counter[Category] = Counter()
        new = self.redactor.value(value, counts)
        return rewrite(new, _reason(counts)) if counts else ALLOW

    async def check_input(self, text: str, guard: GuardContext) -> Verdict:
        """Redact the user's task."""
        return self._verdict(text)

    async def check_tool_result(self, result: ToolResult, guard: GuardContext) -> Verdict:
        """Redact a tool result's content (errors too)."""
        return self._verdict(result.content)

    async def check_output(self, output: Any, guard: GuardContext) -> Verdict:
        """Redact the final answer: text, or every string inside a typed value."""
        return self._verdict(output)


def build_redact(config: RedactConfig | None = None) -> Redact:
    """Factory registered as ``redact``."""
    return Redact(config)
