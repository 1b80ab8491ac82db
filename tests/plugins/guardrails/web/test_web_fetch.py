"""The guarded fetcher over real httpx/httpcore: refused URLs open no connection, redirects are
re-checked hop by hop against a real local server, the name is resolved once and the connection
pinned to the checked address (Host header and TLS SNI stay the name), and the size,
decompression-bomb, timeout and content-type limits."""

from __future__ import annotations

import time

import pytest
from egress_net import BOMB_BYTES, PRIVATE, PUBLIC, RecordingBackend, StubResolver, canned, local_server
from seamkit_guardrails_web.config import FetchConfig
from seamkit_guardrails_web.errors import EgressRefused, FetchFailed
from seamkit_guardrails_web.fetch_tool import build_fetch_tool, fetch_tool
from seamkit_guardrails_web.fetcher import GuardedFetcher
from seamkit_guardrails_web.pinning import PinnedBackend
from seamkit_guardrails_web.urls import check_url, host_address, policy_from
from url_corpus import ALLOWED, REFUSED

LOCAL = FetchConfig(egress_allow=["127.0.0.1"], allow_networks=["127.0.0.0/8"], timeout=10)


def _fetcher(config: FetchConfig = LOCAL, **kw: object) -> GuardedFetcher:
    return GuardedFetcher(policy_from(config), config, **kw)  # type: ignore[arg-type]


# -- (a) the corpus, both ways, through a backend that records connection attempts ----------------------


@pytest.mark.parametrize(("url", "category"), REFUSED, ids=[u for u, _ in REFUSED])
async def test_a_refused_url_opens_no_connection(url: str, category: str) -> None:
    backend = RecordingBackend([canned()])
    resolver = StubResolver([PUBLIC])
    fetcher = GuardedFetcher(policy_from(FetchConfig()), resolver=resolver, network_backend=backend)
    with pytest.raises(EgressRefused) as info:
        await fetcher.fetch(url)
    assert info.value.category == category
    assert backend.connects == [] and backend.written == []
    assert resolver.queries == []  # refused before any DNS


@pytest.mark.parametrize("url", ALLOWED)
async def test_an_allowed_url_connects_only_to_its_checked_address(url: str) -> None:
    backend = RecordingBackend([canned(body=b"public page")])
    resolver = StubResolver([PUBLIC])
    fetcher = GuardedFetcher(policy_from(FetchConfig()), resolver=resolver, network_backend=backend)
    result = await fetcher.fetch_result(url)
    parsed = check_url(url)
    host = parsed.raw_host.decode("ascii")
    literal = host_address(host)
    expected = str(literal) if literal is not None else PUBLIC
    assert backend.connects == [(expected, parsed.port or {"http": 80, "https": 443}[parsed.scheme])]
    assert resolver.queries == ([] if literal is not None else [host])
    assert result.text == "public page" and result.status == 200
    if parsed.scheme == "https":
        assert backend.tls == [host]


# -- (b) redirects re-checked against a real local server ---------------------------------------------------


@pytest.mark.parametrize(("target", "category"), [
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://10.0.0.5/", "private"),
    ("file:///etc/passwd", "scheme"),
    ("http://[::ffff:169.254.169.254]/latest/meta-data/", "metadata"),
    ("http://0xa9fea9fe/latest/meta-data/", "metadata"),  # 169.254.169.254 in hex
    ("http://0x0a.5/", "private"),  # 10.0.0.5, short hex form
])
async def test_a_redirect_to_a_blocked_address_is_refused_at_the_hop(target: str, category: str) -> None:
    backend = RecordingBackend()
    with local_server() as srv:
        fetcher = _fetcher(network_backend=backend)
        with pytest.raises(EgressRefused) as info:
            await fetcher.fetch(srv.url(f"/redirect?to={target}"))
        assert info.value.category == category
        assert "redirect from" in info.value.reason
        assert backend.connects == [("127.0.0.1", srv.port)]  # the allowed server only
        assert [s["path"] for s in srv.seen] == [f"/redirect?to={target}"]


async def test_redirects_past_the_cap_are_refused() -> None:
    backend = RecordingBackend()
    with local_server() as srv:
        fetcher = _fetcher(LOCAL.model_copy(update={"max_redirects": 3}), network_backend=backend)
        with pytest.raises(EgressRefused) as info:
            await fetcher.fetch(srv.url("/chain/5"))
        assert info.value.category == "redirect"
        assert [s["path"] for s in srv.seen] == ["/chain/5", "/chain/4", "/chain/3", "/chain/2"]
        assert len(backend.connects) == 4
        ok = await fetcher.fetch_result(srv.url("/chain/3"))  # exactly at the cap: followed
        assert ok.text == "end of chain" and len(ok.redirects) == 3


async def test_a_redirect_on_the_allowed_server_is_followed_and_the_final_url_reported() -> None:
    with local_server() as srv:
        for status in (301, 302, 303, 307, 308):
            result = await _fetcher().fetch_result(srv.url(f"/redirect?status={status}&to=/page"))
            assert result.final_url == srv.url("/page")
            assert result.url == srv.url(f"/redirect?status={status}&to=/page")
            assert result.redirects == (srv.url("/page"),)
            assert result.status == 200 and result.content_type == "text/html"
            assert "Grüße, ünïcödé." in result.text


# -- (c) pinning: one resolution, the connection goes to the checked address ------------------------------


async def test_pinning_connects_to_the_checked_address_with_the_name_as_host_and_sni() -> None:
    resolver = StubResolver([PUBLIC], [PRIVATE])  # public first, private on any later query
    backend = RecordingBackend([
        canned(302, b"", {"Location": "/next"}),
        canned(200, b"pinned page"),
    ])
    fetcher = GuardedFetcher(policy_from(FetchConfig()), resolver=resolver, network_backend=backend)
    result = await fetcher.fetch_result("https://www.example.com/start")
    assert result.text == "pinned page" and result.final_url == "https://www.example.com/next"
    assert resolver.queries == ["www.example.com"]  # once, although the redirect came back to it
    assert backend.connects == [(PUBLIC, 443), (PUBLIC, 443)]
    assert backend.tls == ["www.example.com", "www.example.com"]  # SNI and certificate name
    assert backend.requests.count(b"\r\nHost: www.example.com\r\n") == 2


async def test_pinning_over_a_real_socket_never_asks_twice() -> None:
    resolver = StubResolver(["127.0.0.1"], [PRIVATE])
    backend = RecordingBackend()
    config = FetchConfig(allow_networks=["127.0.0.0/8"])
    with local_server() as srv:
        fetcher = GuardedFetcher(policy_from(config), config, resolver=resolver, network_backend=backend)
        url = f"http://www.example.com:{srv.port}/redirect?to=/host"
        result = await fetcher.fetch_result(url)
        assert result.text == f"www.example.com:{srv.port}"  # the Host header the server received
        assert resolver.queries == ["www.example.com"]
        assert backend.connects == [("127.0.0.1", srv.port), ("127.0.0.1", srv.port)]
        assert [s["host"] for s in srv.seen] == [f"www.example.com:{srv.port}"] * 2


async def test_a_name_answering_public_and_private_addresses_is_refused() -> None:
    backend = RecordingBackend([canned()])
    fetcher = GuardedFetcher(policy_from(FetchConfig()), resolver=StubResolver([PUBLIC, PRIVATE]),
                             network_backend=backend)
    with pytest.raises(EgressRefused) as info:
        await fetcher.fetch("http://www.example.com/")
    assert info.value.category == "private" and backend.connects == []


async def test_a_redirect_to_a_name_resolving_privately_is_refused_without_connecting() -> None:
    resolver = StubResolver([PUBLIC], [PRIVATE])
    backend = RecordingBackend([canned(302, b"", {"Location": "http://intranet.example.net/"})])
    fetcher = GuardedFetcher(policy_from(FetchConfig()), resolver=resolver, network_backend=backend)
    with pytest.raises(EgressRefused) as info:
        await fetcher.fetch("http://www.example.com/")
    assert info.value.category == "private"
    assert resolver.queries == ["www.example.com", "intranet.example.net"]
    assert backend.connects == [(PUBLIC, 80)]


async def test_the_backend_refuses_a_host_it_holds_no_pin_for() -> None:
    backend = RecordingBackend([canned()])
    pinned = PinnedBackend(backend)
    with pytest.raises(EgressRefused) as info:
        await pinned.connect_tcp("www.example.com", 80)
    assert info.value.category == "resolution" and backend.connects == []


# -- (d) limits ---------------------------------------------------------------------------------------------------


async def test_the_body_is_truncated_at_max_bytes() -> None:
    with local_server() as srv:
        result = await _fetcher(LOCAL.model_copy(update={"max_bytes": 1000})).fetch_result(srv.url("/big"))
    assert result.truncated and result.text == "a" * 1000 and result.bytes_read == 1000


async def test_a_decompression_bomb_is_refused_before_it_inflates() -> None:
    with local_server() as srv:
        fetcher = _fetcher(LOCAL.model_copy(update={"max_bytes": 50_000_000}))
        with pytest.raises(FetchFailed) as info:
            await fetcher.fetch(srv.url("/bomb"))
    assert info.value.category == "decompression_bomb"
    assert str(BOMB_BYTES) not in info.value.reason


@pytest.mark.parametrize("max_bytes", [None, 10_000, 200_000, 2_000_000, 19_999_999])
async def test_a_bomb_is_refused_not_returned_truncated_at_max_bytes(max_bytes: int | None) -> None:
    # a 1000:1 body against the default ratio (100): the ratio (per compressed byte consumed) is
    # checked before the max_bytes cap, so the cap cannot hide it (None: the default max_bytes)
    config = LOCAL if max_bytes is None else LOCAL.model_copy(update={"max_bytes": max_bytes})
    assert config.max_compression_ratio == 100
    with local_server() as srv:
        with pytest.raises(FetchFailed) as info:
            await _fetcher(config).fetch_result(srv.url("/bomb"))
    assert info.value.category == "decompression_bomb"


async def test_a_bomb_under_max_bytes_stops_at_max_bytes() -> None:
    with local_server() as srv:
        fetcher = _fetcher(LOCAL.model_copy(update={"max_bytes": 5000, "max_compression_ratio": 10_000}))
        result = await fetcher.fetch_result(srv.url("/bomb"))
    assert result.truncated and result.bytes_read == 5000


async def test_gzip_within_the_ratio_is_decoded() -> None:
    with local_server() as srv:
        result = await _fetcher().fetch_result(srv.url("/gzip"))
    assert result.text.count("Grüße, ünïcödé.") == 3 and not result.truncated


async def test_the_overall_timeout_ends_a_slow_fetch() -> None:
    with local_server() as srv:
        t0 = time.monotonic()
        with pytest.raises(FetchFailed) as info:
            await _fetcher().fetch(srv.url("/slow?s=3"), timeout=0.5)
        assert time.monotonic() - t0 < 2
    assert info.value.category == "timeout"


async def test_a_content_type_that_is_not_text_is_refused() -> None:
    with local_server() as srv:
        with pytest.raises(FetchFailed) as info:
            await _fetcher().fetch(srv.url("/binary"))
        assert info.value.category == "content_type" and "image/png" in str(info.value)
        assert (await _fetcher().fetch_result(srv.url("/json"))).text == '{"ok": true}'  # application/*+json


async def test_the_charset_of_the_header_decodes_the_text_and_an_error_status_is_a_result() -> None:
    with local_server() as srv:
        result = await _fetcher().fetch_result(srv.url("/latin1"))
        missing = await _fetcher().fetch_result(srv.url("/missing"))
    assert result.text == "café" and result.charset == "iso-8859-1"
    assert missing.status == 404 and missing.text == "not found" and missing.charset == "utf-8"


@pytest.mark.parametrize(
    ("charset", "body", "text", "used"),
    [
        ("utf-7", b"+ADw-script+AD4-alert(1)+ADw-/script+AD4-", "+ADw-script+AD4-alert(1)+ADw-/script+AD4-", "utf-8"),
        ("UTF-7", b"a+ACI-b", "a+ACI-b", "utf-8"),
        ("hz-gb-2312", b"~{<:Ky2;S{#,NpJ)l6HK!#~}", "~{<:Ky2;S{#,NpJ)l6HK!#~}", "utf-8"),
        ("iso-2022-kr", b"\x1b$)C\x0e!!\x0fok", "\x1b$)C\x0e!!\x0fok", "utf-8"),
        ("unicode_escape", b"\\u003cscript\\u003e", "\\u003cscript\\u003e", "utf-8"),
        ("cp037", b"hello", "hello", "utf-8"),
        ("utf-16", b"<\x00b\x00>\x00", "<\x00b\x00>\x00", "utf-8"),
        ("rot13", b"uryyb", "uryyb", "utf-8"),
        ("windows-1252", "caf\u00e9 \u20ac".encode("cp1252"), "caf\u00e9 \u20ac", "windows-1252"),
        ("Shift_JIS", "\u65e5\u672c<b>".encode("shift_jis"), "\u65e5\u672c<b>", "shift_jis"),
        ("utf-7", "\ufeff<b>".encode("utf-16-le"), "<b>", "utf-16-le"),  # a byte-order mark decides
    ],
)
async def test_a_charset_in_which_ascii_reads_differently_is_ignored(
    charset: str, body: bytes, text: str, used: str
) -> None:
    with local_server() as srv:
        result = await _fetcher().fetch_result(srv.url(f"/raw?hex={body.hex()}&ctype=text/html;charset={charset}"))
    assert result.text == text and result.charset == used
    assert "<script>" not in result.text


@pytest.mark.parametrize(("scheme", "category"), [("ftp", "scheme"), ("http", "userinfo")])
async def test_a_redirect_to_a_url_with_credentials_never_shows_the_password(scheme: str, category: str) -> None:
    with local_server() as srv:
        with pytest.raises(EgressRefused) as info:
            await _fetcher().fetch(srv.url(f"/redirect-with-credentials?scheme={scheme}"))
    assert info.value.category == category
    assert "s3cret" not in str(info.value) and "s3cret" not in info.value.url


# -- the fetch tool --------------------------------------------------------------------------------------------


def test_the_fetch_tool_is_read_only_and_declares_its_url_argument() -> None:
    tool = build_fetch_tool(LOCAL)
    assert tool.schema.name == "fetch" and tool.schema.side_effecting is False
    assert tool.schema.parameters["properties"]["url"]["format"] == "uri"


async def test_the_fetch_tool_reports_final_url_status_type_and_truncation() -> None:
    from seamkit.testing import make_test_ctx

    with local_server() as srv:
        tool = fetch_tool(_fetcher(LOCAL.model_copy(update={"max_bytes": 40})))
        text = await tool.invoke(tool.validate({"url": srv.url("/redirect?to=/page")}), make_test_ctx())
    head, _, body = text.partition("\n\n")
    assert f"URL: {srv.url('/page')}" in head and "Status: 200" in head and "Content-Type: text/html" in head
    assert "Redirected from" in head
    assert "[truncated: the page is longer than 40 bytes" in body


async def test_the_default_fetch_tool_puts_a_model_context_sized_page_into_the_result() -> None:
    # a 1 MB page through the tool as composed by default: what reaches the model is bounded by
    # the default max_bytes (sized for a context window), not the page
    from seamkit.testing import make_test_ctx

    with local_server() as srv:
        tool = build_fetch_tool(FetchConfig(egress_allow=["127.0.0.1"], allow_networks=["127.0.0.0/8"]))
        text = await tool.invoke(tool.validate({"url": srv.url("/big")}), make_test_ctx())
    page, _, notice = text.partition("\n\n")[2].rpartition("\n\n")
    assert set(page) == {"a"} and len(page) <= 200_000 and notice.startswith("[truncated: the page is longer than")


def test_an_inert_fetcher_cannot_be_built() -> None:
    with pytest.raises(TypeError, match="inert security control"):
        GuardedFetcher(None)


# -- the system resolver ------------------------------------------------------------------------------------


async def test_the_system_resolver_reads_getaddrinfo_once_per_query_without_caching() -> None:
    import asyncio
    import ipaddress
    import socket

    from seamkit_guardrails_web.resolver import SystemResolver

    loop = asyncio.get_running_loop()
    calls: list[tuple[object, ...]] = []

    async def getaddrinfo(host: str, port: object, **kw: object) -> list[tuple[object, ...]]:
        calls.append((host, port, kw))
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2606:4700::1", 0, 0, 0)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, 0)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, 0))]

    loop.getaddrinfo = getaddrinfo  # type: ignore[method-assign]
    try:
        resolver = SystemResolver()
        first = await resolver.resolve("www.example.com")
        second = await resolver.resolve("www.example.com")
    finally:
        del loop.getaddrinfo
    assert first == second == [ipaddress.ip_address("2606:4700::1"), ipaddress.ip_address(PUBLIC)]
    assert [c[0] for c in calls] == ["www.example.com", "www.example.com"]
    assert calls[0][2] == {"type": socket.SOCK_STREAM, "proto": socket.IPPROTO_TCP}


async def test_the_system_resolver_answers_localhost_and_refuses_a_name_that_does_not_resolve() -> None:
    from seamkit_guardrails_web.resolver import SystemResolver

    resolver = SystemResolver(timeout=5)
    assert all(a.is_loopback for a in await resolver.resolve("localhost"))
    with pytest.raises(EgressRefused) as info:
        await resolver.resolve("no-such-host.invalid")  # RFC 6761 section 6.4: never resolves
    assert info.value.category == "resolution"
