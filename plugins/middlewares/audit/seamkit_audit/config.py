"""Config model of the ``audit`` middleware (imports only pydantic and seamkit._slots)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from seamkit.plugin import ComponentSlot, NestedSlot

__all__ = ["AuditConfig", "StoreSlot"]

StoreSlot = NestedSlot
"""The store: ``use`` (a store component name), optional ``from`` and that store's own parameters."""


class AuditConfig(BaseModel):
    """Parameters of ``use: audit``.

    ``store``: a store slot (:class:`~seamkit._slots.ComponentSlot`), resolved and validated when the
    composition loads; absent: the run's checkpoint store (``ctx.effects.store``), and nothing is
    recorded (a warning is logged once) when the run has none. ``namespace``: prefix of the store
    keys (one list per run: ``<namespace>:<run id>``). ``digest_key``: a secret (write it as
    ``${AUDIT_DIGEST_KEY}``; at least 16 characters) that makes ``arguments_sha256`` an
    HMAC-SHA-256, so that whoever reads the store cannot confirm a guessed argument (a PIN, a short
    password) by hashing it; keep it the same across runs and processes to compare digests, and
    apart from the store.
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)  # an error never quotes digest_key

    store: Annotated[StoreSlot, ComponentSlot("store")] | None = Field(
        default=None,
        description="The store records are appended to: {use: <store>, ...params}. Default: the agent's "
        "checkpoint store (nothing is recorded with checkpoints: null)",
    )
    namespace: str = Field(default="audit", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$",
                           description="Prefix of the keys written to the store")
    digest_key: SecretStr | None = Field(
        default=None,
        description="Secret key (e.g. ${AUDIT_DIGEST_KEY}, 16+ characters) for an HMAC-SHA-256 of the arguments "
        "instead of a plain SHA-256, which anyone reading the store can confirm a guessed argument against",
    )

    @field_validator("digest_key")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("digest_key must be at least 16 characters (a random secret, e.g. from the environment)")
        return value
