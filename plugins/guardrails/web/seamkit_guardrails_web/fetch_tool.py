"""The ``fetch`` tool: a :class:`~seamkit_guardrails_web.fetcher.GuardedFetcher` as a read-only
tool a model can call."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from seamkit.plugin import FunctionTool, tool

from seamkit_guardrails_web.config import FetchConfig
from seamkit_guardrails_web.fetcher import FetchResult, GuardedFetcher
from seamkit_guardrails_web.urls import policy_from

__all__ = ["build_fetch_tool", "fetch_tool", "render_result"]


def render_result(result: FetchResult, max_bytes: int) -> str:
    """``result`` as the text the model reads: a short header (final URL, status, content type,
    the redirects followed), a blank line, the page text, and a notice when it was truncated."""
    lines = [f"URL: {result.final_url}", f"Status: {result.status}", f"Content-Type: {result.content_type}"]
    if result.redirects:
        lines.append(f"Redirected from: {result.url} ({len(result.redirects)} hop"
                     f"{'s' if len(result.redirects) != 1 else ''})")
    text = "\n".join(lines) + "\n\n" + result.text
    if result.truncated:
        text += f"\n\n[truncated: the page is longer than {max_bytes} bytes; only the first {max_bytes} are shown]"
    return text


def fetch_tool(fetcher: GuardedFetcher) -> FunctionTool:
    """The ``fetch`` tool over ``fetcher`` (not side-effecting: a ``GET``)."""
    max_bytes = fetcher.config.max_bytes

    @tool(side_effecting=False, name="fetch")
    async def fetch(url: Annotated[str, Field(json_schema_extra={"format": "uri"})]) -> str:
        """Fetch a web page (http or https) and return it as text, with its final URL, status and
        content type. Private, internal and cloud-metadata addresses are refused, as are hosts
        outside the configured allow-list; redirects are followed and checked; long pages are
        truncated; binary content is refused.

        Args:
            url: The absolute http(s) URL to fetch, e.g. "https://example.com/page".
        """
        return render_result(await fetcher.fetch_result(url), max_bytes)

    return fetch


def build_fetch_tool(config: FetchConfig | None = None) -> FunctionTool:
    """Factory of the ``fetch`` component: the tool for ``config`` (its egress policy and limits).
    Raises ``ValueError`` for a malformed policy (see
    :func:`~seamkit_guardrails_web.urls.policy_from`)."""
    cfg = config if config is not None else FetchConfig()
    return fetch_tool(GuardedFetcher(policy_from(cfg), cfg))
