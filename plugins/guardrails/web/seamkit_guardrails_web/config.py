"""Configuration models of the egress components (light: pydantic only; the policy parsers of
:mod:`seamkit_guardrails_web.urls` are imported when a value is validated)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


# Each list item is validated by the parser policy_from compiles it with (one implementation), so a
# bad entry fails `seamkit validate` at its key and index rather than when the agent is built.
def _allow_entry(value: str) -> str:
    from seamkit_guardrails_web.urls import allow_entry  # lazy: httpx/idna only when a policy is given

    allow_entry(value)
    return value


def _allow_network(value: str) -> str:
    from seamkit_guardrails_web.urls import allow_network

    allow_network(value)
    return value


def _allow_port(value: int) -> int:
    from seamkit_guardrails_web.urls import allow_port

    return allow_port(value)


AllowEntry = Annotated[str, AfterValidator(_allow_entry)]
AllowNetwork = Annotated[str, AfterValidator(_allow_network)]
Port = Annotated[int, AfterValidator(_allow_port)]

__all__ = ["EgressConfig", "FetchConfig"]


class EgressConfig(BaseModel):
    """The egress policy, shared by the ``egress`` guardrail, the ``egress`` middleware and the
    ``fetch`` tool."""

    model_config = ConfigDict(extra="forbid")

    egress_allow: list[AllowEntry] = Field(
        default_factory=list,
        description="Host suffixes allowed out (dot-boundary: 'example.com' allows 'www.example.com', not "
        "'evilexample.com'), or IP addresses; not URLs. Empty: any public host",
    )
    allow_networks: list[AllowNetwork] = Field(
        default_factory=list,
        description="Address ranges (CIDR) allowed although not public, e.g. 127.0.0.0/8 for a local test "
        "server; cloud metadata addresses stay refused",
    )
    ports: list[Port] | None = Field(
        default=None, description="Ports allowed out (1..65535); absent: any port but the Fetch standard's bad ports"
    )
    url_arguments: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Tool name -> names of its arguments that hold URLs, for tools whose parameters schema "
        "does not declare them (format: uri)",
    )


class FetchConfig(EgressConfig):
    """The ``fetch`` tool: the egress policy plus the fetch's own limits. Of a compressed body,
    the compression ratio is checked first (a bomb is refused), then ``max_bytes`` (a long page
    is truncated): see :mod:`seamkit_guardrails_web.fetcher`, step 4."""

    timeout: float = Field(default=20.0, gt=0, le=300, description="Seconds for the whole fetch, redirects included")
    max_bytes: int = Field(
        default=200_000, ge=1,
        description="Most body bytes returned (after decompression); past it the page is cut there, the rest not "
        "read, and the result says it was truncated. The text goes into the model's context: 200,000 bytes is "
        "about 50,000 tokens of English, already a large share of a context window, so keep it small",
    )
    max_redirects: int = Field(default=5, ge=0, le=20, description="Redirect hops followed, each checked again")
    max_compression_ratio: int = Field(
        default=100, ge=1,
        description="Most decompressed bytes per compressed byte consumed (gzip/deflate), checked after every "
        "decompression step before max_bytes: a body past it is refused as a decompression bomb (FetchFailed "
        "'decompression_bomb'), not returned truncated",
    )
    text_types: list[str] = Field(
        default_factory=lambda: ["text/*", "application/json", "application/xml", "application/xhtml+xml",
                                 "application/*+json", "application/*+xml"],
        description="Content types returned as text; anything else is refused",
    )
    user_agent: str = Field(default="seamkit-fetch/0.1", description="User-Agent header sent")
