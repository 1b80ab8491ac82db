"""``Binding`` (which provider component and model a call goes to), ``CredentialRef`` (a secret
the host resolves at dispatch) and ``CallLimits``.

Nothing here imports pydantic or the plugin registry; a :class:`CredentialRef` is resolved only by
:func:`seamkit.ask`, right before the provider of one call is built.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from seamkit._frozen import FrozenDict, freeze
from seamkit.errors import ConfigError, ConfigIssue

__all__ = ["Binding", "CallLimits", "CredentialRef", "is_secret_key", "masked_options"]

_PROVIDER = re.compile(r"[a-z][a-z0-9_-]*")  # fullmatch: `$` lets a final newline through
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_KEY = re.compile(r"(key|token|secret|password|passwd|auth|credential|cookie|header)", re.IGNORECASE)
MASK = "***"

CredentialSource = Callable[[], Any]
"""A no-argument callable returning the secret: ``str``, ``SecretStr``, ``None``, or an awaitable of one."""


def is_secret_key(key: str) -> bool:
    """``True`` when an option named ``key`` may hold a secret (``api_key``, ``auth_token``,
    ``headers``, ...): its value is masked in reprs, settings and JSON output."""
    return bool(_SECRET_KEY.search(key))


def masked_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the value of every secret-looking key (see :func:`is_secret_key`) replaced
    by ``"***"``."""
    return {k: (MASK if is_secret_key(k) else v) for k, v in options.items()}


@dataclass(frozen=True, slots=True)
class CredentialRef:
    """A credential the host resolves when it dispatches a call, never earlier.

    ``source``: a callable with no arguments returning the secret (``str``, a pydantic
    ``SecretStr``, or an awaitable of either); ``None`` or ``""`` means "not available" and fails
    the call with :class:`~seamkit.errors.ConfigError`. ``field``: the provider config field the
    value goes into (default ``api_key``), wrapped in ``SecretStr``. ``label``: what reprs, errors
    and JSON output show instead of the value (e.g. ``env:OPENAI_API_KEY``).

    The resolved value is never stored on this object, a :class:`Binding`, a
    :class:`~seamkit._calls.answer.Session` or an :class:`~seamkit._calls.answer.Answer`, and is
    masked (``***``) in every error message :func:`seamkit.ask` produces.
    """

    source: CredentialSource = field(repr=False, compare=False)
    label: str = "credential"
    field: str = "api_key"

    def __post_init__(self) -> None:
        if not callable(self.source):
            raise TypeError(
                f"CredentialRef source must be a callable returning the secret, got {type(self.source).__name__}"
            )
        if not _FIELD.fullmatch(self.field):
            raise ValueError(f"CredentialRef field must be a config field name, got {self.field!r}")

    def __repr__(self) -> str:
        return f"CredentialRef({self.label!r}, field={self.field!r})"

    __str__ = __repr__

    @classmethod
    def env(cls, name: str, *, field: str = "api_key") -> CredentialRef:
        """The environment variable ``name``, read at dispatch (label ``env:NAME``)."""
        if not name or "=" in name:
            raise ValueError(f"not an environment variable name: {name!r}")

        def read() -> str | None:
            return os.environ.get(name)

        return cls(read, f"env:{name}", field)

    async def resolve(self) -> str:
        """The secret as plain text (call only to hand it to the provider config). Raises
        :class:`~seamkit.errors.ConfigError` naming the label when it is missing or empty, or when
        the source raises (the source's message is not shown: it might hold the secret)."""
        try:
            value = self.source()
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            raise ConfigError([ConfigIssue(
                f"credential {self.label} could not be resolved ({type(exc).__name__})",
                f"binding.credential.{self.field}",
            )]) from None
        get = getattr(value, "get_secret_value", None)
        if callable(get):
            value = get()
        if value is None or value == "":
            hint = f": set the environment variable {self.label[4:]}" if self.label.startswith("env:") else ""
            raise ConfigError([ConfigIssue(f"credential {self.label} is not available{hint}",
                                           f"binding.credential.{self.field}")])
        if not isinstance(value, str):
            raise ConfigError([ConfigIssue(
                f"credential {self.label} must resolve to a str, got {type(value).__name__}",
                f"binding.credential.{self.field}",
            )])
        return value


@dataclass(frozen=True, slots=True)
class Binding:
    """Where a call goes: a provider component ``provider`` (its registered name, e.g.
    ``openai_chat``), a ``model`` id (``None``: the component's default), an optional
    ``credential`` (:class:`CredentialRef`; ``None``: the provider reads its own environment
    variables, as the official SDK does) and ``options``: the other parameters of the provider's
    config (``base_url``, ``reasoning_effort``, ``headers``...), deeply frozen.

    ``Binding.parse("openai_chat:gpt-4o-mini")`` splits on the first colon (so
    ``ollama_like:llama3:8b`` has model ``llama3:8b``). Options whose key looks secret (``api_key``,
    ``headers``...) are masked in the repr.

    Raises ``ValueError`` for a provider name that is not a component name (lower-case letters,
    digits, ``_`` and ``-``), an empty model, or ``options`` naming ``model`` (use ``model``) or the
    credential's field.
    """

    provider: str
    model: str | None = None
    credential: CredentialRef | None = None
    options: FrozenDict = field(default_factory=FrozenDict)

    def __post_init__(self) -> None:
        if not isinstance(self.provider, str) or not _PROVIDER.fullmatch(self.provider):
            raise ValueError(
                f"provider must be a component name (lower-case letters, digits, '_' and '-'), got {self.provider!r}"
            )
        if self.model is not None and (not isinstance(self.model, str) or not self.model.strip()):
            raise ValueError(f"model must be a non-empty string or None, got {self.model!r}")
        if self.credential is not None and not isinstance(self.credential, CredentialRef):
            raise TypeError(f"credential must be a CredentialRef, got {type(self.credential).__name__}")
        if type(self.options) is not FrozenDict:
            if not isinstance(self.options, Mapping):
                raise TypeError(f"options must be a mapping, got {type(self.options).__name__}")
            object.__setattr__(self, "options", freeze(dict(self.options)))
        if "model" in self.options:
            raise ValueError("pass the model as Binding(model=...), not in options")
        if self.credential is not None and self.credential.field in self.options:
            raise ValueError(f"options set {self.credential.field!r}, which the credential provides")

    @classmethod
    def parse(
        cls, spec: str, *, credential: CredentialRef | None = None, options: Mapping[str, Any] | None = None
    ) -> Binding:
        """``"PROVIDER:MODEL"`` -> ``Binding(provider, model)``, split on the first colon. Raises
        ``ValueError`` (with an example) when ``spec`` has no colon or either side is empty."""
        if not isinstance(spec, str):
            raise TypeError(f"expected a 'PROVIDER:MODEL' string, got {type(spec).__name__}")
        provider, sep, model = spec.partition(":")
        provider, model = provider.strip(), model.strip()
        if not sep or not provider or not model:
            raise ValueError(f"expected PROVIDER:MODEL (e.g. openai_chat:gpt-4o-mini), got {spec!r}")
        return cls(provider, model, credential, freeze(dict(options or {})))

    def __repr__(self) -> str:
        parts = [repr(self.provider)]
        if self.model is not None:
            parts.append(f"model={self.model!r}")
        if self.credential is not None:
            parts.append(f"credential={self.credential!r}")
        if self.options:
            parts.append(f"options={masked_options(self.options)!r}")
        return f"Binding({', '.join(parts)})"

    __str__ = __repr__

    @property
    def label(self) -> str:
        """``provider:model`` (or just the provider when no model is set)."""
        return f"{self.provider}:{self.model}" if self.model is not None else self.provider


def _usd(value: Any) -> Decimal:
    if isinstance(value, bool) or isinstance(value, float):
        raise ValueError(f"max_cost_usd must be a Decimal, int or decimal string (floats are inexact), got {value!r}")
    try:
        d = Decimal(value.strip() if isinstance(value, str) else value)
    except (InvalidOperation, TypeError, ValueError):
        raise ValueError(f"max_cost_usd must be a USD amount such as '0.50', got {value!r}") from None
    if not d.is_finite() or d <= 0:
        raise ValueError(f"max_cost_usd must be a finite amount greater than 0, got {value!r}")
    return d


@dataclass(frozen=True, slots=True)
class CallLimits:
    """Limits of one :func:`seamkit.ask` call (``None``: no limit).

    ``max_cost_usd``: a USD ceiling (``Decimal``; ``int`` and decimal strings are accepted,
    floats refused as inexact), enforced by the ``budget`` middleware (distribution
    ``seamkit-budget``): a model call whose reservation would pass it is refused before dispatch
    (outcome ``budget_exceeded``). ``wall_clock_s``: seconds for the whole call, corrective turn
    included (outcome ``timeout``). ``max_tokens``: output tokens per model request, sent to the
    provider. Raises ``ValueError`` for a non-positive or non-finite limit.
    """

    max_cost_usd: Decimal | None = None
    wall_clock_s: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None and type(self.max_cost_usd) is not Decimal:
            object.__setattr__(self, "max_cost_usd", _usd(self.max_cost_usd))
        elif self.max_cost_usd is not None:
            _usd(self.max_cost_usd)
        if self.wall_clock_s is not None:
            w = self.wall_clock_s
            if isinstance(w, bool) or not isinstance(w, int | float) or not (0 < float(w) < float("inf")):
                raise ValueError(f"wall_clock_s must be a positive number of seconds, got {w!r}")
        if self.max_tokens is not None:
            m = self.max_tokens
            if isinstance(m, bool) or not isinstance(m, int) or m < 1:
                raise ValueError(f"max_tokens must be a positive integer, got {m!r}")
