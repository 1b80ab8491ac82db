"""Regression tests: input the YAML reader, the schema check and the template check used to let
through (or crash on) — each must be a located ConfigError."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._plugins.registry import Registry
from seamkit.composition import loads_composition
from seamkit.composition._yaml import interpolate, parse_yaml
from seamkit.errors import ConfigError, ConfigIssue

HEAD = "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n"


def issues_of(text: str, registry: Registry, env: dict[str, str] | None = None) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as info:
        loads_composition(textwrap.dedent(text), registry=registry, env=env or {})
    return list(info.value.issues)


def test_invalid_regex_pattern_in_output_schema_is_located(registry: Registry) -> None:
    issues = issues_of(HEAD + '  output: {json_schema: {type: string, pattern: "(abc"}}\n', registry)
    assert [(i.path, i.line) for i in issues] == [("agent.output.json_schema.pattern", 4)]
    assert "'(abc' is not a valid regular expression" in issues[0].message
    assert "metaschema" not in issues[0].message.lower() and len(issues[0].message) < 200


def test_valid_regex_pattern_in_output_schema_loads(registry: Registry) -> None:
    comp = loads_composition(HEAD + '  output: {json_schema: {type: string, pattern: "^(abc)+$"}}\n',
                             registry=registry, env={})
    assert comp.agent.output.json_schema["pattern"] == "^(abc)+$"  # type: ignore[union-attr]


@pytest.mark.parametrize("char", ["\x00", "\x07", "\ufffe", "\x1b"])
def test_characters_the_yaml_reader_rejects_are_located(registry: Registry, char: str) -> None:
    issues = issues_of(HEAD + f'  prompt: "a{char}b"\n', registry)
    assert len(issues) == 1
    assert (issues[0].line, issues[0].column) == (4, 13)
    assert f"U+{ord(char):04X}" in issues[0].message and "not allowed" in issues[0].message


def test_reader_error_on_the_first_line_is_located(registry: Registry) -> None:
    issues = issues_of("\x07seamkit: 1\n", registry)
    assert (issues[0].line, issues[0].column) == (1, 1)


@pytest.mark.parametrize("text", [
    '  name: "\\ud800"\n',
    '  prompt: "p \\udfff"\n',
    '  prompt: {template: "x", id: "\\udc80"}\n',
])
def test_lone_surrogate_escapes_are_refused(registry: Registry, text: str) -> None:
    issues = issues_of(HEAD + text, registry)
    assert len(issues) == 1 and issues[0].line == 4
    assert "surrogate" in issues[0].message


def test_lone_surrogate_in_a_key_is_refused(registry: Registry) -> None:
    issues = issues_of(HEAD + '  "\\ud800": 1\n', registry)
    assert any("surrogate" in i.message and i.line == 4 for i in issues)


def test_full_escape_of_an_astral_character_is_accepted(registry: Registry) -> None:
    comp = loads_composition(HEAD + '  prompt: "smile \\U0001F600"\n', registry=registry, env={})
    assert comp.agent.prompt is not None and comp.agent.prompt.template == "smile \U0001F600"


def test_environment_value_that_is_not_utf8_is_refused(registry: Registry) -> None:
    issues = issues_of(HEAD + '  prompt: "${BAD}"\n', registry, env={"BAD": "x\udcff"})
    assert len(issues) == 1 and "not valid UTF-8" in issues[0].message and "\udcff" not in issues[0].message


@given(st.text())
def test_parse_yaml_never_raises_and_every_string_is_utf8(text: str) -> None:
    doc = parse_yaml(text, env={})

    def walk(v: object) -> None:
        if isinstance(v, str):
            v.encode("utf-8")
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc.data)


def test_format_version_true_is_shown_as_written(registry: Registry) -> None:
    issues = issues_of("seamkit: true\nagent:\n  model: {use: scripted, turns: [hi]}\n", registry)
    assert len(issues) == 1
    assert "unsupported format version true;" in issues[0].message and "True" not in issues[0].message


def test_yaml11_word_on_a_bool_field_says_write_true_or_false(registry: Registry) -> None:
    issues = issues_of(HEAD + "  reset_tool_choice: yes\n", registry)
    assert len(issues) == 1
    assert "write true or false" in issues[0].message and "to keep the text" not in issues[0].message


def test_yaml11_word_on_a_text_field_still_suggests_quoting(registry: Registry) -> None:
    issues = issues_of(HEAD + "  name: no\n", registry)
    assert len(issues) == 1 and "to keep the text" in issues[0].message


def test_nested_default_reference_is_a_located_error(registry: Registry) -> None:
    issues = issues_of(HEAD + '  prompt: "${NOPE:-${SECRET}}"\n', registry, env={"SECRET": "hunter2value"})
    assert len(issues) == 1 and issues[0].line == 4 and issues[0].path == "agent.prompt"
    assert "nested reference" in issues[0].message and "hunter2value" not in issues[0].message


def test_interpolate_lists_nested_defaults_and_keeps_plain_ones() -> None:
    r = interpolate("${A:-${B}} and ${C:-plain}", {"B": "b"})
    assert r.nested == ("${A:-${B}}",)
    assert r.value == "${A:-${B}} and plain"


@pytest.mark.parametrize("template", ["hello {{a.b}}", "hello {{}}", "x {{ 1a }}", "{{a-b}}"])
def test_invalid_template_variables_are_located(registry: Registry, template: str) -> None:
    issues = issues_of(HEAD + f'  prompt: {{id: x, version: 1.0.0, template: "{template}"}}\n', registry)
    assert len(issues) == 1 and issues[0].path == "agent.prompt.template" and issues[0].line == 4
    assert "not a valid template variable" in issues[0].message


def test_invalid_template_variable_in_a_plain_prompt(registry: Registry) -> None:
    issues = issues_of(HEAD + '  prompt: "use {{a.b}}"\n', registry)
    assert [i.path for i in issues] == ["agent.prompt"]


def test_valid_template_variables_and_single_braces_load(registry: Registry) -> None:
    comp = loads_composition(HEAD + '  prompt: "{{ topic }} {{x_1}} {\\"json\\": 1}"\n', registry=registry, env={})
    assert comp.agent.prompt is not None
