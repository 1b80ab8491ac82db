"""redact: what each category matches and what it must leave alone (prices, dates, versions, ids,
hashes, UUIDs, Luhn-invalid digit runs), typed outputs, reasons that never echo a secret, and
hypothesis properties (idempotent, no-op without matches)."""

from __future__ import annotations

import dataclasses
import textwrap
import uuid
from collections import Counter
from typing import Any, NamedTuple

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from seamkit._guardrails import Guard, GuardContext
from seamkit._runtime.context import RunContext
from seamkit.composition import loads_composition
from seamkit.errors import ConfigError
from seamkit.values import FrozenDict, ToolResult
from seamkit_guardrails_content.config import RedactConfig
from seamkit_guardrails_content.redact import Redact, Redactor, build_redact, find_matches, luhn_valid

R = Redactor()


def gctx(point: str = "output") -> GuardContext:
    return GuardContext(point, RunContext())  # type: ignore[arg-type]


def cats(text: str) -> list[str]:
    return [c for _, _, c in find_matches(text)]


# Published test card numbers (Stripe "Testing" docs, PayPal sandbox): Luhn-valid, 13-19 digits.
CARDS = ["4242424242424242", "4242 4242 4242 4242", "4111-1111-1111-1111", "5555555555554444",
         "2223003122003222", "378282246310005", "3782 822463 10005", "6011111111111117", "3566002020360505",
         "6200000000000005", "4000056655665556", "4222222222222"]

# Shapes from the vendors' documentation; the values are made up (or the vendors' documented
# examples, e.g. AWS's AKIAIOSFODNN7EXAMPLE).
KEYS = [
    "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3,
    "sk-" + "a" * 48,
    "sk-svcacct-" + "Zz09" * 10,
    "sk-ant-api03-" + "Q" * 93 + "AA",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAY34FZKBOKMUTVV7A",
    "ghp_" + "x" * 36,
    "github_pat_11ABCDEFG0" + "a" * 12 + "_" + "b" * 59,
    "xoxb-123456789012-1234567890123-" + "A" * 24,
    "xoxp-1234-5678-abcd",
    "AIzaSyA" + "1" * 32,
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "rk_test_" + "51H" + "x" * 20,
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]


@pytest.mark.parametrize("email", ["bob@example.com", "first.last+tag@mail.example.co.uk", "o'neil@ex-ample.org",
                                   "X_Y%z@sub.domain.io"])
def test_emails_are_redacted(email: str) -> None:
    assert R.text(f"write to {email}, thanks") == "write to [redacted email], thanks"


@pytest.mark.parametrize("phone", ["+1 415 555 0132", "+14155550132", "+44 20 7946 0958", "+33 6 12 34 56 78",
                                   "+49 30 1234 5678", "0049 30 12345678", "(415) 555-0132", "415-555-0132",
                                   "415.555.0132", "415 555 0132", "+1 (415) 555-0132", "020 7946 0958",
                                   "06 12 34 56 78", "030-1234-5678", "(030) 1234 5678"])
def test_phone_numbers_are_redacted(phone: str) -> None:
    assert R.text(f"call {phone} today") == "call [redacted phone number] today", phone


@pytest.mark.parametrize("key", KEYS)
def test_api_key_shapes_are_redacted(key: str) -> None:
    assert R.text(f"key={key} end") == "key=[redacted API key] end"


def test_bearer_tokens_keep_the_scheme_and_lose_the_token() -> None:
    out = R.text("Authorization: Bearer abc123DEF456ghi789JKL0.mno~+/==")
    assert out == "Authorization: Bearer [redacted API key]"


def test_private_key_pem_blocks_are_redacted_whole() -> None:
    pem = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98Xy\nZm9vYmFy\n-----END RSA PRIVATE KEY-----")
    assert R.text(f"key:\n{pem}\ndone") == "key:\n[redacted API key]\ndone"
    pub = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----"
    assert R.text(pub) == pub


@pytest.mark.parametrize("card", CARDS)
def test_luhn_valid_card_numbers_are_redacted(card: str) -> None:
    assert luhn_valid(card.replace(" ", "").replace("-", ""))
    assert R.text(f"card {card} exp 12/29") == "card [redacted card number] exp 12/29"


FW = str.maketrans("0123456789@.abcdefghijklmnopqrstuvwxyz", "".join(
    chr(ord(c) + 0xFEE0) for c in "0123456789@.abcdefghijklmnopqrstuvwxyz"))  # fullwidth forms


@pytest.mark.parametrize(("text", "category"), [
    ("4111.1111.1111.1111", "card"),
    ("4111\u00a01111\u00a01111\u00a01111", "card"),  # no-break spaces
    ("4111_1111_1111_1111", "card"),
    ("4111\u200b1111\u200b1111\u200b1111", "card"),  # zero-width spaces
    ("4111\u00ad1111\u00ad1111\u00ad1111", "card"),  # soft hyphens
    ("4111\u20131111\u20131111\u20131111", "card"),  # en dashes
    ("4111111111111111".translate(FW), "card"),  # fullwidth digits, as a fullwidth phone already was
    ("415-555-0132".translate(FW), "phone"),
    ("bob@exa\u200bmple.com", "email"),
    ("bo\u00adb@example.com", "email"),
    ("bob@example.com".translate(FW), "email"),
    ("b\u200bob@example.com", "email"),  # the match covers the first letter too
    ("(415) 555\u20130132", "phone"),  # en dash
    ("1-415-555-0132", "phone"),
    ("1 415 555 0132", "phone"),
    ("415 5550132", "phone"),
    ("(415) 5550132", "phone"),
])
def test_obfuscated_secrets_are_redacted_whole(text: str, category: str) -> None:
    # The whole text is the secret: nothing of it (not one letter, not an invisible character) stays.
    label = {"card": "card number", "phone": "phone number", "email": "email"}[category]
    assert R.text(f"see {text}.") == f"see [redacted {label}]."
    assert cats(text) == [category]


@pytest.mark.parametrize("text", [
    "Total: $1,234.56 (was $2,499.00)", "price 4242.42 EUR", "released 2024-01-15 at 10:30:00",
    "on 12/05/2024", "version 1.2.3 and v10.4.12-beta", "id 4242424242424241",  # Luhn-invalid
    "4242424242424242424242",  # 22 digits: longer than any card
    "ms timestamp 1700000000000123",  # MII 1 is not a payment card
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "commit 4242424242424242abcdef", "uuid 12345678-1234-5678-1234-567812345678",
    "ISBN 978-3-16-148410-0", "room 415, floor 5", "call extension 5550", "order 1234567",
    "ipv4 192.168.100.200", "ratio 3.14159265358979", "account ending 4242", "1 234 567 EUR",
    "x@y", "user@localhost", "sk-short", "AKIA-not-a-key", "the task-manager-service-deployment-pipeline",
    "IBAN DE89 3704 0044 0532 0130 00", "version 10.0.19045.3803", "at 2024.06.01.12.30.45.123",
    "ts 2024-06-01T12:30:45.123456", "population 8 000 000 000", "room 415 555 floor", "call 123 4567890",
    "ISBN 978\u20133\u201316\u2013148410\u20130", "42\u00a0000\u00a0000 EUR",
])
def test_look_alikes_are_left_alone(text: str) -> None:
    assert R.text(text) == text, find_matches(text)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=10**12, max_value=10**19 - 1))
def test_luhn_invalid_digit_runs_are_never_redacted(n: int) -> None:
    digits = str(n)
    assume(not luhn_valid(digits))
    for text in (digits, f"id {digits}.", " ".join(digits[i:i + 4] for i in range(0, len(digits), 4))):
        assert "card" not in cats(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.builds(lambda d, c: f"${d:,}.{c:02d}", st.integers(0, 10**9), st.integers(0, 99)),
    st.builds(lambda d, c: f"{d}.{c:02d} EUR", st.integers(0, 10**12), st.integers(0, 99)),
    st.binary(min_size=16, max_size=32).map(bytes.hex),
    st.uuids().map(str),
    st.uuids().map(lambda u: u.hex),
    st.builds(lambda a, b, c: f"v{a}.{b}.{c}", st.integers(0, 99), st.integers(0, 999), st.integers(0, 9999)),
    st.dates().map(lambda d: d.isoformat()),
    st.datetimes().map(lambda d: d.isoformat()),
))
def test_random_prices_hashes_uuids_versions_and_dates_are_not_redacted(text: str) -> None:
    assert R.text(f"value: {text}") == f"value: {text}"


_SECRETS = st.sampled_from(["bob@example.com", "+44 20 7946 0958", "4242 4242 4242 4242", KEYS[0], KEYS[4],
                            "(415) 555-0132", "b\u200bob@example.com", "4111\u00a01111\u00a01111\u00a01111",
                            "(415) 555\u20130132"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), _SECRETS), max_size=8).map("".join))
def test_redaction_is_idempotent(text: str) -> None:
    once = R.text(text)
    assert R.text(once) == once


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_text_without_matches_is_unchanged(text: str) -> None:
    assume(not find_matches(text))
    counts: Counter[str] = Counter()
    assert R.text(text, counts) == text  # type: ignore[arg-type]
    assert not counts


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=["Nd", "L"]), max_size=20), _SECRETS,
       st.text(alphabet=st.characters(blacklist_categories=["Nd", "L"]), max_size=20))
def test_a_secret_between_punctuation_is_always_redacted_and_its_surroundings_kept(pre: str, secret: str,
                                                                                   post: str) -> None:
    assume(not find_matches(pre) and not find_matches(post))
    out = R.text(f"{pre} {secret} {post}")
    assert secret not in out
    assert out.startswith(f"{pre} [redacted ") and out.endswith(f"] {post}")


# --- the guardrail -------------------------------------------------------------------------------


async def test_reason_counts_by_category_and_never_echoes_a_secret() -> None:
    text = "a@example.com b@example.com card 4242 4242 4242 4242 key AKIAIOSFODNN7EXAMPLE"
    v = await Redact().check_output(text, gctx())
    assert v.action == "rewrite"
    assert v.reason == "redacted 2 emails, 1 API key, 1 card number"
    assert v.value == "[redacted email] [redacted email] card [redacted card number] key [redacted API key]"
    for secret in ("a@example.com", "4242", "AKIA"):
        assert secret not in v.reason and secret not in repr(v.flags)


async def test_nothing_to_redact_is_allow() -> None:
    v = await Redact().check_output("Nothing secret here: 3 apples cost $4.50 on 2024-05-01.", gctx())
    assert v.action == "allow" and v.value is None


async def test_input_and_tool_result_points() -> None:
    g = build_redact(RedactConfig())
    vi = await g.check_input("my email is x@example.org", gctx("input"))
    assert (vi.action, vi.value) == ("rewrite", "my email is [redacted email]")
    vt = await g.check_tool_result(ToolResult("c1", "crm", '{"phone": "+1 415 555 0132"}'), gctx("tool_result"))
    assert (vt.action, vt.value, vt.reason) == ("rewrite", '{"phone": "[redacted phone number]"}',
                                                "redacted 1 phone number")
    assert Guard(g).at == ("input", "tool_result", "output")
    assert Guard(g, at=["output", "tool_result"]).at == ("tool_result", "output")


async def test_only_configured_categories_and_custom_replacement() -> None:
    g = Redact(RedactConfig(categories=["email"], replacement="<{category}>"))
    v = await g.check_output("x@example.com 4242 4242 4242 4242", gctx())
    assert v.value == "<email> 4242 4242 4242 4242" and v.reason == "redacted 1 email"


def test_a_replacement_that_would_be_redacted_is_refused_at_load_with_its_location() -> None:
    with pytest.raises(ValidationError, match="would itself be redacted"):
        RedactConfig(replacement="x@y.com")
    RedactConfig(categories=["card"], replacement="x@y.com")  # emails are not redacted: allowed
    with pytest.raises(ConfigError) as info:
        loads_composition(textwrap.dedent("""
            seamkit: 1
            agent:
              model: {use: scripted, turns: [hi]}
              guardrails:
                - {use: redact, replacement: "x@y.com"}
        """))
    issue = info.value.issues[0]
    assert issue.path == "agent.guardrails[0].replacement" and "would itself be redacted" in issue.message
    assert issue.line == 6


def test_config_refuses_bad_replacements() -> None:
    with pytest.raises(ValidationError, match="only"):
        RedactConfig(replacement="[{secret}]")
    with pytest.raises(ValidationError):
        RedactConfig(categories=["passport"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="would itself be redacted"):
        Redactor(RedactConfig(replacement="{label}@example.com"))


class Contact(BaseModel):
    name: str
    email: str
    tags: list[str]
    score: int = 0


@dataclasses.dataclass(frozen=True)
class Note:
    body: str
    contact: Contact
    count: int = 1
    derived: str = dataclasses.field(init=False, default="x@example.com")


class Pair(NamedTuple):
    left: str
    right: str


async def test_typed_outputs_keep_their_types() -> None:
    c = Contact(name="Ann", email="ann@example.com", tags=["vip", "call +44 20 7946 0958"], score=3)
    note = Note(body="card 4242424242424242", contact=c)
    value: Any = {"note": note, "pair": Pair("ok", "bob@example.com"), "set": {"a@example.com"},
                  "frozen": FrozenDict(mail="z@example.com"), "n": 5, "t": ("q@example.com",)}
    v = await Redact().check_output(value, gctx())
    assert v.reason == "redacted 5 emails, 1 phone number, 1 card number"
    out = v.value
    assert isinstance(out, dict)
    assert isinstance(out["note"], Note) and out["note"].body == "card [redacted card number]"
    assert isinstance(out["note"].contact, Contact)
    assert out["note"].contact.email == "[redacted email]" and out["note"].contact.score == 3
    assert out["note"].contact.tags == ["vip", "call [redacted phone number]"]
    assert out["pair"] == Pair("ok", "[redacted email]") and isinstance(out["pair"], Pair)
    assert out["set"] == {"[redacted email]"}
    assert isinstance(out["frozen"], FrozenDict) and out["frozen"] == {"mail": "[redacted email]"}
    assert out["t"] == ("[redacted email]",) and out["n"] == 5
    assert c.email == "ann@example.com"  # the original is not mutated


async def test_unchanged_parts_of_a_typed_value_are_the_same_objects() -> None:
    inner = {"a": [1, 2, "plain"]}
    value = {"keep": inner, "mail": "m@example.com"}
    out = (await Redact().check_output(value, gctx())).value
    assert out["keep"] is inner


async def test_integer_card_numbers_are_redacted_into_strings() -> None:
    # A card number typed as a number is still a card number; the replacement is a string (the
    # host then re-validates the typed output against the output schema).
    value = {"card": 4111111111111111, "count": 4111, "ok": True, "phone": 4155550132}
    v = await Redact().check_output(value, gctx())
    assert v.action == "rewrite" and v.reason == "redacted 1 card number"
    assert v.value == {"card": "[redacted card number]", "count": 4111, "ok": True, "phone": 4155550132}
    assert R.value([4111111111111111, 4111111111111112]) == ["[redacted card number]", 4111111111111112]


def test_uuid_objects_and_other_non_strings_pass_through() -> None:
    u = uuid.uuid4()
    assert R.value(u) is u and R.value(42) == 42 and R.value(None) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("https://user@example.com/path", "https://user@example.com/path"),
    ("http://a.example/@b.example.com", "http://a.example/@b.example.com"),
    ("'bob@example.com'", "'[redacted email]'"),
    ("mail o'brien@example.com now", "mail [redacted email] now"),
    ("<bob@example.com>", "<[redacted email]>"),
])
def test_an_email_match_never_swallows_the_url_or_quotes_around_it(text: str, expected: str) -> None:
    """Outside testing: 'https://user@example.com/path' became 'https:[redacted email]/path' (the
    local part took the '//'), and a quote before an email was eaten."""
    assert R.text(text) == expected


def test_a_luhn_valid_id_outside_every_card_network_range_is_left_alone() -> None:
    """Outside testing: '2024-0601-0012-3456' (Luhn-valid, but 2024 is no network's range; the
    Mastercard 2-series is 2221-2720) was redacted as a card, about 5% of random 16-digit ids."""
    from seamkit_guardrails_content.redact import luhn_valid

    assert luhn_valid("2024060100123456")
    assert R.text("ID 2024-0601-0012-3456") == "ID 2024-0601-0012-3456"
    assert R.text("card 2221 0000 0000 0009") == "card [redacted card number]"  # Mastercard 2-series
    assert R.text("amex 3782 822463 10005") == "amex [redacted card number]"
