"""The capability compiler: checks an agent's capabilities before any turn and freezes them.

:func:`compile_agent` reports **every** problem at once (:class:`CompileError`), each a
:class:`Problem` with a stable ``code`` and the offending ids (capability refs ``id@version``, or
fact types). The codes:

- ``DUPLICATE_CAPABILITY``: two capabilities share an id (ids: each ``id@version``). Each of them
  is still checked, so the other problems do not depend on which one was registered first.
- ``INVALID_CAPABILITY_ID``: an id that is not lower-case letters, digits, ``_``, ``-`` and ``.``.
- ``INVALID_CAPABILITY_VERSION``: a version that is not a positive integer.
- ``INVALID_AGENT_VERSION``: the agent's version is not a positive integer.
- ``MODEL_SCHEMA_REQUIRED``: no input type, or one whose JSON Schema is not an object (the model
  proposes an input as a JSON object, as for a tool call), or a type no schema flavour adapts.
- ``INVALID_OUTPUT_SCHEMA``: an output type no schema flavour adapts.
- ``WRITE_CONFIRMATION_REQUIRED``: a ``write`` capability with confirmation ``none``.
- ``MISSING_FACT_PROVIDER``: a required fact type that no capability provides (ids: the consumer
  and the fact type).
- ``FACT_VERSION_MISMATCH``: a required fact type provided only in other versions (ids: the
  consumer, the fact type, the providers).
- ``AMBIGUOUS_FACT_PROVIDER``: a fact type provided by more than one capability (ids: the fact
  type and every provider).
- ``CAPABILITY_DEPENDENCY_CYCLE``: capabilities that need each other's facts, directly or not
  (ids: the members of the cycle; a capability requiring what it provides is a cycle of one). Every
  provider of a fact type counts, so a cycle through the second provider of an ambiguous fact is
  reported next to the ambiguity.

The :class:`CompiledAgent` is immutable: the capabilities in a topological order (a provider
before every capability requiring its facts; ties broken by id), the provider of each fact type,
each capability's input JSON Schema, and a ``fingerprint`` (SHA-256 of the canonical JSON of
every declaration, ``execute`` excluded). Order and fingerprint do not depend on the order the
capabilities were registered in.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from seamkit.capabilities._model import Capability, FactType
from seamkit.errors import CompileError
from seamkit.values import EMPTY, FrozenDict, freeze, thaw

__all__ = ["CODES", "CompileError", "CompiledAgent", "Problem", "compile_agent"]

CODES: tuple[str, ...] = (
    "DUPLICATE_CAPABILITY",
    "INVALID_CAPABILITY_ID",
    "INVALID_CAPABILITY_VERSION",
    "INVALID_AGENT_VERSION",
    "MODEL_SCHEMA_REQUIRED",
    "INVALID_OUTPUT_SCHEMA",
    "WRITE_CONFIRMATION_REQUIRED",
    "MISSING_FACT_PROVIDER",
    "FACT_VERSION_MISMATCH",
    "AMBIGUOUS_FACT_PROVIDER",
    "CAPABILITY_DEPENDENCY_CYCLE",
)
_ID = re.compile(r"[a-z][a-z0-9_.\-]*")  # fullmatch: "$" would accept a trailing newline


@dataclass(frozen=True, slots=True, order=True)
class Problem:
    """One problem the compiler found: ``code`` (one of :data:`CODES`), the offending ``ids`` and a
    ``message`` for people."""

    code: str
    ids: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return f"{self.code} ({', '.join(self.ids)}): {self.message}"


@dataclass(frozen=True, slots=True)
class CompiledAgent:
    """A checked, frozen set of capabilities (see the module doc). ``capabilities``: topological
    order; ``providers``: fact type (``name@version``) -> capability id; ``input_schemas``:
    capability id -> the JSON Schema the model sees; ``fingerprint``: SHA-256 hex."""

    version: int
    capabilities: tuple[Capability, ...]
    providers: FrozenDict
    input_schemas: FrozenDict
    fingerprint: str
    # the input adapters the compiler built (capability id -> SchemaAdapter): the executor
    # validates with them instead of adapting each type again
    input_adapters: FrozenDict = field(default=EMPTY, repr=False, compare=False)
    _by_id: dict[str, Capability] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {c.id: c for c in self.capabilities})

    def get(self, capability_id: str) -> Capability | None:
        """The capability with ``capability_id``, or ``None``."""
        return self._by_id.get(capability_id)

    @property
    def order(self) -> tuple[str, ...]:
        """The capability ids in topological order."""
        return tuple(c.id for c in self.capabilities)


def compile_agent(capabilities: Iterable[Capability], *, version: int = 1, registry: Any = None) -> CompiledAgent:
    """Check ``capabilities`` as one agent of ``version`` and freeze them (see the module doc).
    ``registry``: where schema flavours are looked up (default: the process-wide one).

    Raises :class:`CompileError` with every problem found; ``TypeError`` when an item is not a
    :class:`~seamkit.capabilities._model.Capability`."""
    caps = list(capabilities)
    for c in caps:
        if not isinstance(c, Capability):
            raise TypeError(f"compile_agent takes Capability values, got {type(c).__name__}")
    problems: list[Problem] = []
    if type(version) is not int or version < 1:
        problems.append(Problem("INVALID_AGENT_VERSION", (repr(version),),
                                f"the agent version must be a positive integer, got {version!r}"))
    by_id: dict[Any, list[Capability]] = {}
    for c in caps:
        by_id.setdefault(c.id, []).append(c)
    for cid, same in by_id.items():
        if len(same) > 1:
            refs = tuple(sorted(c.ref for c in same))
            problems.append(Problem("DUPLICATE_CAPABILITY", refs, f"{len(same)} capabilities have the id {cid!r}"))
    # every capability is checked, duplicates included, in an order that does not depend on the
    # registration order (keeping only the first of each id made the problems depend on it)
    caps.sort(key=_sort_key)
    schemas: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    adapters: dict[str, Any] = {}
    for c in caps:
        _check_declaration(c, problems, schemas, outputs, adapters, registry)
    providers = _providers(caps, problems)
    order = _order(caps, problems)
    if problems:
        raise CompileError(problems)
    fingerprint = _fingerprint(version, caps, schemas, outputs)
    return CompiledAgent(version, tuple(order), freeze({str(f): p.id for f, p in providers.items()}),
                         freeze(schemas), fingerprint, FrozenDict(adapters))


def _sort_key(c: Capability) -> tuple[str, str, str]:
    # ids and versions are compared as text: a malformed one (an int id) must be reported, not crash the sort
    return (str(c.id), type(c.id).__name__, repr(c.version))


def _check_declaration(c: Capability, problems: list[Problem], schemas: dict[str, Any], outputs: dict[str, Any],
                       adapters: dict[str, Any], registry: Any) -> None:
    ref = c.ref
    if not isinstance(c.id, str) or not _ID.fullmatch(c.id):
        problems.append(Problem("INVALID_CAPABILITY_ID", (ref,), "an id is lower-case letters, digits, '_', '-' "
                                "and '.', starting with a letter"))
    if type(c.version) is not int or c.version < 1:
        problems.append(Problem("INVALID_CAPABILITY_VERSION", (ref,),
                                f"the version must be a positive integer, got {c.version!r}"))
    if c.effect == "write" and c.confirmation == "none":
        problems.append(Problem("WRITE_CONFIRMATION_REQUIRED", (ref,), "a write needs confirmation 'required' "
                                "(a person confirms first) or 'capability' (it asks for confirmation itself)"))
    schema, why, adapter = _json_schema(c.input, registry)
    root_type = _root(schema).get("type") if schema is not None else None
    if schema is None or root_type != "object":
        why = why or ("it has no input type" if c.input is None else
                      f"its input's JSON Schema is not an object (type {root_type!r})")
        problems.append(Problem("MODEL_SCHEMA_REQUIRED", (ref,),
                                f"the model proposes its input as a JSON object: {why}"))
    else:
        schemas[c.id] = schema
        adapters[c.id] = adapter
    if c.output is not None:
        out, why, _ = _json_schema(c.output, registry)
        if out is None:
            problems.append(Problem("INVALID_OUTPUT_SCHEMA", (ref,), why))
        else:
            outputs[c.id] = out


def _root(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema the root ``$ref`` points to (pydantic writes a recursive model as
    ``{"$defs": {...}, "$ref": "#/$defs/Node"}``), else ``schema`` itself."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(schema.get("$defs"), Mapping):
        target = schema["$defs"].get(ref[len("#/$defs/"):])
        if isinstance(target, Mapping):
            return dict(target)
    return schema


def _json_schema(tp: Any, registry: Any) -> tuple[dict[str, Any] | None, str, Any]:
    """``(schema, "", adapter)`` for ``tp``, or ``(None, why, None)``."""
    if tp is None:
        return None, "", None
    from seamkit._schemas import adapt

    try:
        adapter = adapt(dict(tp) if isinstance(tp, Mapping) else tp, registry=registry)
        schema = adapter.json_schema()
    except Exception as exc:  # no flavour for the type, or an invalid JSON Schema
        return None, f"{type(exc).__name__}: {exc}", None
    return (schema, "", adapter) if isinstance(schema, dict) else (None, "its schema is not a JSON object", None)


def _providers(caps: list[Capability], problems: list[Problem]) -> dict[FactType, Capability]:
    """The provider of each fact type; problems for ambiguous, missing and mismatched ones."""
    offered: dict[FactType, list[Capability]] = {}
    for c in caps:
        for f in dict.fromkeys(c.provides):
            offered.setdefault(f, []).append(c)
    providers: dict[FactType, Capability] = {}
    for f, ps in offered.items():
        if len(ps) > 1:
            refs = tuple(sorted(p.ref for p in ps))
            problems.append(Problem("AMBIGUOUS_FACT_PROVIDER", (str(f), *refs),
                                    f"{len(ps)} capabilities provide {f}: a fact type has one provider"))
        providers[f] = ps[0]
    by_name: dict[str, list[FactType]] = {}
    for f in offered:
        by_name.setdefault(f.name, []).append(f)
    for c in caps:
        for f in dict.fromkeys(c.requires):
            if f in offered:
                continue
            others = sorted(by_name.get(f.name, ()))
            if others:
                refs = tuple(sorted({p.ref for o in others for p in offered[o]}))
                problems.append(Problem("FACT_VERSION_MISMATCH", (c.ref, str(f), *refs),
                                        f"{c.ref} requires {f}, which is provided only as "
                                        f"{', '.join(map(str, others))}"))
            else:
                problems.append(Problem("MISSING_FACT_PROVIDER", (c.ref, str(f)),
                                        f"{c.ref} requires {f}, which no capability provides"))
    return providers


def _order(caps: list[Capability], problems: list[Problem]) -> list[Capability]:
    """The capabilities with every provider before its consumers (ties by id); problems for the
    members of each dependency cycle. An edge runs from *every* provider of a fact type to its
    consumers, so that a cycle through the second provider of an ambiguous fact is reported too."""
    offered: dict[FactType, list[int]] = {}
    for i, c in enumerate(caps):
        for f in c.provides:
            offered.setdefault(f, []).append(i)
    after: list[set[int]] = [set() for _ in caps]  # provider -> consumers
    for j, c in enumerate(caps):
        for f in c.requires:
            for i in offered.get(f, ()):
                after[i].add(j)
    for members in _cycles(after):
        refs = tuple(sorted(caps[i].ref for i in members))
        problems.append(Problem("CAPABILITY_DEPENDENCY_CYCLE", refs,
                                f"these capabilities need each other's facts: {' -> '.join(refs)}"))
    # Kahn's algorithm with a heap of ids: the same order whatever the registration order
    waiting = [0] * len(caps)
    for consumers in after:
        for j in consumers:
            waiting[j] += 1
    ready = [(_sort_key(caps[i]), i) for i in range(len(caps)) if waiting[i] == 0]
    heapq.heapify(ready)
    out: list[Capability] = []
    while ready:
        _, i = heapq.heappop(ready)
        out.append(caps[i])
        for j in after[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (_sort_key(caps[j]), j))
    return out


def _cycles(edges: list[set[int]]) -> list[list[int]]:
    """The strongly connected components of the graph that are cycles (two members or more, or
    one with an edge to itself): Tarjan's algorithm, iterative (no recursion limit)."""
    n = len(edges)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    found: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                members: list[int] = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    members.append(w)
                    if w == v:
                        break
                if len(members) > 1 or v in edges[v]:
                    found.append(sorted(members))
    return found


def _fingerprint(version: int, caps: list[Capability], schemas: dict[str, Any], outputs: dict[str, Any]) -> str:
    doc = {
        "version": version,
        "capabilities": [
            {
                "id": c.id, "version": c.version, "description": c.description, "effect": c.effect,
                "confirmation": c.confirmation,
                "requires": sorted(map(str, set(c.requires))), "provides": sorted(map(str, set(c.provides))),
                "invalidates": sorted(map(str, set(c.invalidates))),
                "input": thaw(schemas.get(c.id)), "output": thaw(outputs.get(c.id)),
                "guidance": [c.guidance.when_to_use, c.guidance.when_not_to_use, list(c.guidance.examples)],
            }
            for c in sorted(caps, key=lambda c: c.id)
        ],
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
