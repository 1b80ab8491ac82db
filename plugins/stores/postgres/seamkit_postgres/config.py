"""Configuration of the ``postgres`` store (imports only pydantic: cheap to validate a composition)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

__all__ = ["PostgresConfig"]


class PostgresConfig(BaseModel):
    """Where and how the ``postgres`` store connects. The DSN is a secret: it never appears in a
    repr, an error or a log (use ``dsn.get_secret_value()`` to read it)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    dsn: SecretStr = Field(
        description="libpq connection string or URL, e.g. postgresql://user:password@host:5432/db (a secret)",
    )
    db_schema: str = Field(
        "seamkit",
        alias="schema",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$",
        description="PostgreSQL schema holding seamkit's tables (created by `seamkit stores setup`)",
    )
    min_size: int = Field(1, ge=0, le=1000, description="connections the pool keeps open")
    max_size: int = Field(10, ge=1, le=1000, description="most connections the pool opens")
    connect_timeout: float = Field(
        10.0,
        gt=0,
        le=600,
        description="seconds to wait for a connection (connecting or from the pool) before StoreUnavailable",
    )

    @model_validator(mode="after")
    def _sizes(self) -> PostgresConfig:
        if self.min_size > self.max_size:
            raise ValueError(f"min_size ({self.min_size}) must not exceed max_size ({self.max_size})")
        return self
