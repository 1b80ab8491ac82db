"""Configuration models of the egress components (light: pydantic only)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EgressConfig", "FetchConfig"]


class EgressConfig(BaseModel):
    """The egress policy, shared by the ``egress`` guardrail, the ``egress`` middleware and the
    ``fetch`` tool."""

    model_config = ConfigDict(extra="forbid")

    egress_allow: list[str] = Field(
        default_factory=list,
        description="Host suffixes allowed out (dot-boundary: 'example.com' allows 'www.example.com', not "
        "'evilexample.com'); empty: any public host",
    )
    allow_networks: list[str] = Field(
        default_factory=list,
        description="Address ranges (CIDR) allowed although not public, e.g. 127.0.0.0/8 for a local test "
        "server; cloud metadata addresses stay refused",
    )
    ports: list[int] | None = Field(
        default=None, description="Ports allowed out; absent: any port but the Fetch standard's bad ports"
    )
    url_arguments: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Tool name -> names of its arguments that hold URLs, for tools whose parameters schema "
        "does not declare them (format: uri)",
    )


class FetchConfig(EgressConfig):
    """The ``fetch`` tool: the egress policy plus the fetch's own limits."""

    timeout: float = Field(default=20.0, gt=0, le=300, description="Seconds for the whole fetch, redirects included")
    max_bytes: int = Field(default=2_000_000, ge=1, description="Most bytes of body read (after decompression)")
    max_redirects: int = Field(default=5, ge=0, le=20, description="Redirect hops followed, each checked again")
    max_compression_ratio: int = Field(
        default=100, ge=1, description="Most decompressed bytes per compressed byte (decompression-bomb cap)"
    )
    text_types: list[str] = Field(
        default_factory=lambda: ["text/*", "application/json", "application/xml", "application/xhtml+xml",
                                 "application/*+json", "application/*+xml"],
        description="Content types returned as text; anything else is refused",
    )
    user_agent: str = Field(default="seamkit-fetch/0.1", description="User-Agent header sent")
