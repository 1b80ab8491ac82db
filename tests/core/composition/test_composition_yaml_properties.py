"""Property tests of the scalar resolver and ``${ENV}`` interpolation."""

from __future__ import annotations

import re

import yaml
from hypothesis import assume, given
from hypothesis import strategies as st
from seamkit.composition import interpolate, resolve_plain
from seamkit.composition._yaml import YAML11_BOOLEANS, parse_yaml

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
# literal text that cannot form a reference by itself
LITERALS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12).map(
    lambda s: s.replace("$", "")
)


def quoted_doc(value: str, style: str) -> str:
    return "key: " + yaml.safe_dump(value, default_style=style, width=10_000).rstrip("\n").removesuffix("\n...")


@given(st.text(), st.sampled_from(['"', "'"]))
def test_any_quoted_string_round_trips_with_escaped_references(value: str, style: str) -> None:
    escaped = value.replace("${", "$${")
    doc = parse_yaml(quoted_doc(escaped, style), env={})
    assert doc.problems == []
    assert doc.data == {"key": value}


@given(st.text().filter(lambda s: "${" not in s), st.sampled_from(['"', "'"]))
def test_quoted_strings_are_always_strings(value: str, style: str) -> None:
    doc = parse_yaml(quoted_doc(value, style), env={})
    assert doc.data == {"key": value}
    assert isinstance(doc.data["key"], str)


@given(st.integers())
def test_decimal_integers_resolve_to_int(n: int) -> None:
    assert resolve_plain(str(n)) == n


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_resolve_only_when_their_text_round_trips(x: float) -> None:
    text = repr(x)
    value = resolve_plain(text)
    if re.fullmatch(r"-?[0-9]+\.[0-9]+(e[-+][0-9]+)?", text):
        assert value == x and isinstance(value, float)
    else:  # e.g. 1e+16 (no fraction part): kept as written
        assert value == text


@given(st.text(min_size=1))
def test_plain_resolution_never_changes_text_it_keeps(text: str) -> None:
    value = resolve_plain(text)
    if isinstance(value, str):
        assert value == text
    elif isinstance(value, bool):
        assert text.lower() in ("true", "false")
    elif isinstance(value, (int, float)):
        assert repr(value) == text  # lossless: the text is recoverable
    else:
        assert value is None and text.lower() in ("~", "null")


@given(st.sampled_from(["3.10", "1e3", "0755", "+1", "1_000", "1:30", "2024-01-01", ".5", "-0", "0x1F",
                        ".inf", "NaN", "1.0e+3", "007"]))
def test_yaml11_numbers_stay_text(text: str) -> None:
    assert resolve_plain(text) == text


@given(st.sampled_from(sorted(YAML11_BOOLEANS)), st.data())
def test_yaml11_boolean_words_are_errors_in_any_case(word: str, data: st.DataObject) -> None:
    cased = "".join(c.upper() if data.draw(st.booleans()) else c for c in word)
    doc = parse_yaml(f"a:\n  flag: {cased}\n", env={})
    (problem,) = doc.problems
    assert problem.path == ("a", "flag")
    assert (problem.position.line, problem.position.column) == (2, 9)  # type: ignore[union-attr]
    assert "quote it" in problem.message
    quoted = parse_yaml(f'flag: "{cased}"', env={})
    assert quoted.problems == [] and quoted.data == {"flag": cased}


@given(st.dictionaries(NAMES, LITERALS, max_size=5), st.lists(st.tuples(LITERALS, NAMES), max_size=5), LITERALS)
def test_interpolation_of_generated_env(env: dict[str, str], parts: list[tuple[str, str]], tail: str) -> None:
    text = "".join(f"{lit}${{{name}}}" for lit, name in parts) + tail
    result = interpolate(text, env)
    expected = "".join(lit + env.get(name, "") for lit, name in parts) + tail
    assert result.value == expected
    assert result.missing == tuple(name for _, name in parts if name not in env)
    assert result.invalid == ()
    assert result.from_env == any(name in env for _, name in parts)
    assert set(result.secrets) == {env[n] for _, n in parts if env.get(n)}


@given(NAMES, LITERALS.filter(lambda s: "}" not in s), st.dictionaries(NAMES, LITERALS, max_size=3))
def test_default_applies_when_unset_or_empty(name: str, default: str, env: dict[str, str]) -> None:
    result = interpolate(f"${{{name}:-{default}}}", env)
    expected = env[name] if env.get(name) else default
    assert result.value == expected
    assert result.missing == ()


@given(LITERALS, NAMES, LITERALS)
def test_double_dollar_escapes_a_reference(before: str, name: str, after: str) -> None:
    result = interpolate(f"{before}$${{{name}}}{after}", {name: "SECRET"})
    assert result.value == f"{before}${{{name}}}{after}"
    assert not result.from_env and result.secrets == ()


@given(st.text())
def test_interpolation_never_raises_and_is_identity_without_references(text: str) -> None:
    result = interpolate(text, {})
    if "${" not in text:
        assert result.value == text and result == type(result)(text)


@given(st.from_regex(r"\$\{[^}]*", fullmatch=True))
def test_unterminated_reference_is_reported(text: str) -> None:
    assume("}" not in text)
    result = interpolate(text, {})
    assert result.invalid and result.value == text


def test_keys_are_always_strings_and_quoted_values_never_resolve() -> None:
    doc = parse_yaml("1: a\ntrue: b\nnull: c\nq: 'true'\nr: \"3\"\ns: 3\nt: ~\nu:\n", env={})
    assert doc.data == {"1": "a", "true": "b", "null": "c", "q": "true", "r": "3", "s": 3, "t": None, "u": None}


# -- alias expansion is measured without expanding (issue 10, item 22) ------------------------------

#: each level: a list or a mapping of scalars (of 1-12 characters) and aliases to earlier levels
LEVELS = st.lists(
    st.tuples(st.booleans(), st.lists(st.one_of(st.integers(1, 12).map(lambda n: "x" * n), st.integers(0, 8)),
                                      min_size=1, max_size=5)),
    min_size=1, max_size=7,
)


def _expanded(value: object) -> tuple[int, int]:
    """Values and characters (of scalars, keys included) with aliases expanded: by brute force."""
    if isinstance(value, dict):
        parts = [(1 + v, len(k) + c) for k, (v, c) in ((k, _expanded(x)) for k, x in value.items())]
    elif isinstance(value, list):
        parts = [_expanded(x) for x in value]
    else:
        return 1, len(str(value))
    return 1 + sum(v for v, _ in parts), sum(c for _, c in parts)


@given(LEVELS, st.integers(5, 400), st.integers(5, 800))
def test_an_alias_bomb_is_reported_exactly_when_the_expanded_document_passes_a_limit(
        levels: list[tuple[bool, list[str | int]]], limit: int, char_limit: int) -> None:
    import seamkit.composition._yaml as yaml_module

    lines = []
    for i, (as_map, items) in enumerate(levels):
        written = [ref if isinstance(ref, str) else "x" if ref >= i else f"*l{ref}" for ref in items]
        body = (", ".join(f"k{j}: {w}" for j, w in enumerate(written)) if as_map else ", ".join(written))
        lines.append(f"l{i}: &l{i} " + ("{" + body + "}" if as_map else "[" + body + "]"))
    text = "\n".join(lines)
    values, characters = _expanded(yaml.safe_load(text))
    saved = yaml_module.MAX_VALUES, yaml_module.MAX_CHARACTERS
    yaml_module.MAX_VALUES, yaml_module.MAX_CHARACTERS = limit, char_limit
    try:
        doc = parse_yaml(text, env={})
    finally:
        yaml_module.MAX_VALUES, yaml_module.MAX_CHARACTERS = saved
    bombs = [p for p in doc.problems if "alias-expansion bomb" in p.message]
    # the same text with each alias as an empty text: one value of no characters, as the limit counts it
    written_values, written_characters = _expanded(yaml.safe_load(re.sub(r"\*l[0-9]+", "''", text)))
    by_values = values > limit and written_values <= limit
    by_characters = characters > char_limit and written_characters <= char_limit
    if not (by_values or by_characters):  # within the limits, or too big without any alias
        assert bombs == [] and (values > limit or doc.data == yaml.safe_load(text))
    else:
        (bomb,) = bombs
        assert bomb.position is not None
        assert text.splitlines()[bomb.position.line - 1][bomb.position.column - 1] == "*"
        assert ("values" if f"past {limit:,} values" in bomb.message else "characters") in (
            ["values"] * by_values + ["characters"] * by_characters)
        assert doc.data is None
