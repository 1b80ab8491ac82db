"""The guarded fetcher: :class:`GuardedFetcher` (a :class:`~seamkit._ports.FetchPort`) and its
:class:`FetchResult`.

One fetch, in order:

1. the URL is checked without DNS (``check_url``: scheme, literal addresses, numeric spellings,
   allow-list, ports...);
2. its host name is resolved **once**, every address is checked (``check_address``; one refused
   address refuses the URL) and the name is *pinned* to those addresses
   (:mod:`seamkit_guardrails_web.pinning`): the connection goes to a checked address, with the
   name as ``Host`` header and TLS SNI;
3. a redirect (301, 302, 303, 307, 308 with a ``Location``) is not followed by httpx: its target is
   resolved against the current URL (RFC 9110 section 10.2.2; RFC 3986 section 5.2 through
   ``httpx.URL.join``) and goes through steps 1-2 again; a host already pinned in this fetch keeps
   its pin (never a second lookup). More than ``max_redirects`` hops is refused (``redirect``);
4. the body is streamed raw and decompressed here, with an output limit per step (httpx's own
   decoders inflate a whole network read at once, with no limit). After every step, first the
   ratio: more than ``max_compression_ratio`` decompressed bytes per compressed byte consumed so
   far (cumulative) is refused as a decompression bomb (``FetchFailed``, nothing returned); then
   the size: past ``max_bytes`` decompressed bytes the body is cut there, the rest not read, and
   the result says it was truncated. Because the ratio comes first, a bomb is refused, not
   returned truncated, once ``max_bytes`` is large enough for its ratio to show (a few kB: the
   first bytes of a gzip stream are headers);
5. only the content types in ``text_types`` are returned, decoded by :func:`decode_text`: a
   byte-order mark first, else the charset of the ``Content-Type`` header when it names an
   ASCII-compatible encoding, else UTF-8; bytes that do not decode are replaced (U+FFFD), never
   dropped silently. A charset in which ASCII bytes decode to other characters (UTF-7's
   ``+ADw-`` is ``<``) is ignored, not honoured. A ``<meta charset>`` inside HTML is not read.

Everything, resolution included, runs under one overall ``timeout``. Each fetch has its own
client, connection pool and pins: no cookie, connection or DNS answer outlives it.
"""

from __future__ import annotations

import asyncio
import codecs
import fnmatch
import functools
import ssl
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpcore
import httpx

from seamkit_guardrails_web import urls
from seamkit_guardrails_web.config import FetchConfig
from seamkit_guardrails_web.errors import EgressRefused, FetchFailed
from seamkit_guardrails_web.pinning import PinnedBackend, PinnedTransport
from seamkit_guardrails_web.preflight import EgressChecker, egress_checker, host_key
from seamkit_guardrails_web.resolver import Resolver

__all__ = ["FetchResult", "GuardedFetcher", "REDIRECT_STATUSES", "decode_text", "text_encoding"]

#: The statuses whose ``Location`` is followed (RFC 9110 sections 15.4.2-15.4.9; 300 and 304 are not
#: redirects to follow automatically).
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_READ_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One fetched page. ``url``: the URL asked for (as checked); ``final_url``: where the page
    came from after redirects; ``status``: its HTTP status; ``content_type``: its media type,
    lower case, without parameters; ``charset``: the encoding the text was decoded with;
    ``text``: the body as text (at most ``max_bytes`` bytes of it); ``truncated``: whether the
    body was longer than ``max_bytes`` (the rest was not read); ``bytes_read``: decompressed body
    bytes kept; ``redirects``: every hop's target URL, in order."""

    url: str
    final_url: str
    status: int
    content_type: str
    charset: str
    text: str
    truncated: bool
    bytes_read: int
    redirects: tuple[str, ...] = ()


# Every ASCII byte once (the backslash doubled: a lone "\\]" is an invalid escape), then the
# mechanisms by which ASCII bytes decode to *other* characters in some codec: UTF-7's base64 runs
# ("+ADw-" is "<"), HZ's "~{", ISO-2022's ESC and SO/SI shifts, Python's backslash escapes. A codec
# that decodes all of it to itself shows the model exactly the ASCII the bytes show anyone else.
_ASCII_PROBE = (bytes(range(0x5C)) + b"\\\\" + bytes(range(0x5D, 0x80))
                + b" +ADw-x+AD4- ~{!!~} \x1b$B!!\x1b(B \x1b$)C\x0e!!\x0f"
                b" \\u003c\\x3c\\074\\N{LESS-THAN SIGN}")
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF16_LE, "utf-16-le"))


@functools.cache  # keyed by codec name: a finite set, whatever labels servers send
def _ascii_compatible(codec: str) -> bool:
    try:
        return _ASCII_PROBE.decode(codec, errors="replace") == _ASCII_PROBE.decode("latin-1")
    except (LookupError, UnicodeError, ValueError, TypeError):  # not a text encoding (rot13, base64...)
        return False


def text_encoding(label: str | None) -> str:
    """The codec a body whose ``Content-Type`` says ``charset=label`` is decoded with: the label
    (stripped, lower case) when Python knows it and its codec is ASCII-compatible (every ASCII
    byte, and every sequence of them, decodes to itself), else ``"utf-8"`` (no label, an unknown
    label, or one that is not ASCII-compatible).

    Why: in UTF-7 ``+ADw-script+AD4-`` decodes to ``<script>``; ISO-2022-KR / -CN and HZ shift
    ASCII bytes into other characters with escape sequences, EBCDIC (``cp037``) and Python's
    ``unicode_escape`` read ASCII differently. Honouring such a label lets a server show the model
    text that no byte-level reading of the page shows. The WHATWG Encoding Standard
    (https://encoding.spec.whatwg.org/, section 4.2 "Names and labels") drops UTF-7 entirely (an
    unknown label, ignored as here) and maps ISO-2022-KR, ISO-2022-CN(-EXT) and HZ-GB-2312 to its
    "replacement" encoding, which never yields the page's text. Stricter than the standard here:
    ISO-2022-JP and a UTF-16 *label* are ignored too (a UTF-16 body with a byte-order mark is
    still read as UTF-16: :func:`decode_text`)."""
    name = (label or "").strip().lower()
    try:
        codec = codecs.lookup(name).name if name else ""
    except LookupError:
        return "utf-8"
    return name if codec and _ascii_compatible(codec) else "utf-8"


def decode_text(body: bytes, label: str | None) -> tuple[str, str]:
    """``body`` as text and the codec that decoded it: a byte-order mark (UTF-8, UTF-16BE,
    UTF-16LE) decides first and is dropped (WHATWG Encoding Standard, section 6 "decode": the BOM
    overrides the label), else :func:`text_encoding` of ``label``. Undecodable bytes become
    U+FFFD."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom):].decode(codec, errors="replace"), codec
    codec = text_encoding(label)
    return body.decode(codec, errors="replace"), codec


def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


class _Inflater:
    """Decodes one ``Content-Encoding`` (``identity``, ``gzip``, ``x-gzip``, ``deflate``: RFC 9110
    section 8.4.1) with a limit on the output of each step (``zlib`` ``max_length``). ``consumed``:
    compressed bytes the decoder has consumed so far (what a limited step left unread is not
    counted: the compression ratio is decoded output per byte *consumed*, not per byte received)."""

    def __init__(self, encoding: str, url: str) -> None:
        self.url = url
        self.encoded = encoding not in ("", "identity")
        # RFC 9110 8.4.1.2: "deflate" is the zlib format (RFC 1950); some servers send raw deflate
        # (RFC 1951) instead, tried when the zlib header does not parse (as httpx does)
        self._may_be_raw = encoding == "deflate"
        self._z: zlib._Decompress | None = None
        self.consumed = 0
        if encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj(zlib.MAX_WBITS)
        elif self.encoded:
            raise FetchFailed(url, f"content encoding {encoding!r} is not supported (gzip and deflate are)",
                              "content_encoding")

    def feed(self, data: bytes, limit: int) -> bytes:
        """At most ``limit`` (> 0) decoded bytes of ``data`` (and of what an earlier call left)."""
        if self._z is None:
            self.consumed += min(len(data), limit)
            return data[:limit]
        buf = self._z.unconsumed_tail + data
        try:
            out = self._z.decompress(buf, limit)
        except zlib.error as exc:
            if self._may_be_raw:  # only ever on the first step: nothing was consumed yet
                self._may_be_raw = False
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.feed(buf, limit)
            raise FetchFailed(self.url, f"the compressed body is corrupt ({exc})", "decoding") from None
        self._may_be_raw = False
        self.consumed += len(buf) - len(self._z.unconsumed_tail)
        return out

    def finish(self) -> bytes:
        """What the decoder still holds once the input ended (all input was consumed)."""
        if self._z is None:
            return b""
        try:
            return self._z.flush()
        except zlib.error as exc:
            raise FetchFailed(self.url, f"the compressed body is corrupt ({exc})", "decoding") from None


class GuardedFetcher:
    """Fetches ``http`` / ``https`` URLs as text under an egress policy (see the module doc).
    Implements :class:`~seamkit._ports.FetchPort`.

    ``policy``: an :class:`~seamkit_guardrails_web.urls.EgressPolicy` (``None`` raises
    ``TypeError``); ``config``: the limits (a :class:`~seamkit_guardrails_web.config.FetchConfig`;
    its egress fields are not read here: ``policy`` is the policy); ``resolver``: the
    :class:`~seamkit_guardrails_web.resolver.Resolver` (default: the system's);
    ``network_backend``: the httpcore backend that opens connections (default
    ``httpcore.AnyIOBackend()``; tests pass a recording one); ``ssl_context``: the TLS context
    (default: httpx's, certificates verified); ``checker``: an
    :class:`~seamkit_guardrails_web.preflight.EgressChecker` to use instead of one built from
    ``policy`` and ``resolver``."""

    def __init__(
        self,
        policy: urls.EgressPolicy | None,
        config: FetchConfig | None = None,
        *,
        resolver: Resolver | None = None,
        network_backend: httpcore.AsyncNetworkBackend | None = None,
        ssl_context: ssl.SSLContext | None = None,
        checker: EgressChecker | None = None,
    ) -> None:
        self.checker = egress_checker("GuardedFetcher", policy, resolver, checker)
        self.config = config if config is not None else FetchConfig()
        self._backend = network_backend
        self._ssl_context = ssl_context
        self._text_types = tuple(t.strip().lower() for t in self.config.text_types)

    def __repr__(self) -> str:
        c = self.config
        return (f"GuardedFetcher(timeout={c.timeout}, max_bytes={c.max_bytes}, max_redirects={c.max_redirects}, "
                f"max_compression_ratio={c.max_compression_ratio})")

    def _ssl(self) -> ssl.SSLContext:
        # made once: loading the CA bundle costs milliseconds, and the context is immutable in use
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context(trust_env=False)
        return self._ssl_context

    def is_text_type(self, media_type: str) -> bool:
        """Whether ``media_type`` (lower case, no parameters) matches one of ``text_types``
        (``fnmatch`` patterns such as ``text/*`` or ``application/*+json``)."""
        return any(fnmatch.fnmatchcase(media_type, pattern) for pattern in self._text_types)

    async def fetch(self, url: str, *, timeout: float | None = None) -> str:  # noqa: ASYNC109 - port contract
        """The page at ``url`` as text (the :class:`~seamkit._ports.FetchPort` contract); see
        :meth:`fetch_result` for what is raised."""
        return (await self.fetch_result(url, timeout=timeout)).text

    async def fetch_result(self, url: str, *, timeout: float | None = None) -> FetchResult:  # noqa: ASYNC109
        """Fetch ``url`` (``GET``), following checked redirects. ``timeout``: seconds for the whole
        fetch (default: the config's).

        Raises :class:`~seamkit_guardrails_web.errors.EgressRefused` when the URL, an address it
        resolves to or a redirect hop is refused (nothing is connected to), or past
        ``max_redirects`` hops (``redirect``); :class:`~seamkit_guardrails_web.errors.FetchFailed`
        for a timeout, a connection or protocol failure, a content type not in ``text_types``,
        an unsupported content encoding or a decompression bomb. An HTTP error status (4xx, 5xx)
        is a result, not an exception."""
        limit = timeout if timeout is not None else self.config.timeout
        if limit <= 0:
            raise ValueError("timeout must be positive (seconds)")
        at = [str(url)]  # the hop in progress, for the timeout's message
        try:
            async with asyncio.timeout(limit):
                return await self._fetch(str(url), limit, at)
        except TimeoutError:
            raise FetchFailed(at[0], f"no complete answer within {limit:g} s", "timeout") from None

    async def _fetch(self, url: str, limit: float, at: list[str]) -> FetchResult:
        checker = self.checker
        backend = PinnedBackend(self._backend)
        transport = PinnedTransport(backend, ssl_context=self._ssl())
        headers = {"User-Agent": self.config.user_agent, "Accept-Encoding": "gzip, deflate"}
        current = checker.url(url)
        first = str(current)
        redirects: list[str] = []
        async with httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False,
                                     timeout=httpx.Timeout(limit), headers=headers) as client:
            while True:
                at[0] = str(current)
                await self._pin(backend, current)
                try:
                    response = await client.send(client.build_request("GET", current), stream=True)
                except httpx.TimeoutException:
                    raise FetchFailed(str(current), f"no complete answer within {limit:g} s", "timeout") from None
                except (httpx.ConnectError, httpx.NetworkError) as exc:
                    raise FetchFailed(str(current), f"cannot connect ({exc})", "connect") from None
                except httpx.HTTPError as exc:
                    raise FetchFailed(str(current), f"the server broke HTTP ({exc})", "protocol") from None
                try:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_STATUSES and location:
                        if len(redirects) >= self.config.max_redirects:
                            raise EgressRefused(
                                first, f"more than {self.config.max_redirects} redirects (the next one, from "
                                       f"{current}, was not followed)", "redirect")
                        current = self._next_hop(current, location)
                        redirects.append(str(current))
                        continue
                    return await self._read(first, current, response, redirects)
                finally:
                    await response.aclose()

    async def _pin(self, backend: PinnedBackend, url: httpx.URL) -> None:
        key = host_key(url)
        pinned = backend.pinned(key)
        if pinned is None:
            backend.pin(key, await self.checker.addresses(url))
            return
        for address in pinned:  # the policy is the same, but a hop's URL is what a refusal names
            self.checker.check_address(address, self.checker.policy, url=str(url))

    def _next_hop(self, current: httpx.URL, location: str) -> httpx.URL:
        try:
            target = current.join(location.strip())
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            raise EgressRefused(urls.mask_userinfo(location), f"redirect from {current} to a malformed URL ({exc})",
                                "redirect") from None
        if target.scheme not in ("http", "https"):
            raise EgressRefused(urls.mask_userinfo(str(target)),
                                f"redirect from {current} to a {target.scheme or 'relative'}: URL "
                                "(only http and https are fetched)", "scheme")
        try:
            # the joined URL as text: check_url's string checks (control characters, backslashes,
            # userinfo) apply to a hop as to the first URL
            return self.checker.url(str(target))
        except EgressRefused as exc:
            raise EgressRefused(exc.url, f"redirect from {current} refused: {exc.reason}", exc.category) from None

    async def _read(self, first: str, url: httpx.URL, response: httpx.Response, redirects: list[str]) -> FetchResult:
        shown = str(url)
        header = response.headers.get("content-type", "")
        media_type = _media_type(header)
        if not media_type:
            raise FetchFailed(shown, "the server sent no Content-Type; only text types are returned", "content_type")
        if not self.is_text_type(media_type):
            raise FetchFailed(shown, f"content type {media_type!r} is not text (returned: "
                                     f"{', '.join(self._text_types)})", "content_type")
        encoding = response.headers.get("content-encoding", "").strip().lower()
        body, truncated = await self._body(shown, response.aiter_raw(_READ_CHUNK), _Inflater(encoding, shown))
        text, charset = decode_text(body, response.charset_encoding)
        return FetchResult(first, shown, response.status_code, media_type, charset, text, truncated, len(body),
                           tuple(redirects))

    async def _body(self, url: str, raw: AsyncIterator[bytes], inflater: _Inflater) -> tuple[bytes, bool]:
        """The decoded body, at most ``max_bytes`` of it, and whether it was truncated. For a
        compressed body the ratio (decoded bytes per compressed byte consumed, cumulative) is
        checked after every step *before* the ``max_bytes`` cap: a bomb is refused, never returned
        truncated, however small ``max_bytes`` is."""
        max_bytes = self.config.max_bytes
        ratio = self.config.max_compression_ratio
        out = bytearray()
        received = 0
        try:
            async for chunk in raw:
                received += len(chunk)
                # one byte past the caps, to tell "exactly at the cap" from "past it"
                cap = min(max_bytes, ratio * received) if inflater.encoded else max_bytes
                out += inflater.feed(chunk, cap - len(out) + 1)
                self._check_ratio(url, inflater, len(out))
                if len(out) > max_bytes:
                    return _cut_utf8(bytes(out[:max_bytes])), True
            out += inflater.finish()
            self._check_ratio(url, inflater, len(out))
            if len(out) > max_bytes:
                return _cut_utf8(bytes(out[:max_bytes])), True
        except httpx.TimeoutException:
            raise FetchFailed(url, "the body did not arrive in time", "timeout") from None
        except httpx.HTTPError as exc:
            raise FetchFailed(url, f"the body could not be read ({exc})", "protocol") from None
        return bytes(out), False

    def _check_ratio(self, url: str, inflater: _Inflater, decoded: int) -> None:
        ratio = self.config.max_compression_ratio
        if inflater.encoded and decoded > ratio * max(inflater.consumed, 1):
            raise FetchFailed(url, f"the body inflates more than {ratio}:1 (a decompression bomb: {decoded} bytes "
                                   f"from {inflater.consumed} compressed bytes)", "decompression_bomb")


def _cut_utf8(data: bytes) -> bytes:
    """``data`` without a trailing partial UTF-8 sequence (a cut in the middle of a character)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # a lead byte: keep it only if its sequence is complete
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data
