"""``${X}`` unquoted inside a YAML flow mapping or list (``model: {use: openai, api_key: ${KEY}}``)
is a YAML syntax error (``{`` opens a mapping there): the error keeps file:line:column and says to
quote the reference; quoted, the same line loads and the reference is filled."""

from __future__ import annotations

from pathlib import Path

import pytest
from seamkit._plugins.registry import Registry
from seamkit.composition import load_composition, loads_composition
from seamkit.errors import ConfigError

HEAD = "seamkit: 1\nagent:\n"


@pytest.mark.parametrize(("line", "reference", "column"), [
    ("  model: {use: scripted, turns: [hi], delay: ${DELAY}}\n", "${DELAY}", 47),
    ("  model: {use: scripted, turns: [${TURN}]}\n", "${TURN}", 35),
    ("  model: {use: scripted, turns: [${TURN:-${OTHER}}]}\n", "${TURN:-${OTHER}}", 35),
])
def test_an_unquoted_reference_in_a_flow_collection_says_to_quote_it(
    tmp_path: Path, registry: Registry, line: str, reference: str, column: int
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(HEAD + line)
    with pytest.raises(ConfigError) as info:
        load_composition(path, registry=registry, env={"DELAY": "0", "TURN": "hi"})
    (issue,) = info.value.issues
    assert (issue.file, issue.line, issue.column) == (str(path), 3, column)
    assert issue.message.startswith("YAML syntax: ")
    assert f"an unquoted {reference} reads as YAML" in issue.message
    assert issue.message.endswith(f"quote it, '{reference}'")
    assert f"{path}:3:{column}: YAML syntax" in str(info.value)


def test_quoted_as_the_hint_says_it_loads(registry: Registry) -> None:
    comp = loads_composition(HEAD + "  model: {use: scripted, turns: ['${TURN}']}\n", registry=registry,
                             env={"TURN": "hello"})
    assert list(comp.agent.model.config.turns) == ["hello"]


def test_other_syntax_errors_get_no_reference_hint(registry: Registry) -> None:
    with pytest.raises(ConfigError) as info:
        loads_composition(HEAD + "  model: {use: scripted, turns: [hi]\n", registry=registry, env={})
    assert "YAML syntax" in info.value.issues[0].message and "quote it" not in info.value.issues[0].message
