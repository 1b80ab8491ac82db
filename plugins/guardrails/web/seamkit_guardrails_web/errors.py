"""The egress errors."""

from __future__ import annotations

from seamkit.errors import SeamkitError, ToolError

__all__ = ["EgressRefused", "FetchFailed", "ResolutionFailed"]


class EgressRefused(SeamkitError):
    """A URL (or an address it resolves or redirects to) is not allowed out. ``url``: the URL as
    given, with any userinfo replaced by ``***`` (never a password in a message); ``reason``: why,
    in words; ``category``: a stable token for the class of refusal (``scheme``, ``private``,
    ``loopback``, ``link_local``, ``metadata``, ``not_allowed``, ``port``, ``userinfo``,
    ``malformed``, ``redirect``, ``resolution``...)."""

    def __init__(self, url: str, reason: str, category: str) -> None:
        self.url = url
        self.reason = reason
        self.category = category
        super().__init__(f"egress refused for {url}: {reason}")


class ResolutionFailed(EgressRefused):
    """The host name could not be resolved at all: no DNS server answered, the name does not
    exist (NXDOMAIN), it has no IPv4/IPv6 address, or the resolver timed out. Not a policy
    decision about the name's addresses (those raise :class:`EgressRefused` with the address's
    category), so the ``egress`` guardrail lets it propagate (the host fails closed, unless the
    guard is advisory) instead of returning a block. An :class:`EgressRefused` with category
    ``resolution``, so the ``fetch`` tool and the ``egress`` middleware treat it as before."""

    def __init__(self, url: str, reason: str, category: str = "resolution") -> None:
        super().__init__(url, reason, "resolution")
        self.args = (f"name resolution failed for {url}: {reason}",)  # a failure, not a refusal


class FetchFailed(ToolError):
    """A fetch that was allowed out did not produce a page the model may read. ``url``: the URL
    (userinfo masked); ``reason``: why, in words; ``category``: ``timeout``, ``connect``,
    ``protocol`` (the server broke HTTP), ``content_type`` (not a text type the tool returns),
    ``content_encoding`` (an encoding it does not decode), ``decompression_bomb`` (the body
    inflates past ``max_compression_ratio``) or ``decoding`` (corrupt compressed data)."""

    def __init__(self, url: str, reason: str, category: str) -> None:
        self.url = url
        self.reason = reason
        self.category = category
        super().__init__(f"fetch of {url} failed: {reason}")
