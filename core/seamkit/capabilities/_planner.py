"""The planner: what to do with each intention the model proposes, and what the model sees.

:func:`plan` decides per :class:`~seamkit.capabilities._state.Intention`, in the order proposed:

- ``reject`` ``CAPABILITY_NOT_REGISTERED``: no capability has that id.
- ``reject`` ``INVALID_INTENTION``: the proposal is not an object with a capability id and an
  input object (the model's JSON is checked before anything is planned).
- ``reject`` ``DUPLICATE_INTENTION``: the same capability with the same input was proposed earlier
  in the step, or executed earlier in the turn (a write must never happen twice because the
  model repeated itself).
- ``clarify`` ``AMBIGUOUS_INTENTION``: the model named alternatives; the options are the proposed
  capability and its registered alternatives, for the person to choose.
- ``clarify`` ``INVALID_CAPABILITY_INPUT``: the input fails the capability's input schema.
- ``defer`` ``FACT_REQUIRED``: a required fact is not known and no intention executable before it
  in this step provides it; ``fact`` names the first such fact type (in declaration order).
- ``reject`` ``POLICY_DENIED``: the policy hook refused it (its reason is the message).
- ``execute`` otherwise.

A policy hook is ``policy(capability, input, facts) -> str | None``: a reason to refuse, or
``None`` to allow; it runs for intentions that are otherwise executable, before any capability
runs. A policy that raises refuses (``reject`` ``POLICY_ERROR``, the message naming only the
exception's type): it fails closed.

A proposal holds at most :data:`MAX_INTENTIONS` intentions and each input at most
:data:`MAX_INPUT_CHARS` characters of JSON nested at most :data:`MAX_INPUT_DEPTH` levels; the
rest is ``INVALID_INTENTION``.

**Selection** (:func:`select`): the model always sees every capability's id, description and
availability (:func:`catalogue`), but the full guidance and input schema only of the ones
selected this turn: all of them when there are at most ``limit``; otherwise the ones on the
agenda, the ones the model asked for (``select`` in its proposal) and the best matches of the
person's words (word overlap with id, description and guidance).

**The proposal** the model writes each step is one JSON object (:func:`proposal_schema`, given to
the provider as the output schema, so a provider with constrained decoding cannot write another
shape): ``intentions`` (``[{capability, input, alternatives?}]``), ``select`` (ids to see in full),
``confirmation`` (``yes`` / ``no`` / ``none``: only when a confirmation is open) and ``reply``
(the answer to the person, citing evidence ids in brackets).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seamkit.capabilities._compiler import CompiledAgent
from seamkit.capabilities._model import Capability, Fact
from seamkit.capabilities._state import Disposition, Intention
from seamkit.values import thaw

__all__ = ["Policy", "Proposal", "catalogue", "intention_key", "parse_proposal", "plan", "proposal_schema", "select"]

Policy = Callable[[Capability, Mapping[str, Any], Mapping[str, Fact]], "str | None"]
"""``policy(capability, input, facts) -> reason | None``: refuse an intention (``POLICY_DENIED``)."""


@dataclass(frozen=True, slots=True)
class Proposal:
    """One step's proposal, parsed: ``intentions``, the ``malformed`` ones (``(index, why)``),
    ``select`` (capability ids), ``confirmation`` (``yes``, ``no`` or ``None``), ``reply`` and
    ``problem`` (why the text was not a proposal object, or ``None``)."""

    intentions: tuple[Intention, ...] = ()
    malformed: tuple[tuple[int, str], ...] = ()
    select: tuple[str, ...] = ()
    confirmation: str | None = None
    reply: str = ""
    problem: str | None = None


MAX_INTENTIONS = 16  # per step: more is a model gone wrong, not a plan
MAX_INPUT_CHARS = 65_536  # one intention's input, as JSON
MAX_INPUT_DEPTH = 64  # nested arrays/objects in one input: deeper cannot be frozen or checkpointed safely


def _depth(value: Any) -> int:
    """How deeply ``value``'s lists and dicts nest (0 for a scalar), without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if children is None:
            continue
        deepest = max(deepest, d)
        if deepest > MAX_INPUT_DEPTH:
            return deepest
        stack.extend((c, d + 1) for c in children)
    return deepest


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:  # nesting deeper than the interpreter allows: not a proposal
        return None
    except ValueError:
        pass
    # a model without constrained decoding may wrap the object in prose or a code fence
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            return json.loads(text[start : end + 1])
        except (ValueError, RecursionError):
            return None
    return None


def parse_proposal(text: str) -> Proposal:
    """The proposal in the model's ``text`` (see the module doc). Never raises: text that is not a
    JSON object is a proposal with no intentions whose reply is the text and whose ``problem``
    says so; an intention of the wrong shape is listed in ``malformed`` (planned as
    ``INVALID_INTENTION``)."""
    data = _json_object(text)
    if not isinstance(data, dict):
        return Proposal(reply=text.strip(), problem="the model's proposal is not a JSON object")
    raw = data.get("intentions")
    intentions: list[Intention] = []
    malformed: list[tuple[int, str]] = []
    if raw is not None and not isinstance(raw, list):
        malformed.append((0, "'intentions' must be a list of intentions"))
    for i, item in enumerate(raw if isinstance(raw, list) else ()):
        if i >= MAX_INTENTIONS:
            malformed.append((i, f"more than {MAX_INTENTIONS} intentions in one step: the rest were not planned"))
            break
        if not isinstance(item, dict) or not isinstance(item.get("capability"), str):
            malformed.append((i, "an intention must be an object with a capability id"))
            continue
        arguments = item.get("input", {})
        if not isinstance(arguments, dict):
            malformed.append((i, f"the input of {item['capability']!r} must be a JSON object"))
            continue
        if _depth(arguments) > MAX_INPUT_DEPTH:
            malformed.append((i, f"the input of {item['capability']!r} nests deeper than {MAX_INPUT_DEPTH} levels"))
            continue
        if len(json.dumps(arguments, ensure_ascii=False, default=str)) > MAX_INPUT_CHARS:
            malformed.append((i, f"the input of {item['capability']!r} is larger than {MAX_INPUT_CHARS} characters"))
            continue
        alternatives = item.get("alternatives") or []
        alts = tuple(a for a in alternatives if isinstance(a, str)) if isinstance(alternatives, list) else ()
        intentions.append(Intention(item["capability"], arguments, alts))
    select_raw = data.get("select")
    chosen = tuple(s for s in select_raw if isinstance(s, str)) if isinstance(select_raw, list) else ()
    confirmation = data.get("confirmation")
    reply = data.get("reply")
    return Proposal(
        tuple(intentions), tuple(malformed), chosen,
        confirmation if confirmation in ("yes", "no") else None,
        reply if isinstance(reply, str) else "",
        "'intentions' is not a list" if raw is not None and not isinstance(raw, list)
        else None if isinstance(reply, str) or reply is None else "the proposal's 'reply' is not text",
    )


def missing_facts(capability: Capability, known: Iterable[str]) -> list[str]:
    """The fact types ``capability`` requires that are not in ``known``, in declaration order."""
    have = set(known)
    return [str(t) for t in capability.requires if str(t) not in have]


def intention_key(intention: Intention) -> tuple[str, str]:
    """What makes two intentions the same: the capability id and the canonical JSON of the input."""
    return intention.capability, json.dumps(thaw(intention.input), sort_keys=True, default=str)


def plan(agent: CompiledAgent, intentions: Sequence[Intention], facts: Mapping[str, Fact], *,
         policy: Policy | None = None, earlier: Iterable[tuple[str, str]] = ()) -> tuple[Disposition, ...]:
    """A :class:`~seamkit.capabilities._state.Disposition` per intention, in order (see the module
    doc). ``facts``: what is known (``"name@version"`` -> fact). An intention is executable when
    each fact it requires is known or provided by an intention executed before it in this step
    (the capabilities then run providers first: the compiled order). ``earlier``: the
    :func:`intention_key` of intentions already executed in this turn (proposed again, they are
    ``DUPLICATE_INTENTION``). A policy that raises refuses (``POLICY_ERROR``)."""
    out: list[Disposition] = []
    seen: set[tuple[str, str]] = set(earlier)
    planned: list[tuple[Intention, Capability]] = []
    for it in intentions:
        c = agent.get(it.capability)
        if c is None:
            out.append(Disposition(it, "reject", "CAPABILITY_NOT_REGISTERED",
                                   f"no capability {it.capability!r}; registered: {', '.join(agent.order) or 'none'}"))
            continue
        key = intention_key(it)
        if key in seen:
            out.append(Disposition(it, "reject", "DUPLICATE_INTENTION",
                                   f"{c.ref} with this input was already proposed in this turn"))
            continue
        seen.add(key)
        options = tuple(dict.fromkeys(a for a in (c.id, *it.alternatives) if agent.get(a) is not None))
        if len(options) > 1:
            out.append(Disposition(it, "clarify", "AMBIGUOUS_INTENTION",
                                   f"which one is meant: {', '.join(options)}?", options=options))
            continue
        try:
            agent.input_adapters[c.id].validate(thaw(it.input))
        except Exception as exc:
            problems = getattr(exc, "problems", None) or (str(exc),)
            out.append(Disposition(it, "clarify", "INVALID_CAPABILITY_INPUT",
                                   f"the input of {c.ref} does not validate: " + "; ".join(problems)))
            continue
        out.append(Disposition(it, "execute"))
        planned.append((it, c))
    # facts: known, plus those provided by intentions executable before it in the compiled order
    # (a provider runs before its consumers whatever order the model wrote)
    rank = {cid: i for i, cid in enumerate(agent.order)}
    index = {id(d.intention): i for i, d in enumerate(out)}
    available = set(facts.keys())
    for it, c in sorted(planned, key=lambda p: rank[p[1].id]):
        i = index[id(it)]
        missing = missing_facts(c, available)
        if missing:
            out[i] = Disposition(it, "defer", "FACT_REQUIRED",
                                 f"{c.ref} needs the fact {missing[0]}, which is not known yet", fact=missing[0])
            continue
        if policy is not None:
            try:
                reason = policy(c, thaw(it.input), facts)
            except Exception as exc:  # a broken policy refuses: it fails closed, its text left out
                out[i] = Disposition(it, "reject", "POLICY_ERROR", f"the policy raised {type(exc).__name__}")
                continue
            if reason is not None:
                out[i] = Disposition(it, "reject", "POLICY_DENIED", str(reason))
                continue
        available.update(str(t) for t in c.provides)
    return tuple(out)


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from i in is it me my of on or the to we with you your".split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def select(agent: CompiledAgent, text: str, *, agenda: Iterable[str] = (), asked: Iterable[str] = (),
           limit: int = 6) -> tuple[str, ...]:
    """The capability ids shown in full this turn, in compiled order (see the module doc): all of
    them when there are at most ``limit``; else those in ``agenda`` and ``asked`` plus the best
    ``limit`` matches of ``text`` (at least one word in common)."""
    ids = agent.order
    if len(ids) <= limit:
        return ids
    chosen = {a for a in (*agenda, *asked) if agent.get(a) is not None}
    words = _words(text)
    scored: list[tuple[int, str]] = []
    for c in agent.capabilities:
        g = c.guidance
        score = len(words & _words(" ".join((c.id.replace("_", " "), c.description, g.when_to_use, *g.examples))))
        if score:
            scored.append((-score, c.id))
    chosen.update(cid for _, cid in sorted(scored)[:limit])
    return tuple(cid for cid in ids if cid in chosen)


def catalogue(agent: CompiledAgent, facts: Mapping[str, Fact], selected: Iterable[str]) -> str:
    """The capabilities as the model reads them: one line per capability (id, description,
    effect, ``ready`` or the facts it still needs), then the guidance and input outline
    (:func:`input_outline`) of each selected one."""
    chosen = set(selected)
    lines = ["Capabilities (id: description [effect; ready or what it needs]):"]
    known = set(facts.keys())
    for c in agent.capabilities:
        missing = missing_facts(c, known)
        state = "ready" if not missing else "needs " + ", ".join(missing)
        confirm = ", asks the person to confirm" if c.confirmation != "none" else ""
        lines.append(f"- {c.id}: {c.description} [{c.effect}{confirm}; {state}]")
    for c in agent.capabilities:
        if c.id not in chosen:
            continue
        g = c.guidance
        lines.append(f"\n{c.id} in full:")
        if g.when_to_use:
            lines.append(f"  use when: {g.when_to_use}")
        if g.when_not_to_use:
            lines.append(f"  do not use when: {g.when_not_to_use}")
        for ex in g.examples:
            lines.append(f"  example: {ex}")
        lines.append("  input: " + input_outline(thaw(agent.input_schemas[c.id])))
    return "\n".join(lines)


def _outline_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " or ".join(_outline_type(s) for s in schema[key])
    t = schema.get("type")
    if t == "array":
        return f"list of {_outline_type(schema.get('items'))}"
    if isinstance(t, list):
        return " or ".join(map(str, t))
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return str(t or "any")


def input_outline(schema: Mapping[str, Any]) -> str:
    """An input JSON Schema as people (and small models) read it: one ``name (type, required):
    description`` entry per property, e.g. ``{query (string, required): the problem in a few
    words}``. The full schema is the proposal's (:func:`proposal_schema`), enforced there."""
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        return "{}"
    required = set(schema.get("required") or ())
    parts = []
    for name, sub in props.items():
        bits = [_outline_type(sub)]
        if name in required:
            bits.append("required")
        elif isinstance(sub, Mapping) and "default" in sub:
            bits.append(f"default {json.dumps(sub['default'], ensure_ascii=False)}")
        desc = sub.get("description") if isinstance(sub, Mapping) else None
        parts.append(f"{name} ({', '.join(bits)})" + (f": {desc}" if isinstance(desc, str) and desc else ""))
    return "{" + "; ".join(parts) + "}"


def _hoist(schema: Any, prefix: str, defs: dict[str, Any]) -> Any:
    """``schema`` with its ``$defs`` moved into ``defs`` under ``prefix`` and its local references
    rewritten, so several input schemas fit in one proposal schema."""
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "$defs" and isinstance(v, dict):
                for name, sub in v.items():
                    defs[f"{prefix}{name}"] = _hoist(sub, prefix, defs)
            elif k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                out[k] = "#/$defs/" + prefix + v[len("#/$defs/"):]
            else:
                out[k] = _hoist(v, prefix, defs)
        return out
    if isinstance(schema, list):
        return [_hoist(v, prefix, defs) for v in schema]
    return schema


def proposal_schema(agent: CompiledAgent, selected: Iterable[str], *, confirming: bool = False) -> dict[str, Any]:
    """The JSON Schema of one step's proposal (see the module doc): each intention is one of the
    selected capabilities with its own input schema (at most as many intentions as selected
    capabilities); ``select`` names any registered id;
    ``confirmation`` is there only when ``confirming``."""
    defs: dict[str, Any] = {}
    ids = list(agent.order)
    variants = []
    for cid in selected:
        schema = _hoist(thaw(agent.input_schemas[cid]), f"{cid.replace('.', '_').replace('-', '_')}__", defs)
        variants.append({
            "type": "object",
            "properties": {"capability": {"const": cid}, "input": schema,
                           "alternatives": {"type": "array", "items": {"enum": ids}}},
            "required": ["capability", "input"],
        })
    item: dict[str, Any] = {"anyOf": variants} if variants else {"type": "object"}
    # as many intentions as capabilities shown: a small model constrained by this schema otherwise
    # repeats its last intention until it runs out of tokens
    props: dict[str, Any] = {
        "intentions": {"type": "array", "items": item, "maxItems": max(1, len(variants))},
        "select": {"type": "array", "items": {"enum": ids}},
    }
    required = ["intentions", "reply"]
    if confirming:
        props["confirmation"] = {"enum": ["yes", "no", "none"]}
        required.insert(0, "confirmation")
    props["reply"] = {"type": "string"}
    out: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if defs:
        out["$defs"] = defs
    return out
