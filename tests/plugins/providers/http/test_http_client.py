"""open_sse / post_json / make_client / shared_client / ReplayTransport, all without a network."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from seamkit.errors import FailureClass, ProviderError
from seamkit_http import ReplayTransport, Reply, ServerSentEvent, make_client, open_sse, post_json, shared_client
from seamkit_http import client as client_module

URL = "https://api.example.test/v1/chat/completions"
SSE = {"content-type": "text/event-stream"}
KEY = "sk-test-VERYSECRET-0123456789"


def auth() -> dict[str, str]:
    return {"authorization": f"Bearer {KEY}"}


@pytest.fixture(autouse=True)
def _offline(no_network: Any) -> None:
    """Every test here runs with non-loopback connections blocked."""


async def collect(transport: ReplayTransport, **kw: Any) -> list[ServerSentEvent]:
    async with make_client(transport=transport) as client:
        async with open_sse(client, "POST", URL, provider="openai", headers=kw.get("headers"),
                            json=kw.get("json", {"x": 1})) as events:
            return [e async for e in events]


async def test_open_sse_streams_events_and_records_the_request() -> None:
    transport = ReplayTransport(Reply(headers=SSE, chunks=[b'data: {"a"', b':1}\n\n', b"data: [DONE]\n\n"]))
    events = await collect(transport, headers=auth(), json={"model": "m", "stream": True})
    assert [e.data for e in events] == ['{"a":1}', "[DONE]"]
    assert transport.json_bodies == [{"model": "m", "stream": True}]
    request = transport.requests[0]
    assert request.method == "POST" and str(request.url) == URL
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert transport.closed == 1 and transport.remaining == 0


async def test_open_sse_keeps_a_callers_accept_header() -> None:
    transport = ReplayTransport(Reply(headers=SSE, body=b"data: x\n\n"))
    await collect(transport, headers={"Accept": "application/x-ndjson, text/event-stream"})
    assert transport.requests[0].headers["accept"] == "application/x-ndjson, text/event-stream"


async def test_replayed_chunks_arrive_exactly_as_given() -> None:
    chunks = [b"da", b"ta: \xc3", b"\xa9\r", b"\n\r\n"]
    transport = ReplayTransport(Reply(headers=SSE, chunks=chunks))
    async with make_client(transport=transport) as client:
        async with client.stream("GET", URL) as response:
            assert [c async for c in response.aiter_bytes()] == chunks
    assert transport.closed == 1


@pytest.mark.parametrize(("status", "body", "expected"), [
    (401, {"error": {"message": "Incorrect API key", "type": "invalid_request_error", "code": "invalid_api_key"}},
     FailureClass.AUTHENTICATION),
    (429, {"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}},
     FailureClass.QUOTA),
    (500, {"error": {"message": "oops", "type": "server_error", "code": None}}, FailureClass.SERVER_ERROR),
    (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, FailureClass.OVERLOADED),
])
async def test_open_sse_non_2xx_is_classified_and_closed(status: int, body: Any, expected: FailureClass) -> None:
    transport = ReplayTransport(Reply(status=status, json=body, headers={"retry-after": "2", "x-request-id": "r1"}))
    with pytest.raises(ProviderError) as info:
        await collect(transport, headers=auth())
    err = info.value
    assert err.failure_class is expected
    assert err.status == status and err.retry_after == 2.0 and err.request_id == "r1"
    assert transport.closed == 1


async def test_error_message_echoing_the_key_is_masked() -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error",
                      "code": "invalid_api_key"}}
    transport = ReplayTransport(Reply(status=401, json=body))
    with pytest.raises(ProviderError) as info:
        await collect(transport, headers=auth())
    text = str(info.value) + repr(info.value) + repr(info.value.args)
    assert KEY not in text and "***" in text


async def test_x_api_key_echo_is_masked_in_post_json() -> None:
    key = "sk-ant-api03-ABCDEFGHIJ"
    transport = ReplayTransport(Reply(status=401, json={"type": "error", "error": {
        "type": "authentication_error", "message": f"invalid x-api-key {key}"}}))
    async with make_client(transport=transport) as client:
        with pytest.raises(ProviderError) as info:
            await post_json(client, URL, provider="anthropic", headers={"x-api-key": key}, json={})
    assert key not in str(info.value)
    assert info.value.failure_class is FailureClass.AUTHENTICATION


@pytest.mark.parametrize(("exc", "expected"), [
    (httpx.ConnectError("[Errno 111] Connection refused"), FailureClass.SERVER_ERROR),
    (httpx.ConnectTimeout("timed out"), FailureClass.TIMEOUT),
    (httpx.ReadTimeout("timed out"), FailureClass.TIMEOUT),
])
async def test_open_sse_transport_error_on_connect(exc: httpx.HTTPError, expected: FailureClass) -> None:
    transport = ReplayTransport(exc)
    with pytest.raises(ProviderError) as info:
        await collect(transport)
    assert info.value.failure_class is expected
    assert isinstance(info.value.__cause__, httpx.HTTPError)


@pytest.mark.parametrize(("exc", "expected"), [
    (httpx.RemoteProtocolError("peer closed connection"), FailureClass.SERVER_ERROR),
    (httpx.ReadTimeout("read timed out"), FailureClass.TIMEOUT),
])
async def test_open_sse_transport_error_mid_stream(exc: httpx.HTTPError, expected: FailureClass) -> None:
    transport = ReplayTransport(Reply(headers=SSE, chunks=[b"data: first\n\n", b"data: par", exc]))
    seen: list[str] = []
    with pytest.raises(ProviderError) as info:
        async with make_client(transport=transport) as client:
            async with open_sse(client, "POST", URL, provider="openai", json={}) as events:
                async for event in events:
                    seen.append(event.data)
    assert seen == ["first"]
    assert info.value.failure_class is expected
    assert transport.closed == 1


async def test_early_exit_closes_the_response() -> None:
    transport = ReplayTransport(Reply(headers=SSE, chunks=[b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"]))
    async with make_client(transport=transport) as client:
        async with open_sse(client, "POST", URL, provider="openai", json={}) as events:
            async for event in events:
                assert event.data == "1"
                break
        assert transport.closed == 1


async def test_closing_a_consumer_generator_closes_the_response() -> None:
    """A provider's stream() is an async generator around open_sse; aclose() must close the HTTP response."""
    transport = ReplayTransport(Reply(headers=SSE, chunks=[b"data: 1\n\n", b"data: 2\n\n"]))
    client = make_client(transport=transport)

    async def provider_stream() -> Any:
        async with open_sse(client, "POST", URL, provider="openai", json={}) as events:
            async for event in events:
                yield event.data

    gen = provider_stream()
    assert await gen.__anext__() == "1"
    await gen.aclose()
    assert transport.closed == 1
    await client.aclose()


async def test_exception_in_consumer_closes_the_response() -> None:
    transport = ReplayTransport(Reply(headers=SSE, chunks=[b"data: 1\n\n", b"data: 2\n\n"]))
    async with make_client(transport=transport) as client:
        with pytest.raises(KeyError):
            async with open_sse(client, "POST", URL, provider="openai", json={}) as events:
                async for _ in events:
                    raise KeyError("consumer bug")
    assert transport.closed == 1


async def test_json_error_with_200_instead_of_a_stream() -> None:
    body = {"error": {"message": "ctx", "type": "invalid_request_error", "code": "context_length_exceeded"}}
    transport = ReplayTransport(Reply(status=200, json=body))
    with pytest.raises(ProviderError) as info:
        await collect(transport)
    assert info.value.failure_class is FailureClass.CONTEXT_LENGTH
    assert transport.closed == 1


async def test_json_document_instead_of_a_stream() -> None:
    transport = ReplayTransport(Reply(status=200, json={"choices": []}))
    with pytest.raises(ProviderError) as info:
        await collect(transport)
    # not server_error: a 200 of the wrong shape is not transient (see classify_unexpected_body)
    assert info.value.failure_class is FailureClass.UNKNOWN
    assert info.value.code == "unexpected_body"
    assert "expected an event stream, got application/json: '{\"choices\": []}'" in str(info.value)


async def test_post_json_ok_and_headers() -> None:
    transport = ReplayTransport(Reply(json={"id": "x", "n": 1}, headers={"x-request-id": "abc"}))
    async with make_client(transport=transport) as client:
        data, headers = await post_json(client, URL, provider="openai", headers=auth(), json={"q": 1})
    assert data == {"id": "x", "n": 1}
    assert headers["x-request-id"] == "abc"
    assert transport.json_bodies == [{"q": 1}]
    assert transport.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("reply", [Reply(body=b"not json"), Reply(json=[1, 2])])
async def test_post_json_rejects_non_objects(reply: Reply) -> None:
    async with make_client(transport=ReplayTransport(reply)) as client:
        with pytest.raises(ProviderError) as info:
            await post_json(client, URL, provider="p", json={})
    assert info.value.failure_class is FailureClass.UNKNOWN
    assert "expected a JSON object" in str(info.value)


async def test_post_json_classifies_status_and_transport_errors() -> None:
    transport = ReplayTransport(
        Reply(status=429, json={"error": {"message": "slow", "type": "requests", "code": "rate_limit_exceeded"}},
              headers={"retry-after-ms": "1200"}),
        httpx.ReadTimeout("slow"),
    )
    async with make_client(transport=transport) as client:
        with pytest.raises(ProviderError) as first:
            await post_json(client, URL, provider="p", json={})
        with pytest.raises(ProviderError) as second:
            await post_json(client, URL, provider="p", json={})
    assert first.value.failure_class is FailureClass.RATE_LIMITED and first.value.retry_after == 1.2
    assert second.value.failure_class is FailureClass.TIMEOUT


# --------------------------------------------------------------------------------------- transport


async def test_replay_transport_runs_out_loudly() -> None:
    transport = ReplayTransport()
    async with make_client(transport=transport) as client:
        with pytest.raises(AssertionError, match="no reply left"):
            await client.get(URL)
    assert len(transport.requests) == 1 and transport.json_bodies == [None]


def test_reply_takes_one_body_form() -> None:
    with pytest.raises(ValueError):
        Reply(body=b"x", chunks=[b"y"])
    with pytest.raises(ValueError):
        Reply(body=b"x", json={})


async def test_reply_json_and_text_body() -> None:
    transport = ReplayTransport(Reply(json={"a": 1}), Reply(body="plain é", headers={"content-type": "text/plain"}))
    async with make_client(transport=transport) as client:
        r1 = await client.get(URL)
        r2 = await client.get(URL)
    assert r1.headers["content-type"] == "application/json" and r1.json() == {"a": 1}
    assert r2.text == "plain é"
    assert transport.closed == 2


# ----------------------------------------------------------------------------------------- clients


def test_make_client_settings() -> None:
    client = make_client(timeout_s=30, connect_timeout_s=2, http2=False)
    assert client.timeout.read == 30 and client.timeout.connect == 2
    assert client.follow_redirects is False
    with pytest.raises(ValueError):
        make_client(timeout_s=0)


def test_http2_follows_h2_availability(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "_h2_available", lambda: False)
    make_client()  # falls back to HTTP/1.1 without h2
    with pytest.raises(ImportError, match="h2"):
        make_client(http2=True)
    created: list[bool] = []
    real = httpx.AsyncClient

    def spy(*args: Any, **kwargs: Any) -> httpx.AsyncClient:
        created.append(kwargs["http2"])
        kwargs["http2"] = False  # h2 may not be installed here
        return real(*args, **kwargs)

    monkeypatch.setattr(client_module.httpx, "AsyncClient", spy)
    make_client()
    monkeypatch.setattr(client_module, "_h2_available", lambda: True)
    make_client()
    make_client(http2=False)
    assert created == [False, True, False]


async def test_shared_client_is_pooled_per_settings_and_recreated_when_closed() -> None:
    a = shared_client()
    assert shared_client() is a
    b = shared_client(timeout_s=30)
    assert b is not a
    await a.aclose()
    c = shared_client()
    assert c is not a and not c.is_closed
    await b.aclose()
    await c.aclose()


def test_shared_client_is_per_event_loop() -> None:
    async def get() -> httpx.AsyncClient:
        return shared_client(timeout_s=12)

    first = asyncio.run(get())
    second = asyncio.run(get())
    assert first is not second


def test_shared_client_needs_a_running_loop() -> None:
    with pytest.raises(RuntimeError):
        shared_client()


# ------------------------------------------------------ issue 10: a 2xx answer that is not an event stream

PORTAL = (b"<!DOCTYPE html>\n<html><head><title>Guest WiFi</title></head><body>Accept the terms to continue"
          b"</body></html>")


@pytest.mark.parametrize("chunks", [[PORTAL], [PORTAL[:5], PORTAL[5:40], PORTAL[40:]]])
async def test_an_html_page_with_200_is_a_classified_failure_not_a_server_error(chunks: list[bytes]) -> None:
    transport = ReplayTransport(Reply(200, {"content-type": "text/html; charset=utf-8"}, chunks=chunks))
    with pytest.raises(ProviderError) as info:
        await collect(transport, headers=auth())
    err = info.value
    assert err.failure_class is FailureClass.UNKNOWN and not err.failure_class.transient
    assert (err.status, err.code) == (200, "unexpected_body")
    assert "expected an event stream, got text/html; charset=utf-8: '<!DOCTYPE html> <html><head><title>Guest WiFi" \
        in str(err)
    assert KEY not in str(err) and transport.closed == 1


async def test_a_portal_page_echoing_the_key_is_masked() -> None:
    page = b"<html><body>Blocked request with Authorization: Bearer " + KEY.encode() + b"</body></html>"
    transport = ReplayTransport(Reply(200, {"content-type": "text/html"}, body=page))
    with pytest.raises(ProviderError) as info:
        await collect(transport, headers=auth())
    assert KEY not in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize("headers", [{}, {"content-type": "text/plain"}, {"content-type": "application/octet-stream"}])
async def test_an_event_stream_without_its_content_type_is_still_streamed(headers: dict[str, str]) -> None:
    body = [b"\xef\xbb\xbf", b"da", b"ta: {\"a\": 1}\n\n", b": keep-alive\n\ndata: [DONE]\n\n"]
    events = await collect(ReplayTransport(Reply(200, headers, chunks=body)))
    assert [e.data for e in events] == ['{"a": 1}', "[DONE]"]


async def test_an_empty_200_without_a_stream_is_unexpected() -> None:
    with pytest.raises(ProviderError) as info:
        await collect(ReplayTransport(Reply(200, {})))
    assert info.value.failure_class is FailureClass.UNKNOWN and "(empty body)" in str(info.value)


async def test_an_anthropic_error_object_with_200_is_classified_from_its_body() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_9"}
    with pytest.raises(ProviderError) as info:
        await collect(ReplayTransport(Reply(200, json=body)))
    assert info.value.failure_class is FailureClass.OVERLOADED and info.value.request_id == "req_9"


async def test_post_json_html_page_and_error_object_with_200() -> None:
    err_body = {"error": {"message": "too long", "type": "invalid_request_error", "code": "context_length_exceeded"}}
    transport = ReplayTransport(Reply(200, {"content-type": "text/html"}, body=PORTAL), Reply(200, json=err_body))
    async with make_client(transport=transport) as client:
        with pytest.raises(ProviderError) as html:
            await post_json(client, URL, provider="p", json={})
        with pytest.raises(ProviderError) as error_object:
            await post_json(client, URL, provider="p", json={})
    assert html.value.failure_class is FailureClass.UNKNOWN
    assert "expected a JSON object, got text/html: '<!DOCTYPE html>" in str(html.value)
    assert error_object.value.failure_class is FailureClass.CONTEXT_LENGTH
