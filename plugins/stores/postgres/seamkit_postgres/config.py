"""Configuration of the ``postgres`` store (imports only pydantic: cheap to import; validating a
``dsn`` imports psycopg's connection-string parser, once)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from seamkit_postgres._dsn import conninfo_problem

__all__ = ["PostgresConfig"]


class PostgresConfig(BaseModel):
    """Where and how the ``postgres`` store connects. The DSN is a secret: it never appears in a
    repr, an error or a log (use ``dsn.get_secret_value()`` to read it).

    A malformed ``dsn`` (bad percent-encoding, unknown option, unterminated quote...) fails
    validation with libpq's reason, the DSN's text and password never shown; whether the server
    can be reached is only known on first use."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True, hide_input_in_errors=True)

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

    @field_validator("dsn")
    @classmethod
    def _parsable(cls, dsn: SecretStr) -> SecretStr:
        text = dsn.get_secret_value()
        try:
            from psycopg import Error
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:  # pragma: no cover - psycopg is a dependency of this distribution
            return dsn
        try:
            conninfo_to_dict(text)
        except Error as exc:
            # never the DSN's text: only libpq's reason, its quoted pieces of the DSN hidden
            raise ValueError(
                f"dsn is not a valid PostgreSQL connection string: {conninfo_problem(exc, text)}"
            ) from None
        return dsn

    @model_validator(mode="after")
    def _sizes(self) -> PostgresConfig:
        if self.min_size > self.max_size:
            raise ValueError(f"min_size ({self.min_size}) must not exceed max_size ({self.max_size})")
        return self
