"""``seamkit plugins show NAME``: what a component is, its parameters and a composition using it.

The description comes from the registration (``register(..., description=...)``, read when the
plugin's entry point loads, so the ``plugins`` table needs no component module); the parameters
come from the component's config model, which ``show`` imports (only that component's module):
each parameter's name as written in YAML (its alias), type (from the JSON Schema), whether it is
required, its default, its description and whether it is a secret (``SecretStr``: give it as
``${ENV_VAR}``). The example is a whole, minimal composition using the component (required
parameters filled with placeholders), which ``seamkit validate`` accepts (a test holds every
installed component to that); kinds that are not a slot of a composition (``schema_adapter``,
``evaluator``, ``runner``) get a note saying where they are used instead.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from seamkit._cli.outcomes import EXIT_USAGE, UsageError, write_json_error

if TYPE_CHECKING:
    from seamkit._plugins.registry import ComponentSpec, Registry

__all__ = ["check_target", "component_info", "example_composition", "find_components", "json_usage_error",
           "parameters"]

#: where a kind that is not a composition slot is used
_ELSEWHERE = {
    "schema_adapter": "a schema adapter is picked by the type of an agent's output (Agent(output=...) in Python); "
                      "compositions give a JSON Schema under 'output: {json_schema: ...}'",
    "evaluator": "an evaluator is used in an eval file's 'evaluators:' list (see docs/evals.md)",
    "runner": "a runner continues queued runs (seamkit submit / seamkit resume); see docs/durable-runs.md",
}
#: the kind a bare ``seamkit new plugin`` word names
_KIND_WORDS = {"schema": "schema_adapter"}


def find_components(registry: Registry, target: str) -> list[ComponentSpec]:
    """The components ``target`` names: ``NAME`` (every kind) or ``KIND/NAME``. Raises
    :class:`UsageError` (exit 2) with the close names when none matches, or when ``target`` is
    not of that shape."""
    import difflib

    check_target(target)
    kind, sep, name = target.partition("/")
    if not sep:
        kind, name = "", target
    kind = _KIND_WORDS.get(kind, kind)
    kinds = sorted(registry.components)
    if sep and kind not in kinds:
        close = difflib.get_close_matches(kind, kinds, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UsageError(f"no component of kind {kind!r} is installed{hint} (kinds: {', '.join(kinds) or 'none'})")
    specs = [s for s in registry.all_components() if s.name == name and (not sep or s.kind == kind)]
    if not specs:
        known = sorted({s.name for s in registry.all_components() if not sep or s.kind == kind})
        # a name begun (calc -> calculator) first, then names spelled alike
        begun = [k for k in known if name and k.startswith(name.lower())]
        close = (begun + [c for c in difflib.get_close_matches(name, known, n=3, cutoff=0.6) if c not in begun])[:3]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        what = f"{kind} component" if sep else "component"
        raise UsageError(f"no {what} named {name!r} is installed{hint} (see 'seamkit plugins')")
    return sorted(specs, key=lambda s: (s.kind, s.distribution))


# -- parameters ------------------------------------------------------------------------------------


def _type_of(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short type text for a JSON Schema: ``string``, ``integer | null``, ``list[string]``,
    ``'a' | 'b'``, ``component`` (a nested component slot)..."""
    if "$ref" in schema:
        ref = str(schema["$ref"]).rsplit("/", 1)[-1]
        if ref == "NestedSlot":
            return "component"
        target = defs.get(ref, {})
        return _type_of(target, defs) if "type" in target or "enum" in target else ref
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts: list[str] = []
            for option in schema[key]:
                text = _type_of(option, defs)
                if text not in parts:
                    parts.append(text)
            return " | ".join(parts)
    t = schema.get("type")
    if t == "array":
        items = schema.get("items")
        return f"list[{_type_of(items, defs)}]" if isinstance(items, dict) and items else "list"
    if t == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"dict[string, {_type_of(extra, defs)}]"
        return "object"
    if t == "string" and schema.get("format") == "password":
        return "secret string"
    if isinstance(t, list):
        return " | ".join(str(x) for x in t)
    return str(t) if t else "any"


def _is_secret(schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    if schema.get("format") == "password" or schema.get("writeOnly") is True:
        return True
    return any(_is_secret(o, defs) for key in ("anyOf", "oneOf") for o in schema.get(key, ()))


def _schema_of(spec: ComponentSpec) -> dict[str, Any]:
    """The JSON Schema of ``spec``'s config (``{}`` when it takes no parameters). Raises
    :class:`~seamkit.errors.PluginError` (exit 1: the plugin's defect) when its config model
    cannot be imported or described."""
    from seamkit._plugins.redact import mask_message
    from seamkit.errors import PluginError

    try:
        model = spec.config_model()
        if model is None:
            return {}
        return dict(model.model_json_schema(mode="validation"))  # type: ignore[attr-defined]
    except Exception as exc:
        raise PluginError(f"the config of {spec.kind} {spec.name!r} ({spec.distribution}) cannot be loaded: "
                          f"{mask_message(f'{type(exc).__name__}: {exc}')} "
                          f"(see 'seamkit plugins --check {spec.kind}/{spec.name}')") from None


def parameters(spec: ComponentSpec) -> list[dict[str, Any]]:
    """``spec``'s parameters, in their model's order: ``{name, type, required, default, secret,
    description}`` (``default`` only when not required and it has one)."""
    schema = _schema_of(spec)
    defs = schema.get("$defs", {})
    required = set(schema.get("required", ()))
    out: list[dict[str, Any]] = []
    for name, prop in schema.get("properties", {}).items():
        row: dict[str, Any] = {"name": name, "type": _type_of(prop, defs), "required": name in required}
        if "default" in prop:
            row["default"] = prop["default"]
        row["secret"] = _is_secret(prop, defs)
        row["description"] = " ".join(str(prop.get("description", "")).split())
        out.append(row)
    return out


# -- example composition ---------------------------------------------------------------------------


def _slot_kind(spec: ComponentSpec, field: str) -> str | None:
    """The registry kind of ``field`` when it is a nested component slot (``ComponentSlot``)."""
    from seamkit._slots import ComponentSlot

    model = spec.config_model()
    fields = getattr(model, "model_fields", {})
    for fname, info in fields.items():
        if field in (fname, info.alias):
            for meta in info.metadata:
                if isinstance(meta, ComponentSlot):
                    return meta.kind
            inner = getattr(info.annotation, "__args__", ())
            for arg in inner:  # list[Annotated[NestedSlot, ComponentSlot(...)]]
                for meta in getattr(arg, "__metadata__", ()):
                    if isinstance(meta, ComponentSlot):
                        return meta.kind
    return None


def _simplest(registry: Registry, kind: str) -> str | None:
    """A component of ``kind`` that needs no parameters (for a nested slot's placeholder)."""
    preferred = {"provider": "llamacpp", "store": "memory", "compactor": "truncation"}.get(kind)
    names = registry.names(kind)
    if preferred in names:
        return preferred
    for name in names:
        specs = registry.components[kind][name]
        if len(specs) == 1 and not any(p["required"] for p in parameters(specs[0])):
            return name
    return None


def _placeholder(registry: Registry, spec: ComponentSpec, name: str, schema: dict[str, Any],
                 defs: dict[str, Any]) -> Any:
    """A value of ``schema`` for a required parameter, for the example to validate: its example,
    first allowed value, or a typed placeholder."""
    if schema.get("examples"):
        return schema["examples"][0]
    if "$ref" in schema:
        ref = str(schema["$ref"]).rsplit("/", 1)[-1]
        if ref == "NestedSlot":
            kind = _slot_kind(spec, name)
            use = _simplest(registry, kind) if kind else None
            return use if use is not None else {"use": f"<{kind or 'component'}>"}
        return _placeholder(registry, spec, name, defs.get(ref, {}), defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return _placeholder(registry, spec, name, options[0], defs)
    t = schema.get("type")
    if t == "string":
        if schema.get("format") == "password" or schema.get("writeOnly"):
            return "${" + name.upper() + "}"
        if schema.get("format") in ("path", "directory-path", "file-path"):
            return "."  # a path that exists wherever the composition is (a root directory, say)
        return f"<{name}>"
    if t in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(1, low + (1 if "exclusiveMinimum" in schema else 0))
        # an integral number stays an int: a Decimal amount refuses floats (inexact)
        return int(value) if t == "integer" or float(value).is_integer() else float(value)
    if t == "boolean":
        return False
    if t == "array":
        items = schema.get("items")
        return [_placeholder(registry, spec, name, items, defs)] if isinstance(items, dict) and items else []
    if t == "object":
        props = schema.get("properties", {})
        return {k: _placeholder(registry, spec, k, props[k], defs) for k in schema.get("required", ()) if k in props}
    return f"<{name}>"


def _required_values(registry: Registry, spec: ComponentSpec) -> dict[str, Any]:
    """Values for ``spec``'s required parameters; when its config model refuses them alone (a rule
    across fields: "set exactly one of a and b"), also the first optional parameter without a
    default value that makes it accept them."""
    schema = _schema_of(spec)
    defs = schema.get("$defs", {})
    props = schema.get("properties", {})
    values = {k: _placeholder(registry, spec, k, props[k], defs) for k in schema.get("required", ()) if k in props}
    model = spec.config_model()
    if model is None or _accepts(model, values):
        return values
    for k, prop in props.items():
        if k not in values and prop.get("default", 0) is None:
            more = {**values, k: _placeholder(registry, spec, k, prop, defs)}
            if _accepts(model, more):
                return more
    return values


def _accepts(model: Any, values: dict[str, Any]) -> bool:
    """Whether ``model`` validates ``values`` on their own (a nested slot or a ``${X}`` secret
    that the loader resolves counts as accepted: only a refusal across fields matters here)."""
    try:
        model.model_validate(values)
    except Exception as exc:
        errors = getattr(exc, "errors", None)
        if not callable(errors):
            return False
        # errors at the top (a model validator) mean the combination is refused
        return all(e.get("loc") for e in errors())
    return True


def _flow(value: Any) -> str:
    """``value`` as YAML flow text (JSON is YAML; a secret reference ``${X}`` stays unquoted-safe)."""
    return json.dumps(value, ensure_ascii=False)


def _entry(registry: Registry, spec: ComponentSpec) -> str:
    """The component as one flow mapping: ``{use: NAME, param: value}`` (``from`` when needed)."""
    parts = [f"use: {spec.name}"]
    if len(registry.components.get(spec.kind, {}).get(spec.name, [])) > 1:
        parts.append(f"from: {spec.distribution}")
    parts += [f"{k}: {_flow(v)}" for k, v in _required_values(registry, spec).items()]
    return "{" + ", ".join(parts) + "}"


def example_composition(registry: Registry, spec: ComponentSpec) -> str | None:
    """A minimal composition (YAML text) using ``spec`` with its required parameters filled in
    (placeholders in ``<...>``, secrets as ``${NAME}``), or ``None`` for a kind that is not a
    composition slot."""
    entry = _entry(registry, spec)
    model = "{use: llamacpp}" if "llamacpp" in registry.names("provider") else "{use: scripted, turns: [hello]}"
    head = "seamkit: 1\nagent:\n"
    kind = spec.kind
    if kind == "provider":
        return head + f"  model: {entry}\n"
    slot = {
        "tool": f"  tools:\n    - {entry}\n",
        "middleware": f"  middlewares:\n    - {entry}\n",
        "store": f"  checkpoints: {entry}\n",
        "memory": f"  context:\n    grounding: {entry}\n",
        "compactor": f"  context:\n    budget_tokens: 2000\n    compactor: {entry}\n",
        "guardrail": f"  guardrails:\n    - {entry}\n",
        "capability": f"  capabilities:\n    - {entry}\n",
    }.get(kind)
    if slot is not None:
        return head + f"  model: {model}\n" + slot
    if kind == "step":
        return (head + f"  model: {model}\nworkflow:\n  outcomes: [done]\n  steps:\n"
                f"    {spec.name}: {entry[:-1]}, consumes: [start], emits: [done]}}\n")
    return None


@contextlib.contextmanager
def json_usage_error(as_json: bool) -> Iterator[None]:
    """With ``as_json``, a :class:`UsageError` raised inside is also written to stdout as one JSON
    object, ``{"error": {"type": "UsageError", "message": ...}, "exit_code": 2}``, so a program
    reading stdout gets JSON whatever happens; the error goes on (stderr, exit 2)."""
    try:
        yield
    except UsageError as exc:
        if as_json:
            write_json_error(exc, EXIT_USAGE)
        raise



def check_target(target: str) -> None:
    """Refuse a ``--check`` or ``show`` argument that is not ``NAME`` or ``KIND/NAME`` (``a/b/c``,
    ``/x``, ``x/``) with a message saying what is expected."""
    kind, sep, name = target.partition("/")
    if not target.strip() or (sep and (not kind or not name or "/" in name)):
        raise UsageError(f"expected NAME or KIND/NAME (e.g. 'calculator' or 'tool/calculator'), got {target!r}")


# -- the command -----------------------------------------------------------------------------------


def component_info(registry: Registry, spec: ComponentSpec) -> dict[str, Any]:
    """What ``show`` prints for ``spec``, as JSON data: ``kind``, ``name``, ``distribution``,
    ``version``, ``plugin``, ``description``, ``parameters`` (:func:`parameters`), ``example``
    (YAML text or ``None``) and ``note`` (where a non-slot kind is used, else ``None``)."""
    return {
        "kind": spec.kind, "name": spec.name, "distribution": spec.distribution, "version": spec.version,
        "plugin": spec.plugin, "description": spec.description, "parameters": parameters(spec),
        "example": example_composition(registry, spec), "note": _ELSEWHERE.get(spec.kind),
    }


def _default_text(row: dict[str, Any]) -> str:
    if row["required"]:
        return "required"
    if "default" not in row:
        return "optional"
    return f"default {json.dumps(row['default'], ensure_ascii=False)}"


def render(info: dict[str, Any]) -> str:
    """``info`` (:func:`component_info`) as text for a terminal."""
    lines = [f"{info['kind']} {info['name']!r} ({info['distribution']} {info['version']})"]
    if info["description"]:
        lines.append(f"  {info['description']}")
    params = info["parameters"]
    lines.append("")
    if not params:
        lines.append("parameters: none")
    else:
        lines.append("parameters:")
        for p in params:
            secret = ", secret: give it as ${ENV_VAR}" if p["secret"] else ""
            lines.append(f"  {p['name']} ({p['type']}; {_default_text(p)}{secret})")
            if p["description"]:
                lines.append(f"      {p['description']}")
    if info["example"]:
        lines += ["", "example (a whole composition; replace the <placeholders> with real values, then check it with "
                  "'seamkit validate FILE'):", ""]
        lines += ["  " + line for line in info["example"].rstrip("\n").split("\n")]
    if info["note"]:
        lines += ["", f"note: {info['note']}"]
    return "\n".join(lines) + "\n"


def cmd_plugins_show(args: Any, registry: Registry) -> int:
    """``seamkit plugins show NAME|KIND/NAME [--json]``: every component ``NAME`` names."""
    from seamkit._cli.render import visible

    with json_usage_error(args.json):
        check_target(args.name)
        infos = [component_info(registry, s) for s in find_components(registry, args.name)]
    if args.json:
        sys.stdout.write(json.dumps(infos, indent=2, ensure_ascii=False) + "\n")
        return 0
    text = "\n".join(render(i) for i in infos)
    if len(infos) > 1:
        text += ("\nnote: several components are called " + repr(infos[0]["name"]) + "; pick one with "
                 + ", ".join(f"'seamkit plugins show {i['kind']}/{i['name']}'" for i in infos) + "\n")
    sys.stdout.write("".join(visible(line) + "\n" for line in text.rstrip("\n").split("\n")))
    return 0
