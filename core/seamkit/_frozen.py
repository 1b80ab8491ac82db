"""Deeply frozen containers.

``FrozenDict`` and ``FrozenList`` are real ``dict`` / ``list`` subclasses, so ``json.dumps``,
``dataclasses.asdict``, ``copy.deepcopy``, ``pickle`` and ``isinstance(x, dict)`` keep working,
while every mutating method raises ``TypeError``. ``freeze()`` copies the caller's data, so later
changes to the original never leak into a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, SupportsIndex, TypeVar

__all__ = ["FrozenDict", "FrozenList", "freeze", "thaw"]

_T = TypeVar("_T")


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable")


class FrozenDict(dict[str, Any]):
    """A ``dict`` whose contents (at every depth, when built by :func:`freeze`) cannot change.

    Hashable: the hash is computed from the items (values must be hashable, which frozen
    payloads are). Mutation raises ``TypeError``.
    """

    # No __init__ of our own: dict's C constructor keeps building one (e.g. by the JSON decoder's
    # object_pairs_hook) cheap. The hash is computed on demand; values rarely need it.
    __slots__ = ()

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        # dict's default pickling re-adds items through __setitem__, which we forbid.
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __or__(self, other: Mapping[str, Any]) -> FrozenDict:  # type: ignore[override]
        merged: FrozenDict = freeze({**self, **other})
        return merged


class FrozenList(list[Any]):
    """A ``list`` that cannot change. Hashable like a tuple. Mutation raises ``TypeError``."""

    __slots__ = ()

    __setitem__ = _immutable
    __delitem__ = _immutable
    __iadd__ = _immutable
    __imul__ = _immutable
    append = _immutable
    extend = _immutable
    insert = _immutable
    pop = _immutable
    remove = _immutable
    clear = _immutable
    sort = _immutable
    reverse = _immutable

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"

    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        if isinstance(index, slice):
            return FrozenList(list.__getitem__(self, index))
        return list.__getitem__(self, index)


_SCALARS = (str, int, float, bool, type(None), bytes)


def freeze(value: Any) -> Any:
    """Return a deeply frozen copy of ``value``.

    ``dict``/``Mapping`` become :class:`FrozenDict` (keys must be ``str``), ``list``/``tuple``/
    ``set`` become :class:`FrozenList` (sets sorted by ``repr`` for determinism is not attempted:
    sets are rejected), scalars are returned as they are, and already frozen values are returned
    without copying. Frozen dataclasses and other hashable objects pass through unchanged.

    Raises ``TypeError`` for a mapping with a non-``str`` key, a ``set``, or an unhashable object
    that is neither a mapping nor a sequence.
    """
    t = type(value)
    if t in _SCALARS or t is FrozenDict or t is FrozenList:
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise TypeError(f"frozen mappings need str keys, got {type(k).__name__}: {k!r}")
            out[k] = freeze(v)
        return FrozenDict(out)
    if isinstance(value, (list, tuple)):
        return FrozenList([freeze(v) for v in value])
    if isinstance(value, (set, frozenset)):
        raise TypeError("sets have no stable order; pass a list")
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"cannot freeze a value of type {t.__name__}") from None
    return value


def thaw(value: Any) -> Any:
    """Return a plain, mutable deep copy of a frozen value (``dict``/``list`` all the way down)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


def fast_init(
    cls: type[_T] | None = None, /, *, coerce: Mapping[str, tuple[Any, Callable[[Any], Any]]] | None = None
) -> Any:
    """Give a frozen, slotted dataclass a faster ``__init__``.

    The generated ``__init__`` of a frozen dataclass sets each field through
    ``object.__setattr__``; this one calls each slot descriptor's ``__set__`` directly (about 40%
    faster on CPython 3.11), with the same parameters, defaults and ``__post_init__`` call. Values
    are built on every turn of every run, so this is on the hot path. Apply it *outside*
    ``@dataclass(frozen=True, slots=True)``.

    ``coerce`` maps a field to ``(accept, fn)``, checked inline (no extra frame): when ``accept``
    is a type, a value of another exact type is replaced by ``fn(value)``; a ``tuple`` of types
    accepts any of them; a ``frozenset`` accepts its members (``fn`` typically raises). The class
    also gets ``__fast_new__(*fields)``, which skips coercion and ``__post_init__``: only for
    values already known to be valid.

    Fields with ``default_factory``, ``init=False`` or ``kw_only`` raise ``TypeError``.
    """
    if cls is None:
        return lambda c: _fast_init(c, coerce or {})
    return _fast_init(cls, coerce or {})


def _fast_init(cls: type[_T], coerce: Mapping[str, tuple[Any, Callable[[Any], Any]]]) -> type[_T]:
    import dataclasses

    params: list[str] = []
    names: list[str] = []
    checks: list[str] = []
    sets: list[str] = []
    globs: dict[str, Any] = {"_object_new": object.__new__, "_cls": cls, "_type": type}  # fields may be named `type`
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.default_factory is not dataclasses.MISSING or f.kw_only:
            raise TypeError(f"fast_init cannot handle field {cls.__name__}.{f.name}")
        globs[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        names.append(f.name)
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            globs[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        if f.name in coerce:
            accept, fn = coerce[f.name]
            globs[f"_a_{f.name}"], globs[f"_c_{f.name}"] = accept, fn
            if isinstance(accept, frozenset):
                test = f"{f.name} not in _a_{f.name}"
            elif isinstance(accept, tuple):
                test = f"_type({f.name}) not in _a_{f.name}"
            else:
                test = f"_type({f.name}) is not _a_{f.name}"
            checks.append(f"    if {test}:\n        {f.name} = _c_{f.name}({f.name})")
        sets.append(f"    _set_{f.name}(self, {f.name})")
    unknown = set(coerce) - set(names)
    if unknown:
        raise TypeError(f"fast_init: {cls.__name__} has no fields {sorted(unknown)}")
    post = ["    self.__post_init__()"] if hasattr(cls, "__post_init__") else []
    init_src = f"def __init__(self, {', '.join(params)}):\n" + "\n".join([*checks, *sets, *post] or ["    pass"])
    new_src = f"def __fast_new__({', '.join(names)}):\n    self = _object_new(_cls)\n" + "\n".join(sets)
    src = init_src + "\n" + new_src + "\n    return self\n"
    exec(src, globs)
    init = globs["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    cls.__fast_new__ = staticmethod(globs["__fast_new__"])  # type: ignore[attr-defined]
    return cls
