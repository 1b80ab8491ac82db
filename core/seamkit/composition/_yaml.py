"""Reading a composition's YAML into plain data, remembering where every value was written.

PyYAML composes the text into nodes (which keep their ``start_mark``); the Python values are built
here, not by PyYAML's constructors, so that:

- every key path gets a 1-based ``(line, column)`` for error messages;
- plain scalars resolve with YAML-1.2-core-like rules (see :func:`resolve_plain`), never
  YAML 1.1's surprises (``NO`` as ``False``, ``3.10`` as ``3.1``, ``0755`` as 493, ``1:30`` as 90);
- duplicate keys, explicit tags (``!!python/object``...) and merge keys are reported, not
  silently accepted;
- ``${NAME}`` / ``${NAME:-default}`` references in string scalars are replaced from the
  environment (:func:`interpolate`), and the values that came from it are remembered as secrets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from seamkit._plugins.redact import is_secret_name

__all__ = [
    "AliasUse",
    "Document",
    "Interpolated",
    "KeyPath",
    "Position",
    "Problem",
    "MAX_CHARACTERS",
    "MAX_DEPTH",
    "MAX_SHOWN",
    "MAX_VALUES",
    "YAML11_BOOLEANS",
    "clip",
    "format_path",
    "interpolate",
    "parse_yaml",
    "resolve_plain",
    "shown",
]

KeyPath = tuple[str | int, ...]

_PLAIN_TAG = "tag:seamkit.dev,2025:plain"
_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"

#: Words YAML 1.1 reads as booleans (besides true/false); refused when written unquoted.
YAML11_BOOLEANS = frozenset({"yes", "no", "on", "off", "y", "n"})

_NULLS = frozenset({"", "~", "null"})
_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_REF = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_REF_BODY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
#: Most values a document may hold, aliases expanded (a composition holds a few hundred).
MAX_VALUES = 200_000
#: Most characters the scalars of a document (keys included) may add up to, aliases expanded.
#: Counting values alone lets one alias to a long text through: a 0.9 MB file that anchors a
#: 900 KB string and uses it 300 times stands for 270 MB, which every later step (checks, error
#: messages, the request a provider gets) copies. A composition is a few KB; the file itself is
#: capped at 1 MiB (``loader.MAX_FILE_BYTES``), so 4 million characters always holds the written
#: text and leaves room for aliases to repeat a few long shared blocks. Other loaders: PyYAML and
#: ruamel.yaml have no limit (they share the aliased object, and leave the cost to whoever copies
#: it); go-yaml v2/v3 (used by Kubernetes through sigs.k8s.io/yaml) count decode operations only
#: (up to 400,000, 99% of which may come from aliases: ``allowedAliasRatio`` in decode.go);
#: SnakeYAML caps aliases to collections (50) and the input (3 MB of code points), not aliases to
#: scalars. None counts the characters an alias stands for, so the limit is ours: of the same
#: order as go-yaml's ceiling of 4,000,000 decode operations ("~5MB of dense object declarations").
MAX_CHARACTERS = 4_000_000
#: Longest piece of a value that an error message repeats, in characters (see :func:`clip`).
MAX_SHOWN = 200
#: Deepest nesting of mappings and lists accepted (aliases expanded).
MAX_DEPTH = 100


@dataclass(frozen=True, slots=True)
class Position:
    """A place in the file: 1-based ``line`` and ``column``."""

    line: int
    column: int


@dataclass(frozen=True, slots=True)
class AliasUse:
    """Where a value reached through an alias is reported: the ``anchor``'s name, the
    ``position`` of the alias (``*name``, where the value is used) and ``anchor_position``
    (``&name``, where it is written)."""

    anchor: str
    position: Position
    anchor_position: Position

    def note(self) -> str:
        """`` (through the alias *d; its anchor &d is at line 2, column 13)``, for messages."""
        at = self.anchor_position
        return (f" (through the alias *{clip(self.anchor, 40)}; its anchor &{clip(self.anchor, 40)} is at "
                f"line {at.line}, column {at.column})")


def clip(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` cut after ``limit`` characters, saying how many more there were:
    ``"AAAA… (899,800 more characters)"``; unchanged when it is short enough."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """``repr(value)`` for an error message, cut after ``limit`` characters (see :func:`clip`).
    A long string is cut before ``repr`` (no copy of all of it is made)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value) - limit:,} more characters)"
    return clip(repr(value), limit)


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found while reading: ``message``, key ``path``, ``position`` (if known)."""

    message: str
    path: KeyPath
    position: Position | None


@dataclass
class Document:
    """The data read from YAML text and what is known about it.

    ``data``: plain Python values (``dict`` with ``str`` keys, ``list``, ``str``, ``int``,
    ``float``, ``bool``, ``None``). ``values`` / ``keys``: key path → position of the value / of
    its key. ``secret_paths``: paths whose value came (partly) from an environment variable;
    ``secrets``: those environment values themselves (to scrub from messages). ``poisoned``:
    paths already reported, whose value is a placeholder (no further errors there). ``flagged``:
    paths whose value was reported (a YAML 1.1 boolean word) but whose key may still be wrong.
    A value reached through an alias (``*name``) is placed where the alias is written, the place
    that names it at that key path (its anchor is in ``aliases``).
    """

    data: Any = None
    values: dict[KeyPath, Position] = field(default_factory=dict)
    keys: dict[KeyPath, Position] = field(default_factory=dict)
    secret_paths: set[KeyPath] = field(default_factory=set)
    secrets: set[str] = field(default_factory=set)
    named_secrets: set[str] = field(default_factory=set)  # from variables named like a secret
    env_texts: set[str] = field(default_factory=set)  # each value a reference was substituted into, composed
    poisoned: set[KeyPath] = field(default_factory=set)
    flagged: set[KeyPath] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)
    empty: bool = False
    #: key path of each alias use not itself inside an aliased value → the alias and its anchor;
    #: ``values``/``keys`` place everything inside that value at the alias
    aliases: dict[KeyPath, AliasUse] = field(default_factory=dict)


def format_path(path: KeyPath) -> str:
    """``("agent", "tools", 1, "root")`` → ``agent.tools[1].root``; odd keys are quoted:
    ``agent.model["a.b"]``; a key longer than :data:`MAX_SHOWN` characters is cut (:func:`clip`),
    so a path never echoes a huge key (one reached through an alias, say)."""
    out = ""
    for el in path:
        if isinstance(el, int):
            out += f"[{el}]"
            continue
        if len(el) > MAX_SHOWN:
            el = clip(el)
        if _SIMPLE_KEY.fullmatch(el):
            out += f".{el}" if out else el
        else:
            escaped = el.replace("\\", "\\\\").replace('"', '\\"')
            out += f'["{escaped}"]'
    return out


@dataclass(frozen=True, slots=True)
class Interpolated:
    """The result of :func:`interpolate`: the new ``value``; ``missing`` variables (unset, no
    default); ``invalid`` references (malformed ``${...}``); ``secrets``: values taken from the
    environment; ``from_env``: whether any reference was filled from the environment."""

    value: str
    missing: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    from_env: bool = False
    #: references whose default holds another reference (``${A:-${B}}``): not supported, kept as written
    nested: tuple[str, ...] = ()
    #: the values of ``secrets`` taken from a variable named like a secret (``${OPENAI_API_KEY}``)
    named_secrets: tuple[str, ...] = ()


def interpolate(text: str, env: Mapping[str, str]) -> Interpolated:
    """Replace ``${NAME}`` and ``${NAME:-default}`` in ``text`` from ``env``.

    ``${NAME:-default}`` uses ``default`` when ``NAME`` is unset or empty (as the shell does);
    ``$${`` is a literal ``${``. A missing variable without default is replaced by ``""`` and
    listed in ``missing``; a malformed reference (bad name, no closing ``}``) is kept as written
    and listed in ``invalid``. A default holding another reference (``${A:-${B}}``) is not
    supported: it is kept as written and listed in ``nested``. Never raises.
    """
    if "${" not in text:
        return Interpolated(text)
    out: list[str] = []
    missing: list[str] = []
    invalid: list[str] = []
    nested: list[str] = []
    secrets: list[str] = []
    named: list[str] = []
    from_env = False
    pos = 0
    for m in _REF.finditer(text):
        out.append(text[pos : m.start()])
        pos = m.end()
        whole = m.group(0)
        if whole == "$${":
            out.append("${")
            continue
        body = m.group(1)
        if body is None:  # "${" with no closing brace
            invalid.append(text[m.start() :])
            out.append(text[m.start() :])
            pos = len(text)
            break
        bm = _REF_BODY.fullmatch(body)
        if bm is None:
            invalid.append(whole)
            out.append(whole)
            continue
        name, default = bm.group(1), bm.group(2)
        if default is not None and "${" in default.replace("$${", ""):
            close = text.find("}", pos)
            end = len(text) if close < 0 else close + 1
            nested.append(text[m.start() : end])
            out.append(text[m.start() : end])
            pos = end
            continue
        val = env.get(name)
        if val is not None and (val != "" or default is None):
            out.append(val)
            from_env = True
            if val:
                secrets.append(val)
                if is_secret_name(name):
                    named.append(val)
        elif default is not None:
            out.append(default)
        else:
            missing.append(name)
    out.append(text[pos:])
    return Interpolated("".join(out), tuple(missing), tuple(invalid), tuple(secrets), from_env,
                        tuple(nested), tuple(named))


class _Unset:
    pass


def resolve_plain(text: str) -> Any:
    """The value of a plain (unquoted) scalar, YAML-1.2-core-like:

    ``null``/``~``/empty (any case) → ``None``; ``true``/``false`` (any case) → ``bool``; a
    decimal integer or a float *whose Python form is exactly the text* → ``int``/``float``; every
    other text stays a ``str`` exactly as written (``3.10``, ``1e3``, ``0755``, ``+1``, ``1_000``,
    ``1:30``, ``2024-01-01``, ``.inf``), so numeric fields still coerce it and text fields keep it.
    YAML 1.1 boolean words are *not* handled here (see :data:`YAML11_BOOLEANS`).
    """
    low = text.lower()
    if low in _NULLS:
        return None
    if low in ("true", "false"):
        return low == "true"
    if _INT.fullmatch(text):
        try:
            i = int(text)
        except ValueError:  # too many digits
            return text
        return i if str(i) == text else text
    if _FLOAT.fullmatch(text):
        f = float(text)
        return f if repr(f) == text else text
    return text


class _Loader(yaml.SafeLoader):
    """Composes nodes only; every untagged plain scalar gets the private ``plain`` tag, every
    quoted one ``!!str``; explicit tags stay as written (and are refused later)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._path: list[str | int] = []  # key path of the node being composed (for the depth error)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode:
            return _PLAIN_TAG if implicit[0] else _STR_TAG
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]

    def compose_node(self, parent: Any, index: Any) -> Any:
        # PyYAML composes recursively: refuse deep nesting before Python's recursion limit does.
        # PyYAML passes the position in the parent: a list index, or a mapping value's key node
        # (None while composing the key itself)
        if parent is None:
            step: str | int | None = None
        elif isinstance(index, int):
            step = index
        else:
            key = _target(index)
            step = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
        if step is not None:
            self._path.append(step)
        try:
            if len(self._path) > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark, tuple(self._path))  # type: ignore[no-untyped-call]
            event = self.peek_event()  # type: ignore[no-untyped-call]
            node = super().compose_node(parent, index)
            if isinstance(event, yaml.AliasEvent):  # keep where this use of the anchor is written
                return _Alias(node, event.start_mark, str(event.anchor))
            return node
        finally:
            if step is not None:
                self._path.pop()


@dataclass(frozen=True, slots=True)
class _Alias:
    """One use of an anchor (``*name``) in the node graph: the anchored ``node`` and where the
    alias is written (PyYAML itself hands back the anchored node, forgetting the alias)."""

    node: Any
    start_mark: Any
    anchor: str


def _target(node: Any) -> Any:
    return node.node if isinstance(node, _Alias) else node


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


@dataclass(frozen=True, slots=True)
class _Size:
    """What a node stands for with every alias expanded: ``values`` (itself included) and
    ``characters`` (of its scalars, mapping keys included)."""

    values: int
    characters: int

    def __add__(self, other: _Size) -> _Size:
        return _Size(self.values + other.values, self.characters + other.characters)

    def passes(self, limits: _Size) -> bool:
        return self.values > limits.values or self.characters > limits.characters


def _own_size(node: Any) -> _Size:
    return _Size(1, len(node.value)) if isinstance(node, yaml.ScalarNode) else _Size(1, 0)


def _expanded_sizes(root: Any) -> dict[int, _Size]:
    """What each collection node stands for with every alias expanded (see :class:`_Size`), by
    node id; computed once per node (iteratively: alias chains nest deep), so a billion-laughs
    document costs what its text costs. A node inside its own alias (a cycle) counts once; the
    builder reports the cycle."""
    sizes: dict[int, _Size] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        kids = [_target(c) for c in _children(node)]
        if not children_done:
            active.add(key)
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes and id(k) not in active
                         and isinstance(k, yaml.CollectionNode))
            continue
        active.discard(key)
        total = _Size(1, 0)
        for k in kids:
            total += sizes.get(id(k)) or _own_size(k)
        sizes[key] = total
    return sizes


def _size(node: Any, sizes: dict[int, _Size]) -> _Size:
    return sizes.get(id(node)) or _own_size(node)


def _written(root: Any) -> _Size:
    """What ``root`` holds as written (each alias counts as one value of no characters)."""
    total = _Size(0, 0)
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, _Alias):
            total += _Size(1, 0)
            continue
        total += _own_size(node)
        stack.extend(_children(node))
    return total


def _alias_bomb(root: Any) -> tuple[_Alias, KeyPath, _Size, str] | None:
    """The alias, in document order, at which ``root`` with aliases expanded passes
    :data:`MAX_VALUES` values or :data:`MAX_CHARACTERS` characters (or the last alias before the
    written value that does), with its key path, what it stands for and which limit (``"values"``
    or ``"characters"``) it passes; ``None`` when the document stays within both limits, or passes
    them with its written values alone (each alias counted as one value of no characters)."""
    limits = _Size(MAX_VALUES, MAX_CHARACTERS)
    sizes = _expanded_sizes(_target(root))
    if not _size(_target(root), sizes).passes(limits):
        return None
    written = _written(root)
    # a limit the written text alone passes is not the aliases' doing ("document too large")
    watched = _Size(MAX_VALUES if written.values <= MAX_VALUES else 2**62,
                    MAX_CHARACTERS if written.characters <= MAX_CHARACTERS else 2**62)
    total = _Size(0, 0)
    last: tuple[_Alias, KeyPath, _Size] | None = None

    def found() -> tuple[_Alias, KeyPath, _Size, str] | None:
        if last is None:
            return None
        return (*last, "values" if total.values > watched.values else "characters")

    stack: list[tuple[Any, KeyPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Alias):
            last = (node, path, _size(node.node, sizes))
            total += last[2]
            if total.passes(watched):  # this alias takes it past (the written values alone stay within)
                return found()
            continue
        total += _own_size(node)
        if total.passes(watched):  # a written value, after the aliases that took up the room
            return found()
        if isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(child, (*path, i)) for i, child in enumerate(node.value)]))
        elif isinstance(node, yaml.MappingNode):
            pairs: list[tuple[Any, KeyPath]] = []
            for key, value in node.value:
                name = _target(key).value if isinstance(_target(key), yaml.ScalarNode) else "?"
                pairs += [(key, path), (value, (*path, str(name)))]
            stack.extend(reversed(pairs))
    return None


def _pos(mark: Any) -> Position:
    return Position(int(mark.line) + 1, int(mark.column) + 1)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:") :] if tag.startswith("tag:yaml.org,2002:") else tag


def _syntax_problem(exc: yaml.YAMLError, text: str) -> Problem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if isinstance(exc, yaml.reader.ReaderError):
        position = max(0, min(int(exc.position), len(text)))
        before = text[:position]
        line = before.count("\n") + 1
        col = position - (before.rfind("\n") + 1) + 1
        char = exc.character
        code = char if isinstance(char, int) else ord(char) if isinstance(char, str) and len(char) == 1 else None
        shown = f"U+{code:04X}" if code is not None else repr(char)
        return Problem(f"YAML: the character {shown} is not allowed in a YAML file ({exc.reason}); "
                       f"remove it, or write it as an escape inside a double-quoted string",
                       (), Position(line, col))
    msg = str(problem or exc).strip()
    ctx_mark = getattr(exc, "context_mark", None)
    if context:
        where = f" at line {ctx_mark.line + 1}, column {ctx_mark.column + 1}" if ctx_mark is not None else ""
        if msg.startswith("but "):
            msg = f"{context.strip()}{where}, {msg}"
        else:
            msg = f"{msg} ({context.strip()}{where})"
    if "\\t" in msg or "\t" in msg:
        msg += "; YAML does not allow tabs for indentation, use spaces"
    reference = _unquoted_reference(text, mark) if mark is not None else None
    if reference is not None:
        msg += (f"; inside {{...}} or [...] an unquoted {reference} reads as YAML, not as an environment "
                f"reference: quote it, '{reference}'")
    return Problem(f"YAML syntax: {msg}", (), _pos(mark) if mark is not None else None)


def _unquoted_reference(text: str, mark: Any) -> str | None:
    """The ``${...}`` reference whose ``{`` the YAML error ``mark`` points at, or that starts at it
    (``model: {use: openai, api_key: ${KEY}}``: in a flow collection ``{`` opens a mapping, so the
    unquoted reference is a syntax error), else ``None``."""
    lines = text.splitlines()
    line, col = int(mark.line), int(mark.column)
    if not 0 <= line < len(lines):
        return None
    row = lines[line]
    start = col - 1 if row[col:col + 1] == "{" and row[col - 1:col] == "$" else col
    if start < 0 or not row.startswith("${", start):
        return None
    depth, end = 0, start + 1
    while end < len(row):  # to the matching brace: ${A:-${B}} is one reference
        depth += {"{": 1, "}": -1}.get(row[end], 0)
        end += 1
        if depth == 0:
            return row[start:end]
    return None


_SURROGATE_MESSAGE = ("a lone surrogate escape (\\ud800-\\udfff) is not a character: this text cannot be "
                      "written as UTF-8; write the character itself, or a full escape such as \\U0001F600")


def _is_utf8(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8 (no lone surrogates, as ``"\\ud800"`` makes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_DEPTH_MESSAGE = f"nested more than {MAX_DEPTH} levels deep; a composition nests only a few levels"


class _Builder:
    def __init__(self, doc: Document, env: Mapping[str, str]) -> None:
        self.doc = doc
        self.env = env
        self.count = 0
        self.active: set[int] = set()  # ids of the collection nodes being built (alias cycles)
        self.via: AliasUse | None = None  # the alias whose value is being built

    def position(self, node: Any) -> Position:
        """Where ``node`` is reported: at the alias when it is reached through one."""
        return self.via.position if self.via is not None else _pos(node.start_mark)

    def problem(self, message: str, path: KeyPath, node: Any, *, poison: bool = True) -> None:
        self.doc.problems.append(Problem(message, path, self.position(node)))
        if poison:
            self.doc.poisoned.add(path)

    def build(self, node: Any, path: KeyPath) -> Any:
        node = _target(node)
        self.count += 1
        if self.count > MAX_VALUES:
            raise _TooLarge
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            if id(node) in self.active:
                self.problem("recursive alias: this value contains itself, which a composition cannot hold",
                             path, node)
                return None
            if len(path) >= MAX_DEPTH:
                self.problem(_DEPTH_MESSAGE, path, node)
                return None
            self.active.add(id(node))
            try:
                return self.collection(node, path)
            finally:
                self.active.discard(id(node))
        if node.tag == _PLAIN_TAG:
            value = resolve_plain(node.value)
            if isinstance(value, str):
                if value.lower() in YAML11_BOOLEANS:
                    self.problem(
                        f"{value!r} is a boolean in YAML 1.1 and means different things to different tools; "
                        f"quote it (\"{value}\") to keep the text, or write true/false",
                        path, node, poison=False,
                    )
                    self.doc.flagged.add(path)
                    return value
                return self.string(value, path, node)
            return value
        if node.tag == _STR_TAG:
            return self.string(node.value, path, node)
        self.problem(self._tag_message(node.tag), path, node)
        return None

    def collection(self, node: Any, path: KeyPath) -> Any:
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP_TAG:
                self.problem(self._tag_message(node.tag), path, node)
                return None
            return self.mapping(node, path)
        if node.tag != _SEQ_TAG:
            self.problem(self._tag_message(node.tag), path, node)
            return None
        return [self._child(item, (*path, i)) for i, item in enumerate(node.value)]

    def _child(self, node: Any, path: KeyPath) -> Any:
        if isinstance(node, _Alias) and self.via is None:
            use = AliasUse(node.anchor, _pos(node.start_mark), _pos(node.node.start_mark))
            self.doc.aliases[path] = use
            self.doc.values[path] = use.position
            self.via = use
            try:
                return self.build(node, path)
            finally:
                self.via = None
        self.doc.values[path] = self.position(_target(node))
        return self.build(node, path)

    @staticmethod
    def _tag_message(tag: str) -> str:
        return (f"YAML tag {shown(_short_tag(tag))} is not allowed (compositions hold plain data only); "
                f"remove it, or quote the value to keep it as text")

    def mapping(self, node: Any, path: KeyPath) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for written_key, value_node in node.value:
            key_node = _target(written_key)
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem("mapping keys must be plain strings", path, key_node)
                continue
            key = str(key_node.value)
            if key_node.tag not in (_PLAIN_TAG, _STR_TAG):
                self.problem(self._tag_message(key_node.tag), (*path, key), key_node)
                continue
            if not _is_utf8(key):
                self.problem(f"key: {_SURROGATE_MESSAGE}", path, key_node, poison=False)
                continue
            if key == "<<" and key_node.tag == _PLAIN_TAG:
                self.problem("YAML merge keys ('<<') are not supported; write the keys out", path, key_node)
                continue
            child = (*path, key)
            if key in out:
                first = self.doc.keys.get(child)
                where = f" (first at line {first.line}, column {first.column})" if first else ""
                self.problem(f"duplicate key {shown(key)}{where}; keep only one", child, key_node, poison=False)
            else:
                self.doc.keys[child] = self.position(written_key)
            out[key] = self._child(value_node, child)
        return out

    def string(self, text: str, path: KeyPath, node: Any) -> str:
        if not _is_utf8(text):
            self.problem(_SURROGATE_MESSAGE, path, node)
            return ""
        result = interpolate(text, self.env)
        for name in result.missing:
            self.problem(
                f"environment variable {shown(name)} is not set (set it, or write ${{{clip(name, 40)}:-default}})",
                path, node,
            )
        for ref in result.invalid:
            self.problem(
                f"malformed reference {shown(ref)}: write ${{NAME}} or ${{NAME:-default}} (and $${{ for a literal ${{)",
                path, node,
            )
        for ref in result.nested:
            self.problem(
                f"nested reference {shown(ref)}: a default cannot hold another ${{...}} reference; "
                f"write the default as plain text (${{NAME:-text}})",
                path, node,
            )
        if not _is_utf8(result.value):
            self.problem("an environment variable used here is not valid UTF-8 text", path, node)
            return ""
        if result.from_env:
            self.doc.secret_paths.add(path)
            self.doc.secrets.update(result.secrets)
            self.doc.named_secrets.update(result.named_secrets)
            self.doc.env_texts.add(result.value)
        return result.value


class _TooLarge(Exception):
    pass


class _TooDeep(Exception):
    def __init__(self, mark: Any, path: KeyPath) -> None:
        super().__init__()
        self.mark = mark
        self.path = path


def _bomb_message(alias: _Alias, path: KeyPath, size: _Size, limit: str) -> str:
    name = clip(alias.anchor, 40)
    if limit == "values":
        return (f"the alias *{name} expands to {size.values:,} values (aliases inside aliases), which takes "
                f"the document past {MAX_VALUES:,} values: an alias-expansion bomb? A composition holds a few "
                f"hundred; write the values out, or use fewer nested aliases")
    return (f"the alias *{name} expands to {size.characters:,} characters, which takes the document past "
            f"{MAX_CHARACTERS:,} characters with aliases expanded: an alias-expansion bomb? A composition "
            f"holds a few thousand; write a long text once, or use it through fewer aliases")


def parse_yaml(text: str, env: Mapping[str, str] | None = None) -> Document:
    """Read ``text`` (one YAML document) into a :class:`Document`; problems are collected in
    ``Document.problems``, never raised. ``env`` defaults to ``os.environ``."""
    doc = Document()
    try:
        loader = _Loader(text)  # the reader checks every character here (ReaderError)
    except yaml.YAMLError as exc:
        doc.problems.append(_syntax_problem(exc, text))
        return doc
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        doc.problems.append(_syntax_problem(exc, text))
        return doc
    except _TooDeep as exc:
        doc.problems.append(Problem(_DEPTH_MESSAGE, exc.path, _pos(exc.mark)))
        return doc
    finally:
        loader.dispose()
    if node is None:
        doc.empty = True
        return doc
    node = _target(node)
    doc.values[()] = _pos(node.start_mark)
    bomb = _alias_bomb(node)
    if bomb is not None:  # refused before building: expanding it would take the time and memory
        doc.poisoned.add(())
        doc.problems.append(Problem(_bomb_message(*bomb), bomb[1], _pos(bomb[0].start_mark)))
        return doc
    builder = _Builder(doc, os.environ if env is None else env)
    try:
        doc.data = builder.build(node, ())
    except _TooLarge:
        doc.data = None
        doc.poisoned.add(())
        doc.problems.append(Problem(f"document too large (more than {MAX_VALUES} values, aliases expanded)",
                                    (), doc.values[()]))
    return doc
