"""The checkpoint codec: typed values <-> JSON text with a schema version. No pickle.

``dumps(value)`` returns compact, ASCII-only JSON text ``{"v": 1, "data": ...}``; ``loads(text)``
returns a value equal to the original *and of the same type*, at every depth. ``encode(value)`` /
``decode(obj)`` do the same to and from JSON-able Python objects (``dumps`` / ``loads`` are
``json`` plus the version envelope around them).

What round-trips:

* ``None``, ``bool``, ``int`` (any size), ``float`` (``nan``, ``inf``, ``-inf``, ``-0.0`` too),
  ``str`` (any code point; the text is ASCII with ``\\u`` escapes; a string holding surrogate code
  points, which JSON readers would merge or reject, is stored as its ``surrogatepass`` UTF-8 bytes);
* ``list``, ``tuple``, ``dict`` (``str`` keys, and keys of any type the codec encodes), ``set``,
  ``frozenset``, :class:`~seamkit._frozen.FrozenDict`, :class:`~seamkit._frozen.FrozenList`;
* ``datetime`` (naive or aware; ``fold`` kept; ``datetime.timezone`` offsets and names and
  ``zoneinfo.ZoneInfo`` keys kept; any other ``tzinfo`` is stored as the fixed UTC offset it gives
  for that datetime), ``date``, ``time``, ``timedelta``;
* ``Decimal`` (exact digits and exponent, ``NaN``, ``sNaN``, ``Infinity``, ``-0``), ``bytes``
  (base64), ``uuid.UUID``;
* members of any ``Enum`` subclass (by name; ``Flag`` by value), instances of dataclasses (frozen
  and slotted ones included: seamkit's own values such as ``Message`` or ``Usage``) and of pydantic
  models (fields, extra fields and which fields were set; private attributes are not stored). Their
  fields are encoded recursively. Classes are named ``module:qualname`` and must be importable by
  that name.

The representation is JSON with tagged objects, e.g. ``{"$t": "dec", "v": "1.10"}``; a plain dict
whose keys are not all ``str`` or that has a ``"$t"`` key is stored as a list of pairs, so it
round-trips too. The text is deterministic: the same value gives the same text (dicts keep their
order, sets are sorted by their encoded form).

Errors: :class:`~seamkit.errors.CodecError` ``(path, reason)``, where ``path`` locates the value
(``$`` the root, ``.name`` an attribute or an identifier ``str`` key, ``[3]`` an index,
``[repr(key)]`` any other key), e.g. ``$.transcript[3].content[0].arguments.x``.

* encoding a value of an unsupported type (functions, files, generators, objects of other
  classes), a dict key the codec cannot encode, a class that is not importable by its name, a
  pydantic secret (reason ``secret values are not persisted``), or a cycle. Nothing is output.
* decoding text that is not JSON, has another schema version, an unknown tag, a malformed value, a
  class that cannot be imported, is no longer an ``Enum`` / dataclass / pydantic model, or whose
  fields no longer fit. ``loads`` never returns ``None`` or a raw dict in place of a typed value.
  Decoding imports the module a class names, and builds nothing but enums, dataclasses and pydantic
  models from it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import importlib
import json
import re
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo

from seamkit._frozen import FrozenDict, FrozenList
from seamkit._moved import current
from seamkit.errors import CodecError

__all__ = ["CODEC_VERSION", "MapEncoder", "decode", "dumps", "encode", "loads", "loads_frozen"]

CODEC_VERSION = 1
"""Schema version written in every payload (``{"v": 1, ...}``); other versions are refused."""

TAG = "$t"
_BIG = 1 << 1000  # larger ints are tagged (hex), so no JSON reader hits a digit limit
_MISSING = object()
_SURROGATE = re.compile("[\ud800-\udfff]").search


class _Fail(Exception):
    """Internal: a reason and the path segments collected while unwinding (innermost first)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.segments: list[str] = []

    def path(self, root: str = "$") -> str:
        return root + "".join(reversed(self.segments))


def _key_seg(key: Any) -> str:
    if type(key) is str and key.isidentifier():
        return "." + key
    return f"[{key!r}]"


def _type_name(t: type) -> str:
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


# --- encoding -------------------------------------------------------------------------------

_Encoder = Callable[[Any], Any]


def _enc(v: Any) -> Any:
    t = type(v)
    if t is str:  # isascii() is O(1); JSON would merge a high+low surrogate pair into one character
        return v if v.isascii() or _SURROGATE(v) is None else _enc_surrogates(v)
    if t is bool or v is None:
        return v
    if t is int:
        return v if -_BIG < v < _BIG else {TAG: "int", "v": format(v, "x")}
    if t is float:
        return v if v - v == 0.0 else {TAG: "float", "v": repr(v)}  # nan / inf / -inf
    f = _ENC.get(t)
    if f is not None:
        return f(v)
    return _enc_other(v, t)


def _enc_surrogates(v: str) -> Any:
    return {TAG: "str", "v": base64.b64encode(v.encode("utf-8", "surrogatepass")).decode("ascii")}


def _enc_items(v: Any) -> list[Any]:
    out: list[Any] = []
    app = out.append
    try:
        for x in v:
            app(_enc(x))
    except _Fail as e:
        e.segments.append(f"[{len(out)}]")
        raise
    return out


def _enc_map(v: dict[Any, Any]) -> dict[str, Any] | None:
    """The JSON object for a dict with plain ``str`` keys, or ``None`` when pairs are needed."""
    out: dict[str, Any] = {}
    k: Any = None
    try:
        for k, x in v.items():
            if type(k) is not str or not (k.isascii() or _SURROGATE(k) is None):
                return None
            out[k] = _enc(x)
    except _Fail as e:
        e.segments.append(_key_seg(k))
        raise
    return None if TAG in out else out


def _enc_pairs(v: dict[Any, Any]) -> list[list[Any]]:
    pairs: list[list[Any]] = []
    for k, x in v.items():
        try:
            ek = _enc(k)
        except _Fail as e:
            raise _Fail(f"a dict key cannot be encoded: {e.reason}") from None
        try:
            ex = _enc(x)
        except _Fail as e:
            e.segments.append(_key_seg(k))
            raise
        pairs.append([ek, ex])
    return pairs


def _enc_dict(v: dict[Any, Any]) -> Any:
    out = _enc_map(v)
    return out if out is not None else {TAG: "dict", "p": _enc_pairs(v)}


def _enc_fdict(v: FrozenDict) -> Any:
    out = _enc_map(v)
    return {TAG: "fdict", "v": out} if out is not None else {TAG: "fdict", "p": _enc_pairs(v)}


def _sort_key(encoded: Any) -> str:
    return json.dumps(encoded, separators=(",", ":"), sort_keys=True)


def _enc_set(v: set[Any] | frozenset[Any]) -> Any:
    items: list[Any] = []
    for x in v:
        try:
            items.append(_enc(x))
        except _Fail as e:
            raise _Fail(f"a set member cannot be encoded: {e.reason}") from None
    items.sort(key=_sort_key)
    return {TAG: "set" if type(v) is set else "fset", "v": items}


def _td_us(td: timedelta) -> int:
    return (td.days * 86400 + td.seconds) * 1_000_000 + td.microseconds


def _enc_tz(tz: tzinfo, at: datetime | None) -> list[Any]:
    tt = type(tz)
    if tt is timezone:
        args = tz.__getinitargs__()  # type: ignore[attr-defined]
        return ["fixed", _td_us(args[0]), args[1] if len(args) > 1 else None]
    if isinstance(tz, ZoneInfo) and tz.key is not None:
        return ["zone", tz.key]
    try:
        offset = tz.utcoffset(at)
    except Exception as exc:
        raise _Fail(f"tzinfo {_type_name(tt)} failed: {type(exc).__name__}") from None
    if offset is None:
        raise _Fail(f"tzinfo {_type_name(tt)} gives no UTC offset")
    return ["fixed", _td_us(offset), None]


def _enc_datetime(v: datetime) -> Any:
    out: dict[str, Any] = {TAG: "dt", "v": v.replace(tzinfo=None).isoformat()}
    if v.tzinfo is not None:
        out["z"] = _enc_tz(v.tzinfo, v)
    if v.fold:
        out["f"] = 1
    return out


def _enc_time(v: time) -> Any:
    out: dict[str, Any] = {TAG: "time", "v": v.replace(tzinfo=None).isoformat()}
    if v.tzinfo is not None:
        out["z"] = _enc_tz(v.tzinfo, None)
    if v.fold:
        out["f"] = 1
    return out


_ENC: dict[type, _Encoder] = {
    list: _enc_items,
    tuple: lambda v: {TAG: "tuple", "v": _enc_items(v)},
    dict: _enc_dict,
    FrozenDict: _enc_fdict,
    FrozenList: lambda v: {TAG: "flist", "v": _enc_items(v)},
    set: _enc_set,
    frozenset: _enc_set,
    Decimal: lambda v: {TAG: "dec", "v": str(v)},
    bytes: lambda v: {TAG: "bytes", "v": base64.b64encode(v).decode("ascii")},
    uuid.UUID: lambda v: {TAG: "uuid", "v": str(v)},
    datetime: _enc_datetime,
    date: lambda v: {TAG: "date", "v": v.isoformat()},
    time: _enc_time,
    timedelta: lambda v: {TAG: "td", "v": [v.days, v.seconds, v.microseconds]},
}
"""Encoder per exact type; classes (enums, dataclasses, models) are added on first sight."""


def _class_name(cls: type) -> str:
    """``module:qualname`` of ``cls``, checked to resolve back to ``cls``."""
    name = f"{cls.__module__}:{cls.__qualname__}"
    try:
        found = _resolve(name)
    except _Fail:
        found = None
    if found is not cls:
        raise _Fail(f"class {name} is not importable by its name (defined in a function, or replaced?)")
    return name


def _secret_types() -> tuple[type, ...]:
    pyd = sys.modules.get("pydantic")
    if pyd is None:
        return ()
    base = getattr(sys.modules.get("pydantic.types"), "_SecretBase", None)
    if isinstance(base, type):
        return (base,)
    found = (getattr(pyd, n, None) for n in ("SecretStr", "SecretBytes", "Secret"))
    return tuple(t for t in found if isinstance(t, type))


def _enc_other(v: Any, t: type) -> Any:
    if isinstance(v, enum.Enum):
        f = _enum_encoder(t)
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        f = _dataclass_encoder(t)
    else:
        pyd = sys.modules.get("pydantic")
        if pyd is not None and isinstance(v, pyd.BaseModel):
            f = _model_encoder(t)
        else:
            secrets = _secret_types()
            if (secrets and isinstance(v, secrets)) or "Secret" in t.__name__:  # unsupported anyway
                raise _Fail("secret values are not persisted")
            raise _Fail(f"a value of type {_type_name(t)} cannot be encoded")
    _ENC[t] = f
    return f(v)


def _enum_encoder(cls: type) -> _Encoder:
    name = _class_name(cls)
    if issubclass(cls, enum.Flag):
        return lambda v: {TAG: "enum", "c": name, "v": _enc(v.value)}
    return lambda v: {TAG: "enum", "c": name, "n": v.name}


def _dataclass_encoder(cls: type) -> _Encoder:
    name = _class_name(cls)
    names = tuple(f.name for f in dataclasses.fields(cls))

    def enc(v: Any) -> Any:
        out: dict[str, Any] = {}
        n = ""
        try:
            for n in names:
                out[n] = _enc(getattr(v, n))
        except _Fail as e:
            e.segments.append("." + n)
            raise
        except AttributeError:
            raise _Fail(f"field {n!r} of {name} is not set") from None
        return {TAG: "dc", "c": name, "f": out}

    return enc


def _model_encoder(cls: type) -> _Encoder:
    name = _class_name(cls)
    names = tuple(cls.model_fields)  # type: ignore[attr-defined]
    all_names = frozenset(names)

    def enc(v: Any) -> Any:
        out: dict[str, Any] = {}
        n = ""
        try:
            for n in names:
                out[n] = _enc(getattr(v, n))
        except _Fail as e:
            e.segments.append("." + n)
            raise
        obj: dict[str, Any] = {TAG: "pyd", "c": name, "f": out}
        extra = v.__pydantic_extra__
        if extra:
            obj["x"] = _enc_dict(extra)
        unset = all_names - v.__pydantic_fields_set__
        if unset:
            obj["u"] = sorted(unset)
        return obj

    return enc


def _encode_checked(value: Any) -> Any:
    try:
        return _enc(value)
    except _Fail as e:
        raise CodecError(e.path(), e.reason) from None
    except RecursionError:
        raise CodecError("$", "the value nests too deeply or contains a reference cycle") from None


def encode(value: Any) -> Any:
    """``value`` as JSON-able Python data (dicts with ``str`` keys, lists, str, int, float, bool,
    None), without the version envelope. Raises :class:`~seamkit.errors.CodecError` naming the path
    of the first value that cannot be encoded."""
    return _encode_checked(value)


_JSON_OUT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False, check_circular=False)


def dumps(value: Any) -> str:
    """JSON text ``{"v": CODEC_VERSION, "data": <encoded value>}`` (compact, ASCII, deterministic).
    Raises :class:`~seamkit.errors.CodecError` (path, reason) when part of ``value`` cannot be
    encoded; nothing is returned then."""
    return _JSON_OUT.encode({"v": CODEC_VERSION, "data": _encode_checked(value)})


_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None), Decimal})
#: Types whose objects `_unchanging` accepts from the type alone.
_UNCHANGING_TYPES: frozenset[type] = _SCALARS | {FrozenDict, FrozenList}


#: Modules whose frozen dataclasses hold only frozen values (deeply frozen by construction). Other
#: frozen dataclasses may hold a mutable field (``frozen=True`` is shallow): encoded each time.
_DEEPLY_FROZEN_MODULES = frozenset({"seamkit.values", "seamkit._durability.approvals", "seamkit._durability.ledger"})


def _unchanging(v: Any) -> bool:
    """Whether ``v`` cannot change after it was encoded, so the same object encodes to the same
    text later: scalars, deeply frozen containers and seamkit's own deeply frozen values (a
    :class:`~seamkit.values.Usage`, a :class:`~seamkit.values.Scope`, an approval...)."""
    t = type(v)
    if t in _UNCHANGING_TYPES:
        return True
    params = getattr(t, "__dataclass_params__", None)
    return params is not None and params.frozen and t.__module__ in _DEEPLY_FROZEN_MODULES


def _same(new: Any, old: Any) -> bool:
    """Whether ``new`` encodes exactly as ``old`` did without encoding it: the same unchanging
    object, or a ``list`` / ``tuple`` whose items are, one by one, the same unchanging objects as
    ``old`` (a tuple snapshot of the list encoded before: a list the caller mutated since is
    compared item by item, never trusted by identity)."""
    if new is old:
        return _unchanging(new)
    t = type(new)
    if (t is list or t is tuple) and type(old) is tuple and len(new) == len(old):
        return all(a is b and _unchanging(a) for a, b in zip(new, old, strict=True))
    return False


class MapEncoder:
    """:func:`dumps` of a ``str``-keyed mapping that is saved again and again with few keys
    changed (a run's state): each key's JSON fragment is kept, and a value that is the same
    unchanging object as last time (or a list of the same unchanging objects) is not encoded
    again. The text is exactly ``dumps(dict(mapping))``. ``encoded``: how many values were encoded
    (not reused) so far, for tests. One encoder per writer (not thread-safe)."""

    __slots__ = ("_keys", "_parts", "encoded")

    def __init__(self) -> None:
        # key -> (the value as compared next time, its type, its JSON fragment with the key:
        # '"key":<json>'); the type because a list is kept as a tuple snapshot, and a list and a
        # tuple of the same items encode differently (a tuple is tagged)
        self._parts: dict[str, tuple[Any, type, str]] = {}
        self._keys: dict[str, str] = {}  # key -> its JSON text with the colon
        self.encoded = 0

    def dumps(self, mapping: Any) -> str:
        """The codec text of ``dict(mapping)``. Raises :class:`~seamkit.errors.CodecError` naming
        the path (``$.key...``) of a value that cannot be encoded."""
        parts = self._parts
        out: list[str] = []
        app = out.append
        fresh = 0
        for k, v in mapping.items():
            part = parts.get(k)  # (only plain ASCII str keys other than TAG are ever kept)
            if part is None and (type(k) is not str or not k.isascii() or k == TAG):
                self.encoded += len(mapping)
                return dumps(dict(mapping))  # stored as pairs (see _enc_dict): not worth caching
            if part is not None:
                old, kind, fragment = part
                # (inline for the common case, the same scalar or frozen container as last time:
                # most keys of a state at every save; `_same` decides every other case)
                if (old is v and type(v) in _UNCHANGING_TYPES) or (type(v) is kind and _same(v, old)):
                    app(fragment)
                    continue
            if type(v) is int and -_BIG < v < _BIG:
                text = repr(v)  # (a counter, such as the step, changes at every save: no encoders)
            else:
                try:
                    data = _enc(v)
                except _Fail as e:
                    e.segments.append(_key_seg(k))
                    raise CodecError(e.path(), e.reason) from None
                except RecursionError:
                    raise CodecError(f"$.{k}", "the value nests too deeply or contains a reference cycle") from None
                text = _JSON_OUT.encode(data)
            fresh += 1
            head = self._keys.get(k)
            if head is None:
                head = self._keys[k] = _JSON_OUT.encode(k) + ":"
            # kept with its key: a value reused next time costs one append
            fragment = head + text
            parts[k] = (tuple(v) if type(v) is list else v, type(v), fragment)
            app(fragment)
        self.encoded += fresh
        return f'{{"v":{CODEC_VERSION},"data":{{{",".join(out)}}}}}'


# --- decoding -------------------------------------------------------------------------------

_Decoder = Callable[[dict[str, Any]], Any]


_PARSED: dict[str, tuple[str, tuple[str, ...]]] = {}


def _resolve(name: Any) -> type:
    """The class ``module:qualname`` names (importing the module if needed). Looked up on every
    call (only the parsed name is cached), so a class replaced in its module is noticed."""
    parsed = _PARSED.get(name) if type(name) is str else None
    if parsed is None:
        if type(name) is not str or name.count(":") != 1:
            raise _Fail(f"malformed class name {name!r}")
        module_name, qualname = name.split(":")
        module_name = current(module_name)  # a value stored before its module was renamed
        parts = tuple(qualname.split("."))
        if not module_name or not all(p.isidentifier() for p in parts):
            raise _Fail(f"class {name} is not importable by its name")
        parsed = (module_name, parts)
    module = sys.modules.get(parsed[0])
    if module is None:
        try:
            module = importlib.import_module(parsed[0])
        except Exception as exc:
            raise _Fail(f"cannot import module {parsed[0]!r} for class {name}: {type(exc).__name__}") from None
    obj: Any = module
    for p in parsed[1]:
        obj = getattr(obj, p, _MISSING)
        if obj is _MISSING:
            raise _Fail(f"class {name} not found")
    if not isinstance(obj, type):
        raise _Fail(f"{name} is not a class")
    _PARSED[name] = parsed  # only names that resolved: junk payloads cannot grow the cache
    return obj


def _str(d: dict[str, Any], key: str = "v") -> str:
    v = d.get(key)
    if type(v) is not str:
        raise _Fail(f"malformed {d.get(TAG)!r}: {key!r} must be a string")
    return v


def _list(d: dict[str, Any], key: str = "v") -> list[Any]:
    v = d.get(key)
    if type(v) is not list:
        raise _Fail(f"malformed {d.get(TAG)!r}: {key!r} must be a list")
    return v


def _pairs(d: dict[str, Any]) -> list[tuple[Any, Any]]:
    out: list[tuple[Any, Any]] = []
    for p in _list(d, "p"):
        if type(p) is not list or len(p) != 2:
            raise _Fail(f"malformed {d.get(TAG)!r}: pairs must be [key, value] lists")
        out.append((p[0], p[1]))
    return out


def _dec_dict(d: dict[str, Any]) -> Any:
    try:
        return dict(_pairs(d))
    except TypeError as exc:
        raise _Fail(f"unhashable dict key: {exc}") from None


def _dec_fdict(d: dict[str, Any]) -> Any:
    if "p" in d:
        try:
            return FrozenDict(_pairs(d))
        except TypeError as exc:
            raise _Fail(f"unhashable dict key: {exc}") from None
    v = d.get("v")
    if type(v) is not dict:
        raise _Fail("malformed 'fdict': 'v' must be an object")
    return FrozenDict(v)


def _dec_set(d: dict[str, Any]) -> Any:
    try:
        return (set if d[TAG] == "set" else frozenset)(_list(d))
    except TypeError as exc:
        raise _Fail(f"unhashable set member: {exc}") from None


def _dec_int(d: dict[str, Any]) -> Any:
    try:
        return int(_str(d), 16)
    except ValueError:
        raise _Fail("malformed 'int'") from None


def _dec_float(d: dict[str, Any]) -> Any:
    v = _str(d)
    if v not in ("nan", "inf", "-inf"):
        raise _Fail(f"malformed 'float': {v!r}")
    return float(v)


def _dec_decimal(d: dict[str, Any]) -> Any:
    try:
        return Decimal(_str(d))
    except InvalidOperation:
        raise _Fail("malformed 'dec'") from None


def _dec_bytes(d: dict[str, Any]) -> Any:
    try:
        return base64.b64decode(_str(d), validate=True)
    except (binascii.Error, ValueError):
        raise _Fail("malformed 'bytes': not base64") from None


def _dec_str(d: dict[str, Any]) -> Any:
    try:
        return base64.b64decode(_str(d), validate=True).decode("utf-8", "surrogatepass")
    except (binascii.Error, ValueError):
        raise _Fail("malformed 'str'") from None


def _dec_uuid(d: dict[str, Any]) -> Any:
    try:
        return uuid.UUID(_str(d))
    except ValueError:
        raise _Fail("malformed 'uuid'") from None


def _dec_tz(spec: Any) -> tzinfo:
    try:
        if type(spec) is list and len(spec) == 3 and spec[0] == "fixed" and type(spec[1]) is int:
            offset = timedelta(microseconds=spec[1])
            if spec[2] is None:
                return timezone(offset)
            if type(spec[2]) is str:
                return timezone(offset, spec[2])
        elif type(spec) is list and len(spec) == 2 and spec[0] == "zone" and type(spec[1]) is str:
            return ZoneInfo(spec[1])
    except Exception as exc:  # ValueError (offset range), ZoneInfoNotFoundError, ...
        raise _Fail(f"bad time zone {spec!r}: {type(exc).__name__}: {exc}") from None
    raise _Fail(f"malformed time zone {spec!r}")


def _fold(d: dict[str, Any]) -> int:
    f = d.get("f", 0)
    if type(f) is not int or f not in (0, 1):
        raise _Fail("malformed fold")
    return f


def _dec_clock(d: dict[str, Any], parse: Callable[[str], Any], tag: str) -> Any:
    """A ``dt`` or ``time`` value: ISO text without offset, its tzinfo in ``z``, its ``fold``."""
    try:
        v = parse(_str(d))
    except ValueError:
        raise _Fail(f"malformed '{tag}'") from None
    if v.tzinfo is not None:
        raise _Fail(f"malformed '{tag}': offset in the text")
    z = d.get("z")
    return v.replace(tzinfo=None if z is None else _dec_tz(z), fold=_fold(d))


def _dec_datetime(d: dict[str, Any]) -> Any:
    return _dec_clock(d, datetime.fromisoformat, "dt")


def _dec_time(d: dict[str, Any]) -> Any:
    return _dec_clock(d, time.fromisoformat, "time")


def _dec_date(d: dict[str, Any]) -> Any:
    try:
        return date.fromisoformat(_str(d))
    except ValueError:
        raise _Fail("malformed 'date'") from None


def _dec_timedelta(d: dict[str, Any]) -> Any:
    v = _list(d)
    if len(v) != 3 or any(type(x) is not int for x in v):
        raise _Fail("malformed 'td'")
    try:
        return timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    except OverflowError:
        raise _Fail("malformed 'td': out of range") from None


def _dec_enum(d: dict[str, Any]) -> Any:
    cls = _resolve(d.get("c"))
    if not issubclass(cls, enum.Enum):
        raise _Fail(f"{d['c']} is not an Enum")
    if "n" in d:
        member = cls.__members__.get(_str(d, "n"))
        if member is None:
            raise _Fail(f"{d['c']} has no member {d['n']!r}")
        return member
    if "v" not in d:
        raise _Fail("malformed 'enum'")
    try:
        return cls(d["v"])
    except (ValueError, TypeError):
        raise _Fail(f"{d['c']} has no member with value {d['v']!r}") from None


_DC_INFO: dict[type, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {}


def _dc_info(cls: type) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(all field names, init field names, required init field names) of a dataclass."""
    fields = dataclasses.fields(cls)
    info = (
        frozenset(f.name for f in fields),
        frozenset(f.name for f in fields if f.init),
        frozenset(
            f.name
            for f in fields
            if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ),
    )
    _DC_INFO[cls] = info
    return info


def _fields(d: dict[str, Any]) -> dict[str, Any]:
    f = d.get("f")
    if type(f) is not dict:
        raise _Fail(f"malformed {d.get(TAG)!r}: 'f' must be an object")
    return f


def _dec_dataclass(d: dict[str, Any]) -> Any:
    name = d.get("c")
    cls = _resolve(name)
    info = _DC_INFO.get(cls)
    if info is None:
        if not dataclasses.is_dataclass(cls):
            raise _Fail(f"{name} is not a dataclass")
        info = _dc_info(cls)
    fields = _fields(d)
    all_names, init_names, required = info
    keys = fields.keys()
    try:
        if keys == init_names:  # the common case: every init field, nothing else
            return cls(**fields)
        unknown = keys - all_names
        if unknown:
            raise _Fail(f"{name} has no field(s) {sorted(unknown)} (the class changed?)")
        missing = required - keys
        if missing:
            raise _Fail(f"{name} needs field(s) {sorted(missing)} the payload lacks (the class changed?)")
        obj = cls(**{k: v for k, v in fields.items() if k in init_names})
        for k, v in fields.items():
            if k not in init_names:
                object.__setattr__(obj, k, v)
        return obj
    except _Fail:
        raise
    except Exception as exc:
        raise _Fail(f"cannot rebuild {name}: {type(exc).__name__}: {exc}") from None


def _dec_model(d: dict[str, Any]) -> Any:
    name = d.get("c")
    cls: Any = _resolve(name)
    pyd = sys.modules.get("pydantic")
    if pyd is None or not issubclass(cls, pyd.BaseModel):
        raise _Fail(f"{name} is not a pydantic model")
    fields = _fields(d)
    known = cls.model_fields
    unknown = fields.keys() - known.keys()
    if unknown:
        raise _Fail(f"{name} has no field(s) {sorted(unknown)} (the class changed?)")
    extra = d.get("x", {})
    unset = d.get("u", [])
    if type(extra) is not dict or type(unset) is not list or any(type(u) is not str for u in unset):
        raise _Fail("malformed 'pyd'")
    try:
        if issubclass(cls, pyd.RootModel):
            obj = cls.model_validate(fields.get("root"))
        else:
            obj = cls.model_validate({**extra, **fields}, by_name=True)
        if unset:
            object.__setattr__(obj, "__pydantic_fields_set__", set(obj.__pydantic_fields_set__) - set(unset))
        return obj
    except Exception as exc:  # pydantic.ValidationError and anything a validator raises
        raise _Fail(f"cannot rebuild {name}: {type(exc).__name__}: {exc}") from None


_DEC: dict[str, _Decoder] = {
    "tuple": lambda d: tuple(_list(d)),
    "flist": lambda d: FrozenList(_list(d)),
    "dict": _dec_dict,
    "fdict": _dec_fdict,
    "set": _dec_set,
    "fset": _dec_set,
    "int": _dec_int,
    "float": _dec_float,
    "dec": _dec_decimal,
    "bytes": _dec_bytes,
    "str": _dec_str,
    "uuid": _dec_uuid,
    "dt": _dec_datetime,
    "date": _dec_date,
    "time": _dec_time,
    "td": _dec_timedelta,
    "enum": _dec_enum,
    "dc": _dec_dataclass,
    "pyd": _dec_model,
}


def _hook(d: dict[str, Any]) -> Any:
    tag = d.get(TAG, _MISSING)
    if tag is _MISSING:
        return d
    f = _DEC.get(tag) if type(tag) is str else None
    if f is None:
        raise _Fail(f"unknown tag {tag!r}")
    try:
        return f(d)
    except (_Fail, RecursionError):
        raise
    except Exception as exc:  # whatever a class's own code raises while rebuilding: still a CodecError
        raise _Fail(f"cannot decode {tag!r}: {type(exc).__name__}: {exc}") from None


_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))


def _fast(node: Any) -> Any:
    """Decode JSON-able data bottom-up (like ``json.loads``' ``object_hook``), no paths kept."""
    t = type(node)
    if t is list:
        return [_fast(x) for x in node]
    if t is dict:
        return _hook({k: _fast(x) for k, x in node.items()})
    if t in _JSON_SCALARS:
        return node
    raise _Fail(f"not JSON data: {_type_name(t)}")


def _walk(node: Any, path: str) -> Any:
    """Like :func:`_fast`, but raises :class:`CodecError` with the path of the first bad node."""
    t = type(node)
    if t is list:
        return [_walk(x, f"{path}[{i}]") for i, x in enumerate(node)]
    if t in _JSON_SCALARS:
        return node
    if t is not dict:
        raise CodecError(path, f"not JSON data: {_type_name(t)}")
    for k in node:
        if type(k) is not str:
            raise CodecError(path, "not JSON data: object keys must be strings")
    if TAG not in node:
        return {k: _walk(x, path + _key_seg(k)) for k, x in node.items()}
    out: dict[str, Any] = {}
    for m, x in node.items():
        if m == "p" and type(x) is list:
            pairs: list[Any] = []
            for i, pair in enumerate(x):
                if type(pair) is list and len(pair) == 2:
                    key = _walk(pair[0], f"{path}[{i}]")
                    try:
                        seg = _key_seg(key)
                    except Exception:
                        seg = f"[{i}]"
                    pairs.append([key, _walk(pair[1], path + seg)])
                else:
                    pairs.append(pair)
            out[m] = pairs
        else:
            out[m] = _walk(x, path)  # tag members map onto the value's own path (.field, [i], [key])
    try:
        return _hook(out)
    except _Fail as e:
        raise CodecError(e.path(path), e.reason) from None


def _decode_data(data: Any) -> Any:
    try:
        return _fast(data)
    except (_Fail, RecursionError):
        pass
    try:
        _walk(data, "$")
    except RecursionError:
        raise CodecError("$", "the payload nests too deeply") from None
    raise CodecError("$", "the payload could not be decoded")  # pragma: no cover - _walk finds it


def decode(obj: Any) -> Any:
    """The value :func:`encode` turned into ``obj``. Raises :class:`~seamkit.errors.CodecError`
    (path, reason) when ``obj`` is not a valid encoding; never returns raw tagged data."""
    return _decode_data(obj)


def _reject_constant(name: str) -> Any:
    raise _Fail(f"JSON constant {name} is not allowed")


_JSON_IN = json.JSONDecoder(object_hook=_hook, parse_constant=_reject_constant)
_JSON_RAW = json.JSONDecoder(parse_constant=_reject_constant)


def _check_envelope(doc: Any) -> Any:
    if type(doc) is not dict or "data" not in doc or "v" not in doc:
        raise CodecError("$", 'not a codec payload (expected {"v": ..., "data": ...})')
    v = doc["v"]
    if type(v) is not int or v != CODEC_VERSION:
        raise CodecError("$", f"unsupported codec version {v!r} (this seamkit reads version {CODEC_VERSION})")
    return doc["data"]


def loads(text: str | bytes) -> Any:
    """The value :func:`dumps` wrote into ``text``: equal and of the same type at every depth.

    Raises :class:`~seamkit.errors.CodecError` (path, reason) for text that is not JSON, another
    schema version, an unknown tag, a malformed value, or a class that is missing or no longer
    fits the payload."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise CodecError("$", f"expected JSON text, got {_type_name(type(text))}")
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise CodecError("$", "payload is not UTF-8") from None
    try:
        doc = _JSON_IN.decode(text)
    except (_Fail, RecursionError, ValueError):
        pass  # re-parse without the hook to report the path (and check the envelope first)
    else:
        if type(doc) is dict and type(doc.get("v")) is int and doc["v"] == CODEC_VERSION and len(doc) == 2:
            return doc["data"] if "data" in doc else _check_envelope(doc)
    try:
        raw = _JSON_RAW.decode(text)
    except json.JSONDecodeError as exc:
        raise CodecError("$", f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except _Fail as e:
        raise CodecError("$", e.reason) from None
    except RecursionError:
        raise CodecError("$", "the payload nests too deeply") from None
    return _decode_data(_check_envelope(raw))


class _FrozenTexts:
    """Texts -> their decoded immutable values, least recently used out first, bounded by the total
    length of the texts kept (characters)."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.values: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, text: str) -> Any:
        with self.lock:
            value = self.values.get(text, _MISSING)
            if value is not _MISSING:
                self.values.move_to_end(text)
            return value

    def put(self, text: str, value: Any) -> None:
        if len(text) > self.max_chars // 8:  # one huge text would push everything else out
            return
        with self.lock:
            if text in self.values:
                return
            self.values[text] = value
            self.chars += len(text)
            while self.chars > self.max_chars:
                old, _ = self.values.popitem(last=False)
                self.chars -= len(old)


_FROZEN = _FrozenTexts(8_000_000)


def loads_frozen(text: str) -> Any:
    """:func:`loads` for a text whose value is immutable (a frozen dataclass such as a
    :class:`~seamkit.values.Message` or a capability fact): a text decoded before returns the value
    decoded then, from a bounded in-process cache (texts up to 8 million characters in all, least
    recently used out first), so a conversation continued in the same process does not decode its
    history again. Callers share the value: never use it for text whose value may be mutated (a
    dict, a list). Raises what :func:`loads` raises."""
    value = _FROZEN.get(text) if isinstance(text, str) else _MISSING
    if value is _MISSING:
        value = loads(text)
        if isinstance(text, str):
            _FROZEN.put(text, value)
    return value
