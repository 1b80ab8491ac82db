"""The egress errors."""

from __future__ import annotations

from seamkit.errors import SeamkitError, ToolError

__all__ = ["EgressRefused", "FetchFailed"]


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
