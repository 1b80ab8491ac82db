"""``seamkit plugins show NAME``: a component's description, parameters and an example
composition that validates; the ``plugins`` table's description column."""

from __future__ import annotations

import json

import pytest
from cli_testlib import CLI
from seamkit._cli.plugins_show import example_composition
from seamkit._plugins.registry import get_registry
from seamkit.composition import loads_composition


def test_show_prints_description_parameters_and_example(cli: CLI) -> None:
    r = cli("plugins", "show", "read_file")
    assert r.returncode == 0, r
    assert "Read a UTF-8 text file under a configured root directory" in r.stdout
    assert "root (string; required)" in r.stdout
    assert "max_bytes (integer; default 1048576)" in r.stdout
    assert "Most bytes one call returns" in r.stdout  # the field's own documentation
    assert "- {use: read_file, root: \".\"}" in r.stdout


def test_show_json_and_secret_parameter(cli: CLI) -> None:
    r = cli("plugins", "show", "store/postgres", "--json")
    assert r.returncode == 0, r
    [info] = json.loads(r.stdout)
    assert (info["kind"], info["name"], info["distribution"]) == ("store", "postgres", "seamkit-postgres")
    assert info["description"].startswith("Key-value store")
    dsn = next(p for p in info["parameters"] if p["name"] == "dsn")
    assert dsn["required"] and dsn["secret"] and "default" not in dsn
    assert "${DSN}" in info["example"]  # a secret is given from the environment, never inline


def test_show_an_example_that_the_validate_command_accepts(cli: CLI, tmp_path) -> None:
    r = cli("plugins", "show", "compactor/summarization", "--json")
    [info] = json.loads(r.stdout)
    (tmp_path / "ex.yaml").write_text(info["example"], encoding="utf-8")
    v = cli("validate", "ex.yaml")
    assert v.returncode == 0, (info["example"], v)


def test_every_installed_components_example_validates() -> None:
    registry = get_registry()
    env = {"DSN": "postgresql://user:pw@localhost/db", "URL": "redis://localhost:6379/0"}
    shown = 0
    for spec in registry.all_components():
        example = example_composition(registry, spec)
        if example is None:
            assert spec.kind in ("schema_adapter", "evaluator", "runner")
            continue
        loads_composition(example, registry=registry, env=env)  # raises ConfigError on a bad example
        shown += 1
    assert shown > 30


def test_unknown_name_is_a_usage_error_with_close_names(cli: CLI) -> None:
    r = cli("plugins", "show", "calculater")
    assert r.returncode == 2, r
    assert "no component named 'calculater'" in r.stderr and "did you mean 'calculator'" in r.stderr
    # the start of a name finds it too (regression: 'calc' suggested 'clock' and 'recall' only)
    r = cli("plugins", "show", "calc")
    assert r.returncode == 2 and "did you mean 'calculator'" in r.stderr, r.stderr
    r = cli("plugins", "show", "tol/calculator")
    assert r.returncode == 2 and "no component of kind 'tol'" in r.stderr and "'tool'" in r.stderr, r
    for bad in ("a/b/c", "/x", "x/"):
        r = cli("plugins", "show", bad)
        assert r.returncode == 2 and "expected NAME or KIND/NAME" in r.stderr, (bad, r)


def test_a_name_of_several_kinds_shows_each(cli: CLI) -> None:
    r = cli("plugins", "show", "egress")
    assert r.returncode == 0, r
    assert "guardrail 'egress'" in r.stdout and "middleware 'egress'" in r.stdout
    assert "seamkit plugins show guardrail/egress" in r.stdout


@pytest.mark.parametrize("broken", [False, True])
def test_plugins_table_shows_descriptions_and_errors_only_when_some(tmp_path, tools_dist, broken_dists,
                                                                     broken: bool) -> None:
    cli = CLI([tools_dist, broken_dists] if broken else [tools_dist], tmp_path)
    r = cli("plugins")
    header = r.stdout.splitlines()[0].split()
    assert header[-1] == "description" and "error" not in header
    lines = r.stdout.splitlines()
    assert any(x.startswith("error: plugin") and "(broken-import " in x for x in lines) is broken
    assert "Add two integers" in r.stdout  # the test plugin's declared description
