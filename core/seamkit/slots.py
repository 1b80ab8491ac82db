"""Nested component slots in a component's own config model (light: imports nothing heavy).

A component whose configuration names other components (the ``fallback`` middleware's ``to:``
models, say) marks those fields with :class:`ComponentSlot` so that loading a composition
(``seamkit validate``, ``load_composition``) resolves and validates them like the top-level
slots, with file, line, column and key path (``agent.middlewares[0].to[0].use``)::

    from typing import Annotated
    from seamkit.slots import ComponentSlot

    class FallbackConfig(BaseModel):
        to: list[Annotated[FallbackSlot, ComponentSlot("provider")]]

The annotated value is written as a slot (``NAME`` or ``{use: NAME, from: DIST, **params}``);
the field's own type still validates its shape. Unknown names (with close names), parameters the
named component's config model refuses, and names of another kind are reported at load time.
Marked fields may sit in lists, mappings and nested models, and slots may nest further.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ComponentSlot"]


@dataclass(frozen=True, slots=True)
class ComponentSlot:
    """``Annotated`` metadata marking a config field as a slot of registry ``kind`` (``provider``,
    ``tool``, ``middleware``, ``store``...)."""

    kind: str
