"""Regression tests for problems a newcomer found in the composition layer (one test per problem)."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path
from typing import Any

import pytest
from composition_plugins import make_registry
from pydantic import BaseModel, ConfigDict
from seamkit._agent.prompt import Prompt
from seamkit._hookspecs import hookimpl
from seamkit._plugins.registry import Registry
from seamkit.composition import (
    ComponentBuildError,
    build_agent,
    load_composition,
    loads_composition,
)
from seamkit.composition._loader import MAX_FILE_BYTES
from seamkit.composition._yaml import MAX_DEPTH
from seamkit.errors import ConfigError, ConfigIssue

SECRET = "hunter2SECRETVALUE"
ENV = {"SECRET": SECRET}


def compose(text: str, registry: Registry, env: dict[str, str] | None = None) -> Any:
    return loads_composition(textwrap.dedent(text), registry=registry, env=env if env is not None else ENV)


def issues_of(text: str, registry: Registry, env: dict[str, str] | None = None) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as info:
        compose(text, registry, env)
    assert SECRET not in str(info.value)
    return list(info.value.issues)


# -- 1. secrets --------------------------------------------------------------------------------


def test_secret_values_lists_env_values_but_not_short_ones(registry: Registry) -> None:
    comp = compose("""\
        seamkit: 1
        agent:
          name: ${SECRET}
          model: {use: scripted, turns: ["x ${SHORT}"]}
          prompt: "${UNSET:-a default is not a secret}"
        """, registry, {**ENV, "SHORT": "abc"})
    assert comp.secret_values() == frozenset({SECRET})
    assert compose("seamkit: 1\nagent: {model: {use: scripted, turns: [x]}}\n", registry).secret_values() == frozenset()


def test_env_ref_in_output_schema_is_not_shown_when_unresolvable(registry: Registry) -> None:
    (issue,) = issues_of("""\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          output: {json_schema: {$ref: "${SECRET}"}}
        """, registry)
    assert issue.path == 'agent.output.json_schema["$ref"]' and "from the environment" in issue.message


# -- 2. recursion ------------------------------------------------------------------------------


def test_self_referencing_alias_is_a_located_config_error(registry: Registry) -> None:
    (issue,) = issues_of("""\
        seamkit: 1
        agent: &a {model: {use: scripted, turns: [x]}, x: *a}
        """, registry)
    # at the alias that closes the cycle (*a), naming its anchor (&a)
    assert "recursive alias" in issue.message and (issue.line, issue.column) == (2, 51)
    assert "its anchor &a is at line 2, column 8" in issue.message


def test_very_deep_nesting_is_a_located_config_error(registry: Registry) -> None:
    deep = "[" * 600 + "]" * 600
    call = f"{{name: t, arguments: {{a: {deep}}}}}"
    text = f"seamkit: 1\nagent:\n  model: {{use: scripted, turns: [{{tool_calls: [{call}]}}]}}\n"
    (issue,) = issues_of(text, registry)
    assert f"more than {MAX_DEPTH} levels" in issue.message and issue.line == 3 and issue.column is not None


def test_nesting_through_aliases_is_limited_too(registry: Registry) -> None:
    n = 80  # each piece is within the limit; together (alias expanded) they are not
    text = (f"seamkit: 1\nagent:\n  model: {{use: scripted, turns: [x]}}\n  x: &d {'[' * n}x{']' * n}\n"
            f"  y: {'[' * n}*d{']' * n}\n")
    issues = issues_of(text, registry)
    assert any(f"more than {MAX_DEPTH} levels" in i.message and i.path.startswith("agent.y[0]") for i in issues)


def test_nesting_up_to_the_limit_is_fine(registry: Registry) -> None:
    n = MAX_DEPTH - 10
    comp = compose(f"""\
        seamkit: 1
        agent:
          model: {{use: scripted, turns: [{{tool_calls: [{{name: t, arguments: {{a: {'[' * n}{']' * n}}}}}]}}]}}
        """, registry)
    args = comp.agent.model.params["turns"][0]["tool_calls"][0]["arguments"]["a"]
    depth = 0
    while isinstance(args, list) and args:
        args, depth = args[0], depth + 1
    assert depth == n - 1


# -- 3. $ref in the output schema --------------------------------------------------------------


def test_unresolvable_ref_is_refused_at_load(registry: Registry) -> None:
    (issue,) = issues_of("""\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          output:
            json_schema:
              type: object
              properties: {a: {$ref: "#/nope"}}
        """, registry)
    assert issue.path == 'agent.output.json_schema.properties.a["$ref"]'
    assert "unresolvable $ref '#/nope'" in issue.message and (issue.line, issue.column) == (7, 30)


def test_remote_ref_is_refused_without_any_fetch(registry: Registry, no_network: Any) -> None:
    (issue,) = issues_of("""\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          output: {json_schema: {$ref: "http://127.0.0.1:9/x.json"}}
        """, registry)
    assert "remote $ref not allowed" in issue.message


def test_local_refs_resolve(registry: Registry) -> None:
    comp = compose("""\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          output:
            json_schema:
              $id: "https://example.com/root.json"
              $defs:
                n: {type: integer}
                sub: {$id: "sub.json", $defs: {s: {type: string}}}
              properties:
                a: {$ref: "#/$defs/n"}
                b: {$ref: "sub.json#/$defs/s"}
                c: {$ref: "https://example.com/root.json#/$defs/n"}
                d: {const: {$ref: "#/not-a-reference-just-data"}}
        """, registry)
    assert comp.agent.output is not None


# -- 4. prompts --------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", ['"Hi {{who}}"', '{template: "Hi {{who}}"}', '{template: "Hi {{who}}", id: p}'])
def test_every_prompt_form_is_a_template(prompt: str, registry: Registry) -> None:
    comp = compose(f"""\
        seamkit: 1
        agent:
          name: greeter
          model: {{use: scripted, turns: [ok]}}
          prompt: {prompt}
        """, registry)
    agent = build_agent(comp, registry=registry)
    assert isinstance(agent.prompt, Prompt)
    assert (agent.prompt.id, agent.prompt.version) == ("p" if "id:" in prompt else "greeter", "1")
    result = agent.run_sync("task", variables={"who": "Ada"})
    assert result.transcript[0].text == "Hi Ada"


# -- 5. build-time configuration errors ---------------------------------------------------------


class RootConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    root: Path


def make_picky(cfg: RootConfig) -> Any:
    raise ConfigError([ConfigIssue(f"root directory {str(cfg.root)!r} does not exist", "root")])


def make_crashing(cfg: RootConfig) -> Any:
    raise RuntimeError("libfoo is missing")


def make_undescribable() -> Any:
    from seamkit import tool

    def connect(conn: socket.socket) -> str:
        """Use a socket (a type no JSON Schema describes)."""
        return "ok"

    return tool(side_effecting=False)(connect)


class BuildPlugin:
    @hookimpl
    def seamkit_register_tools(self, register: Any) -> None:
        register("picky", make_picky, config=RootConfig, description="Refuses its root when built")
        register("crashing", make_crashing, config=RootConfig, description="Cannot be built")
        register("undescribable", make_undescribable, description="A parameter type JSON Schema cannot describe")


@pytest.fixture
def build_registry() -> Registry:
    reg = make_registry()
    reg.register_plugin(BuildPlugin(), "build", distribution="seamkit-build-tests")
    return reg


def test_factory_config_error_is_a_config_error_at_the_param(build_registry: Registry, tmp_path: Path) -> None:
    comp = compose("""\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools:
            - {use: picky, root: /nonexistent/dir}
        """, build_registry)
    with pytest.raises(ConfigError) as info:
        build_agent(comp, registry=build_registry)
    assert not isinstance(info.value, ComponentBuildError)
    (issue,) = info.value.issues
    assert issue.path == "agent.tools[0].root" and (issue.line, issue.column) == (5, 26)
    assert "tool 'picky'" in issue.message and "does not exist" in issue.message


def test_factory_crash_is_a_component_build_error(build_registry: Registry) -> None:
    comp = compose("""\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [{use: crashing, root: /tmp}]
        """, build_registry)
    with pytest.raises(ComponentBuildError) as info:
        build_agent(comp, registry=build_registry)
    assert "libfoo is missing" in str(info.value)


def test_a_config_problem_wins_over_a_crash(build_registry: Registry) -> None:
    comp = compose("""\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [{use: crashing, root: /tmp}, {use: picky, root: /nope}]
        """, build_registry)
    with pytest.raises(ConfigError) as info:
        build_agent(comp, registry=build_registry)
    assert not isinstance(info.value, ComponentBuildError) and len(info.value.issues) == 2


def test_a_tool_whose_parameters_cannot_be_described_is_a_config_error(build_registry: Registry) -> None:
    # issue 19: @tool builds its schema on first use, not when the factory decorates the function;
    # the definition error is still reported at the slot, as a problem of the tool's definition
    comp = compose("""\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [undescribable]
        """, build_registry)
    with pytest.raises(ConfigError) as info:
        build_agent(comp, registry=build_registry)
    assert not isinstance(info.value, ComponentBuildError)
    (issue,) = info.value.issues
    assert issue.path == "agent.tools[0]" and "cannot be described to a model" in issue.message


# -- 8. smaller --------------------------------------------------------------------------------


def test_quoted_format_version_says_unquoted_number(registry: Registry) -> None:
    (issue,) = issues_of('seamkit: "1"\nagent: {model: {use: scripted, turns: [x]}}\n', registry)
    assert "must be the number 1, unquoted" in issue.message


@pytest.mark.parametrize(("agent", "words"), [
    ("5", "expected a mapping, not a number"),
    ("[a]", "expected a mapping, not a list"),
    ("{model: {use: scripted, turns: [x]}, prompt: 5}", "the prompt is a text, or a mapping"),
    ("{model: {use: scripted, turns: [x]}, settings: [1]}", "expected a mapping, not a list"),
    ("{model: {use: scripted, turns: [x]}, tools: calculator}", "write [calculator]"),
])
def test_type_errors_use_user_words(agent: str, words: str, registry: Registry) -> None:
    (issue,) = issues_of(f"seamkit: 1\nagent: {agent}\n", registry)
    assert words in issue.message
    assert "instance of" not in issue.message and "Config" not in issue.message


def test_yaml11_boolean_is_reported_once_but_an_unknown_key_still_is(registry: Registry) -> None:
    (issue,) = issues_of("seamkit: 1\nagent:\n  model: {use: scripted, turns: [x]}\n  settings: {seed: yes}\n",
                         registry)
    assert "boolean in YAML 1.1" in issue.message
    issues = issues_of("seamkit: 1\nagent:\n  model: {use: scripted, turns: [x]}\n  colour: NO\n", registry)
    assert sorted(i.message.split(" ")[0] for i in issues) == ["'NO'", "unknown"]


def test_alias_bomb_reports_only_that(registry: Registry) -> None:
    lines = ["seamkit: 1", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 8)}]" for i in range(1, 8)]
    (issue,) = issues_of("\n".join(lines), registry)
    assert "alias-expansion bomb" in issue.message


@pytest.mark.parametrize("name", ['""', '"  "'])
def test_empty_agent_name_is_an_error(name: str, registry: Registry) -> None:
    (issue,) = issues_of(f"seamkit: 1\nagent:\n  name: {name}\n  model: {{use: scripted, turns: [x]}}\n", registry)
    assert issue.path == "agent.name" and "empty" in issue.message


def test_files_larger_than_1_mib_are_refused_quickly(tmp_path: Path, registry: Registry) -> None:
    path = tmp_path / "huge.yaml"
    body = "seamkit: 1\nagent:\n  model: {use: scripted, turns: [x]}\n  prompt: |\n"
    path.write_text(body + ("    " + "x" * 1000 + "\n") * (MAX_FILE_BYTES // 1000 + 1))
    with pytest.raises(ConfigError, match="larger than 1 MiB") as info:
        load_composition(path, registry=registry)
    assert info.value.issues[0].file == str(path)
    with pytest.raises(ConfigError, match="larger than 1 MiB"):
        loads_composition(path.read_text(), registry=registry)
    path.write_text(body + "    short\n")
    assert load_composition(path, registry=registry).agent.prompt is not None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("  tool_choice: 5\n", "tool_choice '5' names no configured tool"),
        ("  tool_choice: required\n", "needs at least one tool"),
    ],
)
def test_tool_choice_problems_are_found_at_load(line: str, message: str) -> None:
    # regressions: `validate` said ok and the run failed (an unquoted number; required without tools)
    from seamkit.composition import loads_composition
    from seamkit.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        loads_composition("seamkit: 1\nagent:\n  model: {use: scripted, turns: [x]}\n" + line, file="t.yaml", env={})
    issue = next(i for i in info.value.issues if i.path == "agent.tool_choice")
    assert message in issue.message and issue.line == 4


@pytest.mark.parametrize(
    "line", ["  settings: {temperature: .inf}\n", "  settings: {temperature: 1e308}\n",
             "  settings: {seed: 99999999999999999999999}\n"],
)
def test_out_of_range_settings_are_config_errors(line: str) -> None:
    # regression: infinite temperatures and seeds beyond 64 bits were accepted
    from seamkit.composition import loads_composition
    from seamkit.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        loads_composition("seamkit: 1\nagent:\n  model: {use: scripted, turns: [x]}\n" + line, file="t.yaml", env={})
    assert any(i.path.startswith("agent.settings.") and i.line == 4 for i in info.value.issues)


# -- issue 10: long values, aliases and deep nesting in messages --------------------------------

LONG = "Z" * 5_000

@pytest.mark.parametrize(
    "body",
    [
        f"  tools: [{LONG}]\n",  # unknown component
        f"  tools: [calculator, calculator, {LONG}, {LONG}]\n",  # duplicate tool
        f"  tool_choice: {LONG}\n  tools: [calculator]\n",  # names no tool
        f"  ? {LONG}\n  : 1\n",  # unknown key (a key this long is written as an explicit key)
        f"  tools: [calculator]\n  approvals:\n    ? {LONG}\n    : never\n",  # approval of no tool
        f"  output: {{json_schema: {{type: {LONG}}}}}\n",  # jsonschema repeats the value
        f"  output: {{json_schema: {{$ref: '#/{LONG}'}}}}\n",  # unresolvable $ref
        f"  prompt: '{{{{{LONG}.x}}}}'\n",  # template marker
        f"  prompt: ${{{LONG}}}\n",  # environment variable name
        f"  prompt: !!{LONG} x\n",  # tag
        f"  ? {LONG}\n  : 1\n  ? {LONG}\n  : 2\n",  # duplicate keys
        f"  settings:\n    ? {LONG}\n    : 1\n",  # a long key inside the key path (regression)
    ],
)
def test_error_messages_cut_long_values(registry: Registry, body: str) -> None:
    """No message repeats a value whole: echoed values are cut at 200 characters, saying how
    many more there were (a 900 KB value printed 300 times made a 539 MB error)."""
    text = "seamkit: 1\nagent:\n  model: {use: scripted, turns: [x]}\n" + body
    issues = issues_of(text, registry, env={})
    assert any("Z" * 100 in i.message for i in issues)  # the value is shown, in part
    for issue in issues:
        assert "Z" * 201 not in issue.message and len(issue.message) < 1_200, issue.message
        assert "Z" * 201 not in issue.path, issue.path
        if "Z" * 100 in issue.message:
            assert "more characters" in issue.message or "characters cut" in issue.message


def test_values_reached_through_an_alias_are_reported_at_the_alias(registry: Registry) -> None:
    """A problem in a value used through *alias is located where the alias is written (the key
    path's own place), and the message names where the anchor is."""
    text = ("seamkit: 1\n"
            "agent:\n"
            "  prompt: &p You help.\n"
            "  model: &m {use: scripted, turns: [x]}\n"
            "  tools: [calculator, *p]\n"
            "  settings: *m\n")
    issues = {i.path: i for i in issues_of(text, registry)}
    tool = issues["agent.tools[1]"]
    assert "unknown tool" in tool.message and (tool.line, tool.column) == (5, 23)
    assert "through the alias *p; its anchor &p is at line 3, column 11" in tool.message
    key = issues["agent.settings.use"]  # an unknown key of the aliased mapping: at the alias too
    assert "unknown key 'use'" in key.message and (key.line, key.column) == (6, 13)
    assert "its anchor &m is at line 4, column 10" in key.message
    assert not any("through the alias" in i.message for i in issues.values() if i.line != 5 and i.line != 6)


def test_nesting_too_deep_names_the_key_path(registry: Registry) -> None:
    deep = "[" * 600 + "]" * 600
    text = f"seamkit: 1\nagent:\n  model: {{use: scripted, turns: [{{tool_calls: [{{arguments: {{a: {deep}}}}}]}}]}}\n"
    (issue,) = issues_of(text, registry)
    assert f"more than {MAX_DEPTH} levels" in issue.message
    head = "agent.model.turns[0].tool_calls[0].arguments.a"
    assert issue.path.startswith(head) and issue.path == head + "[0]" * (MAX_DEPTH - 7)
    assert text.splitlines()[issue.line - 1][issue.column - 1] == "["  # type: ignore[operator]


@pytest.mark.parametrize("slot", ["  model: {use: 7}\n",
                                  "  model: {use: scripted, turns: [x]}\n  tools: [{use: 5}]\n",
                                  "  model: {use: scripted, turns: [x]}\n  checkpoints: {use: 1.5}\n"])
def test_a_numeric_component_name_is_resolved_at_load_as_run_resolves_it(registry: Registry, slot: str) -> None:
    # regression (outside testing of issue 10): the format takes a number as its text, but the slot
    # check skipped non-strings, so validate said ok and run failed with "unknown provider '7'"
    issues = issues_of("seamkit: 1\nagent:\n" + slot, registry)
    assert [i.path.endswith(".use") and " unknown " in f" {i.message}" for i in issues] == [True], issues
