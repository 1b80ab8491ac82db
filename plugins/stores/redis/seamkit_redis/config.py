"""Configuration of the ``redis`` store (imports only pydantic)."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

__all__ = ["RedisConfig"]

_SCHEMES = ("redis", "rediss", "unix")


class RedisConfig(BaseModel):
    """Parameters of the ``redis`` store.

    ``url`` is a secret (it may carry a password): it is never shown in reprs, errors or logs,
    and validation errors never echo the input.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    url: SecretStr = Field(
        default=SecretStr("redis://127.0.0.1:6379/0"),
        description=(
            "Redis URL: redis://[[user]:password@]host[:port][/db], rediss:// for TLS or "
            "unix:///path/to.sock?db=0. Treated as a secret (masked everywhere); "
            "use ${REDIS_URL} in YAML."
        ),
    )
    prefix: str = Field(
        default="seamkit",
        min_length=1,
        max_length=200,
        description="Prefix of every key this store writes (<prefix>:kv:..., <prefix>:cp:...); "
        "stores with different prefixes on one server are independent.",
    )
    socket_timeout: float = Field(
        default=5.0, gt=0, le=3600, description="Seconds to wait for a reply to one command before failing."
    )
    socket_connect_timeout: float = Field(
        default=5.0, gt=0, le=3600, description="Seconds to wait for a TCP/unix connection to open."
    )
    health_check_interval: int = Field(
        default=30,
        ge=0,
        le=86400,
        description="Seconds a pooled connection may sit idle before it is PINGed before use (0: never).",
    )
    retries: int = Field(
        default=3,
        ge=0,
        le=20,
        description="Retries (exponential backoff) of a command that failed with a connection error or timeout.",
    )
    max_connections: int = Field(
        default=64, ge=1, le=10000, description="Most connections the store's pool opens at once."
    )

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: SecretStr) -> SecretStr:
        raw = value.get_secret_value()
        try:
            scheme = urlsplit(raw).scheme.lower()
        except ValueError:
            raise ValueError("url is not a valid URL") from None
        if scheme not in _SCHEMES:
            raise ValueError("url must start with redis://, rediss:// or unix://")
        return value

    @field_validator("prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        if any(c.isspace() for c in value) or "{" in value or "}" in value:
            raise ValueError("prefix must not contain whitespace or braces")
        return value
