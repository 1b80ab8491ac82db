"""Regressions found by a newcomer testing the provider plugins: bounded error messages, masking
before the cut, ``secrets=`` in :func:`open_sse` / :func:`post_json`, and the one local-pricing rule."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from seamkit._pricing import Price
from seamkit.errors import FailureClass, ProviderError
from seamkit_http import (
    FREE,
    ReplayTransport,
    Reply,
    classify_error_body,
    classify_http_error,
    is_loopback,
    local_pricing,
    make_client,
    open_sse,
    post_json,
)
from seamkit_http.errors import MAX_MESSAGE_CHARS

HUGE = "x" * 2_000_000


def test_a_2_mb_provider_message_is_cut_with_a_count() -> None:
    body = {"error": {"message": HUGE, "type": "server_error", "param": None, "code": None}}
    err = classify_http_error("openai", 500, json.dumps(body).encode(), {})
    assert err.failure_class is FailureClass.SERVER_ERROR
    assert len(str(err)) < MAX_MESSAGE_CHARS + 200
    assert f"… ({len(HUGE) - MAX_MESSAGE_CHARS} more characters)" in str(err)


def test_a_huge_message_in_a_stream_error_event_is_cut() -> None:
    err = classify_error_body("anthropic", {"type": "error", "error": {"type": "api_error", "message": HUGE}})
    assert len(str(err)) < MAX_MESSAGE_CHARS + 200 and "more characters)" in str(err)


def test_a_short_message_is_kept_whole() -> None:
    message = "y" * MAX_MESSAGE_CHARS
    err = classify_error_body("openai", {"error": {"message": message, "type": "server_error"}})
    assert message in str(err) and "more characters" not in str(err)


def test_a_plain_body_is_cut_with_a_count() -> None:
    err = classify_http_error("p", 502, b"z" * 10_000, {})
    assert "more characters)" in str(err) and len(str(err)) < 700


def test_a_secret_straddling_the_cut_is_masked_before_cutting() -> None:
    key = "sk-straddle-0123456789abcdef"
    message = "a" * (MAX_MESSAGE_CHARS - 5) + key
    err = classify_error_body("openai", {"error": {"message": message, "type": "server_error"}}, secrets=[key])
    assert "sk-st" not in str(err)  # cut first, the key's start would survive the cut unmasked
    assert "***" in str(err)


async def test_open_sse_masks_the_secrets_it_is_given() -> None:
    # a configured header whose name does not look like a credential: only secrets= can mask it
    value = "custom-credential-1a2b3c4d"
    body = {"error": {"message": f"bad header {value}", "type": "invalid_request_error"}}
    transport = ReplayTransport(Reply(400, {"content-type": "application/json"}, body=json.dumps(body).encode()),
                                Reply(400, {"content-type": "application/json"}, body=json.dumps(body).encode()))
    client = make_client(transport=transport)
    with pytest.raises(ProviderError) as info:
        async with open_sse(client, "POST", "https://example.test/v1/x", provider="p",
                            headers={"X-Gateway": value}, json={}, secrets=[value]):
            pass
    assert value not in str(info.value) and "***" in str(info.value)
    with pytest.raises(ProviderError) as info2:
        await post_json(client, "https://example.test/v1/x", provider="p", headers={"X-Gateway": value}, json={},
                        secrets=[value])
    assert value not in str(info2.value)


TABLE = Price(Decimal("2.50"), Decimal("10"))


@pytest.mark.parametrize(
    ("local", "price", "in_table", "loopback", "expected"),
    [
        (None, None, True, True, (False, TABLE)),     # a local proxy (LiteLLM) to the paid API: priced
        (None, None, False, True, (True, FREE)),      # a local model the table does not know: 0 local
        (None, None, True, False, (False, TABLE)),
        (None, None, False, False, (False, None)),    # unpriced, never $0
        (False, None, False, True, (False, None)),    # local: false turns the loopback default off
        (True, None, True, False, (True, FREE)),      # local: true wins
        (True, Price(Decimal(1), Decimal(2)), True, True, (True, FREE)),
        (None, Price(Decimal(1), Decimal(2)), False, True, (False, Price(Decimal(1), Decimal(2)))),
    ],
)
def test_local_pricing_rule(local: bool | None, price: Price | None, in_table: bool, loopback: bool,
                            expected: tuple[bool, Price | None]) -> None:
    assert local_pricing(local, price, lambda: TABLE if in_table else None, loopback=loopback) == expected


@pytest.mark.parametrize(("url", "loop"), [
    ("http://127.0.0.1:8080/v1", True), ("http://127.9.9.9", True), ("http://[::1]:8000", True),
    ("http://localhost:4000", True), ("http://api.localhost", True), ("https://api.openai.com/v1", False),
    ("http://10.0.0.5:8000/v1", False), ("http://[::1", False),
])
def test_is_loopback(url: str, loop: bool) -> None:
    assert is_loopback(url) is loop
