"""Configuration models of the resilience middlewares (light: pydantic, seamkit.errors and
seamkit._slots only).

Failure classes are the values of :class:`seamkit.errors.FailureClass`. Transient ones
(``rate_limited``, ``overloaded``, ``server_error``, ``timeout``) are the defaults everywhere.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator
from seamkit.errors import FailureClass
from seamkit.plugin import ComponentSlot, NestedSlot

__all__ = [
    "TRANSIENT_CLASSES",
    "PERMANENT_CLASSES",
    "RetryConfig",
    "CircuitBreakerConfig",
    "FallbackSlot",
    "FallbackConfig",
]

#: The transient failure classes, in declaration order (the default of every ``on``/``retry_on``).
TRANSIENT_CLASSES: tuple[FailureClass, ...] = tuple(c for c in FailureClass if c.transient)
#: The permanent failure classes (``unknown`` included): retrying the same request cannot help.
PERMANENT_CLASSES: tuple[FailureClass, ...] = tuple(c for c in FailureClass if not c.transient)


def _dedupe(classes: list[FailureClass]) -> list[FailureClass]:
    return list(dict.fromkeys(classes))


class RetryConfig(BaseModel):
    """``retry``: retries transient provider failures of a chat call.

    Delay before try ``n + 1`` (after failed try ``n``): the server's requested delay exactly when
    it sent one (``Retry-After`` seconds, or an HTTP date measured against the run's clock; refused,
    and the error raised, when above ``max_retry_after_s``); otherwise full jitter,
    ``uniform(0, min(max_delay_s, base_delay_s * 2 ** (n - 1)))`` seconds. A response header
    ``x-should-retry: false`` stops retrying whatever the class; ``x-should-retry: true`` allows a
    retry of a class seamkit considers permanent.
    """

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=3, ge=1, le=100,
                              description="Total tries, the first one included (1: never retry).")
    base_delay_s: float = Field(default=0.5, ge=0, allow_inf_nan=False,
                                description="Backoff base in seconds: the cap of the first retry's delay.")
    max_delay_s: float = Field(default=30.0, ge=0, allow_inf_nan=False,
                               description="Upper bound in seconds of any backoff delay (not of retry_after).")
    max_retry_after_s: float = Field(default=60.0, ge=0, allow_inf_nan=False,
                                     description="Longest server-requested wait (Retry-After) honoured, in seconds; "
                                                 "a longer one makes the middleware give up and raise.")
    retry_on: list[FailureClass] = Field(
        default_factory=lambda: list(TRANSIENT_CLASSES),
        description="Failure classes retried; only transient ones are allowed "
                    "(rate_limited, overloaded, server_error, timeout).",
    )
    seed: int | None = Field(default=None, description="Seed of the jitter's random generator (None: from the OS).")

    @field_validator("retry_on")
    @classmethod
    def _only_transient(cls, v: list[FailureClass]) -> list[FailureClass]:
        bad = [c.value for c in v if not c.transient]
        if bad:
            raise ValueError(
                f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} permanent: retrying the same request "
                f"cannot succeed; retry_on takes only transient classes "
                f"({', '.join(c.value for c in TRANSIENT_CLASSES)})"
            )
        return _dedupe(v)


class CircuitBreakerConfig(BaseModel):
    """``circuit_breaker``: one breaker per ``provider:model``.

    Closed: calls pass; ``failure_threshold`` consecutive failures of the ``on`` classes open it.
    Open: calls are refused at once (``ProviderError`` class ``overloaded``, code ``circuit_open``,
    ``retry_after`` = seconds until half-open). After ``reset_after_s`` it is half-open: one trial
    call at a time passes; its success closes the breaker, its failure (an ``on`` class) opens it
    again for another ``reset_after_s``.
    """

    model_config = ConfigDict(extra="forbid")

    failure_threshold: int = Field(default=5, ge=1,
                                   description="Consecutive failures (of the `on` classes) that open it.")
    reset_after_s: float = Field(default=30.0, gt=0, allow_inf_nan=False,
                                 description="Seconds the breaker stays open before a trial call is let through.")
    on: list[FailureClass] = Field(
        default_factory=lambda: list(TRANSIENT_CLASSES),
        description="Failure classes counted as failures; other errors neither count nor reset the count.",
    )

    @field_validator("on")
    @classmethod
    def _dedupe_on(cls, v: list[FailureClass]) -> list[FailureClass]:
        if not v:
            raise ValueError("at least one failure class is needed")
        return _dedupe(v)


FallbackSlot = NestedSlot
"""One fallback model: ``use`` (a provider component name), optional ``from`` and that provider's own parameters."""


class FallbackConfig(BaseModel):
    """``fallback``: when the model fails with an ``on`` class before its first token, the same
    request goes to the ``to`` models in order; the first that answers wins.

    Each ``to`` entry is a provider slot (:class:`~seamkit._slots.ComponentSlot`): loading a
    composition resolves its name and validates its parameters with the provider's config model,
    located at ``agent.middlewares[i].to[j]``, before anything is built."""

    model_config = ConfigDict(extra="forbid")

    to: list[Annotated[FallbackSlot, ComponentSlot("provider")]] = Field(..., min_length=1,
                                   description="Fallback models in order: [{use: <provider>, ...params}].")
    on: list[FailureClass] = Field(
        default_factory=lambda: list(TRANSIENT_CLASSES),
        description="Failure classes that move on to the next model (default: the transient ones).",
    )

    @field_validator("on")
    @classmethod
    def _dedupe_on(cls, v: list[FailureClass]) -> list[FailureClass]:
        if not v:
            raise ValueError("at least one failure class is needed")
        return _dedupe(v)
