"""Nested component slots in a component's own config model (imports pydantic only, which every
config model needs anyway).

A component whose configuration names other components (the ``fallback`` middleware's ``to:``
models, say) marks those fields with :class:`ComponentSlot` so that loading a composition
(``seamkit validate``, ``load_composition``) resolves and validates them like the top-level
slots, with file, line, column and key path (``agent.middlewares[0].to[0].use``)::

    from typing import Annotated
    from seamkit._slots import ComponentSlot

    class FallbackConfig(BaseModel):
        to: list[Annotated[FallbackSlot, ComponentSlot("provider")]]

The annotated value is written as a slot (``NAME`` or ``{use: NAME, from: DIST, **params}``);
the field's own type still validates its shape. Unknown names (with close names), parameters the
named component's config model refuses, and names of another kind are reported at load time.
Marked fields may sit in lists, mappings and nested models, and slots may nest further.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ComponentSlot", "NestedSlot", "build_nested"]


@dataclass(frozen=True, slots=True)
class ComponentSlot:
    """``Annotated`` metadata marking a config field as a slot of registry ``kind`` (``provider``,
    ``tool``, ``middleware``, ``store``...)."""

    kind: str


class NestedSlot(BaseModel):
    """A component named inside another component's config: ``use`` (its registered name),
    optional ``from`` (its distribution, when two register the name) and its own parameters
    (every other key; :attr:`params`); a bare ``NAME`` is ``{use: NAME}``. Mark the field with
    :class:`ComponentSlot` so loading a composition resolves and validates it; build it with
    :func:`build_nested`."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    use: str = Field(..., min_length=1, description="Registered component name")
    from_: str | None = Field(default=None, alias="from", description="Distribution registering `use`, to pick one")

    @model_validator(mode="before")
    @classmethod
    def _name_shorthand(cls, data: Any) -> Any:
        return {"use": data} if isinstance(data, str) else data

    @property
    def params(self) -> dict[str, Any]:
        """The component's parameters (everything but ``use`` and ``from``)."""
        return dict(self.model_extra or {})

    def __repr_args__(self) -> Any:
        # parameters named like secrets (api_key, headers.Authorization, ...) are masked in repr
        # and str, as a top-level slot's are: a logged config must not carry a key
        from seamkit.composition._models import MASK, is_secret_name

        def mask(value: Any, secret: bool) -> Any:
            if isinstance(value, dict):
                return {k: mask(v, secret or (isinstance(k, str) and is_secret_name(k))) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return type(value)(mask(v, secret) for v in value)
            return MASK if secret and value is not None else value

        for key, value in super().__repr_args__():
            yield key, mask(value, isinstance(key, str) and is_secret_name(key))


def build_nested(kind: str, slot: NestedSlot, *, at: str, registry: Any = None) -> Any:
    """Build the component of registry ``kind`` that ``slot`` (a ``NestedSlot``) names, through
    ``registry`` (default: the process-wide one), as a component's factory does for the
    components its config names (a compactor's or guardrail's model, say).

    Raises :class:`~seamkit.errors.ConfigError` located at ``at`` (the slot's key path inside the
    component's config: ``model``, ``to[0]``...) for an unknown or ambiguous name or parameters
    the named component refuses; :class:`~seamkit.errors.PluginError` when it cannot be built."""
    from seamkit._plugins.registry import get_registry
    from seamkit.errors import ConfigError, ConfigIssue, PluginError

    reg = registry if registry is not None else get_registry()
    try:
        spec = reg.resolve(kind, slot.use, slot.from_)
    except PluginError as exc:  # ComponentNotFound, AmbiguousComponent
        raise ConfigError([ConfigIssue(str(exc), f"{at}.use")]) from None
    try:
        return spec.build(slot.params)
    except ConfigError as exc:
        raise ConfigError([ConfigIssue(f"{kind} {slot.use!r}: {i.message}", f"{at}.{i.path}" if i.path else at)
                           for i in exc.issues]) from None
