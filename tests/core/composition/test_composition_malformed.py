"""The malformed-composition corpus: every file states, in ``# expect:`` header lines, each issue
that must be reported (``LINE:COLUMN KEY.PATH | message fragment | ...``; path ``-`` = none), and
no other issue may be reported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from seamkit._plugins.registry import Registry
from seamkit.composition import load_composition
from seamkit.errors import ConfigError

CORPUS = Path(__file__).parent / "malformed"
FILES = sorted(CORPUS.glob("*.yaml"))
ENV = {"SEAMKIT_TEST_KEY": "sk-very-secret-value"}
_EXPECT = re.compile(r"^# expect: (\d+):(\d+) (\S+) \| (.+)$")


def expectations(path: Path) -> list[tuple[int, int, str, list[str]]]:
    out = []
    for line in path.read_text().splitlines():
        m = _EXPECT.match(line)
        if m:
            key = "" if m.group(3) == "-" else m.group(3)
            out.append((int(m.group(1)), int(m.group(2)), key, [p.strip() for p in m.group(4).split(" | ")]))
    return out


def test_corpus_is_large_enough() -> None:
    assert len(FILES) >= 25
    assert all(expectations(f) for f in FILES), "every corpus file states its expected issues"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_malformed_file_reports_exactly_the_expected_issues(path: Path, registry: Registry) -> None:
    with pytest.raises(ConfigError) as info:
        load_composition(path, registry=registry, env=ENV)
    issues = info.value.issues
    expected = expectations(path)
    got = sorted((i.line, i.column, i.path) for i in issues)
    assert got == sorted((ln, col, key) for ln, col, key, _ in expected), "\n".join(map(str, issues))
    for ln, col, key, fragments in expected:
        matching = [i for i in issues if (i.line, i.column, i.path) == (ln, col, key)]
        assert any(all(fr in i.message for fr in fragments) for i in matching), (fragments, matching)
    for issue in issues:
        assert issue.file == str(path)
        assert str(path) in str(info.value)
        assert ENV["SEAMKIT_TEST_KEY"] not in str(info.value)


def test_every_problem_of_one_file_is_reported_at_once(registry: Registry) -> None:
    path = CORPUS / "29_many_problems.yaml"
    with pytest.raises(ConfigError) as info:
        load_composition(path, registry=registry)
    paths = {i.path for i in info.value.issues}
    assert {
        "agent.model.temprature", "agent.tools[0]", "agent.tools[1].times", "agent.max_steps",
        "agent.tool_choice", "agent.colour", "agent.settings.temperature", "agent.middlewares[0].label",
    } <= paths
    assert str(info.value).startswith(f"{len(info.value.issues)} problems in configuration")
    lines = [i.line or 0 for i in info.value.issues]
    assert lines == sorted(lines), "issues are listed in file order"


def test_unknown_component_lists_installed_names(registry: Registry) -> None:
    with pytest.raises(ConfigError) as info:
        load_composition(CORPUS / "01_unknown_component.yaml", registry=registry)
    (issue,) = info.value.issues
    assert "installed providers: failing, heavy, scripted, secretive" in issue.message


def test_ambiguous_component_names_both_distributions(registry: Registry) -> None:
    with pytest.raises(ConfigError) as info:
        load_composition(CORPUS / "22_ambiguous_component.yaml", registry=registry)
    (issue,) = info.value.issues
    assert "seamkit-search-a" in issue.message and "seamkit-search-b" in issue.message
    assert "from:" in issue.message
