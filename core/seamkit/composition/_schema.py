"""JSON Schema of the composition format, including every installed component's parameters."""

from __future__ import annotations

import copy
import re
from typing import Any

from seamkit._plugins.registry import ComponentSpec, Registry, get_registry
from seamkit.composition._models import SLOT_TYPES, Composition

__all__ = ["DRAFT", "composition_json_schema"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def composition_json_schema(registry: Registry | None = None) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of composition files, for editor completion and validation.

    Each component slot is a ``oneOf``: a bare name (only components without required
    parameters), or per registered component of the slot's kind an object
    ``{use: {const: NAME}, from?: DISTRIBUTION, ...its config's properties}`` (with ``from``
    required, as a ``const``, when several distributions register the name). Component configs'
    ``$defs`` are merged under ``kind.name.distribution.`` prefixes, so they never collide. A
    component whose config cannot be imported is left out (it is reported by ``seamkit plugins``).
    ``registry`` defaults to :func:`~seamkit._plugins.registry.get_registry`.
    """
    reg = registry if registry is not None else get_registry()
    schema: dict[str, Any] = Composition.model_json_schema(mode="validation")
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    for kind, slot in SLOT_TYPES.items():
        defs[slot.__name__] = _slot_schema(kind, reg, defs)
    out: dict[str, Any] = {
        "$schema": DRAFT,
        "title": "seamkit composition",
        "description": "An agent composed from registered components (seamkit format version 1).",
    }
    out.update({k: v for k, v in schema.items() if k not in ("title", "description")})
    out["$defs"] = defs
    return out


def _slot_schema(kind: str, reg: Registry, defs: dict[str, Any]) -> dict[str, Any]:
    options: list[dict[str, Any]] = []
    bare: list[str] = []
    for name in reg.names(kind):
        specs = reg.components.get(kind, {}).get(name, [])
        for spec in specs:
            entry = _component_schema(spec, defs, require_from=len(specs) > 1)
            if entry is None:
                continue
            options.append(entry)
            if len(specs) == 1 and not entry["required"][1:]:
                bare.append(name)
    if bare:
        options.insert(0, {"type": "string", "enum": bare,
                           "description": f"A {kind} name (for components without required parameters)"})
    if not options:
        return {"description": f"A {kind} component (none is installed)",
                "anyOf": [{"type": "string"},
                          {"type": "object", "required": ["use"],
                           "properties": {"use": {"type": "string"}, "from": {"type": "string"}}}]}
    return {"description": f"A {kind} component: its name, or a mapping with 'use: NAME' and its parameters",
            "oneOf": options}


def _component_schema(spec: ComponentSpec, defs: dict[str, Any], *, require_from: bool) -> dict[str, Any] | None:
    try:
        model = spec.config_model()
        prefix = _UNSAFE.sub("_", f"{spec.kind}.{spec.name}.{spec.distribution}.")
        cfg: dict[str, Any] = (
            model.model_json_schema(ref_template="#/$defs/" + prefix + "{model}")  # type: ignore[attr-defined]
            if model is not None else {}
        )
    except Exception:
        return None
    cfg = copy.deepcopy(cfg)
    for def_name, def_schema in cfg.pop("$defs", {}).items():
        defs[prefix + def_name] = def_schema
    desc = spec.description or cfg.get("description") or ""
    properties: dict[str, Any] = {
        "use": {"const": spec.name, "description": desc or f"{spec.kind} {spec.name}"},
        "from": ({"const": spec.distribution} if require_from else {"type": "string"})
        | {"description": f"Distribution registering it ({spec.distribution} {spec.version})".strip()},
    }
    for key, prop in cfg.get("properties", {}).items():
        if key not in ("use", "from"):
            properties[key] = prop
    required = ["use"] + (["from"] if require_from else [])
    required += [r for r in cfg.get("required", []) if r not in ("use", "from")]
    entry: dict[str, Any] = {
        "type": "object",
        "title": f"{spec.kind} {spec.name} ({spec.distribution})",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if desc:
        entry["description"] = desc
    return entry
