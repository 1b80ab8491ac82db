"""Loading valid compositions, building agents, scalars, paths and secrets."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from composition_plugins import BUILT, TAGGED, LocalTools, SearchA, SearchB
from seamkit._agent.agent import Agent
from seamkit._agent.prompt import Prompt
from seamkit._plugins.registry import Registry
from seamkit.composition import Composition, Settings, build_agent, load_composition, loads_composition
from seamkit.composition._check import fields_at
from seamkit.errors import ConfigError
from seamkit.testing import ScriptedModel

SECRET = "sk-live-0123456789abcdef"


def write(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


FULL = """\
    seamkit: 1
    agent:
      model:
        use: scripted
        turns:
          - tool_calls: [{name: calculator, arguments: {expression: "2 + 3"}}]
          - text: '{"answer": 5}'
      prompt: {id: adder, version: 1.0.0, template: "You add numbers for {{who}}."}
      tools: [calculator, {use: read_file, root: ./data}]
      output: {json_schema: {type: object, properties: {answer: {type: number}}, required: [answer]}}
      tool_choice: calculator
      reset_tool_choice: true
      max_steps: 6
      max_parallel_tools: 2
      parallel_side_effects: true
      settings: {temperature: 0, max_tokens: 256, seed: 7}
      middlewares: [{use: tag, label: outer}]
    """


async def test_valid_composition_builds_and_runs_end_to_end(tmp_path: Path, registry: Registry) -> None:
    (tmp_path / "data").mkdir()
    comp = load_composition(write(tmp_path, FULL, "quickstart.yaml"), registry=registry)
    agent = build_agent(comp, registry=registry)
    assert isinstance(agent, Agent)
    assert agent.name == "quickstart"
    assert agent.prompt == Prompt("You add numbers for {{who}}.", id="adder", version="1.0.0")
    assert [t.schema.name for t in agent.tools] == ["calculator", "read_file"]
    assert (agent.tool_choice, agent.max_steps, agent.max_parallel_tools) == ("calculator", 6, 2)
    assert agent.parallel_side_effects is True
    assert (agent.temperature, agent.max_tokens, agent.seed) == (0.0, 256, 7)
    TAGGED.clear()
    result = await agent.run("add 2 and 3", variables={"who": "tests"})
    assert result.output == {"answer": 5}
    assert result.stop_reason == "completed"
    assert "outer:chat" in TAGGED and "outer:tool" in TAGGED
    model = agent.model
    assert isinstance(model, ScriptedModel)
    first = model.requests[0]
    assert first.tool_choice == "calculator"
    assert first.temperature == 0.0 and first.max_tokens == 256 and first.seed == 7
    assert first.messages[0].text == "You add numbers for tests."
    tool_results = [m for m in result.transcript if m.role == "tool"]
    assert tool_results and "5" in json.dumps([str(m) for m in tool_results])


def test_minimal_composition_defaults(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [hello]}
          prompt: You are terse.
          output: text
        """), registry=registry)
    agent = build_agent(comp, registry=registry)
    assert agent.name == "agent"  # the file stem
    assert agent.prompt == Prompt("You are terse.", id="agent", version="1")  # always a Prompt
    assert agent.output is None and agent.tools == () and agent.max_steps == 10
    assert agent.run_sync("hi").output == "hello"


def test_explicit_name_wins_over_file_stem(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent: {name: analyst, model: {use: scripted, turns: [x]}}
        """, "other.yaml"), registry=registry)
    assert comp.agent.name == "analyst"


def test_validation_does_not_call_factories(tmp_path: Path, registry: Registry) -> None:
    BUILT.clear()
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: heavy, times: 2}
          tools: [calculator, {use: echo, prefix: "> "}]
        """), registry=registry)
    assert BUILT == []
    assert comp.agent.model.config.times == 2
    with pytest.raises(ConfigError) as info:
        build_agent(comp, registry=registry)
    assert "building provider 'heavy' failed" in str(info.value)


def test_number_like_text_keeps_its_spelling(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools:
            - use: echo
              version: 3.10
              ratio: 3.10
              mode: 0755
              times: 1_0
          prompt: {template: t, version: 1.10}
        """), registry=registry)
    cfg = comp.agent.tools[0].config
    assert cfg.version == "3.10" and isinstance(cfg.version, str)
    assert cfg.ratio == 3.1 and isinstance(cfg.ratio, float)
    assert cfg.mode == "0755"
    assert cfg.times == 10
    assert comp.agent.prompt is not None and comp.agent.prompt.version == "1.10"


def test_plain_numbers_in_text_fields_are_lossless(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          name: 42
          model: {use: scripted, turns: [x]}
          prompt: {template: t, id: 7, version: 1.5}
        """), registry=registry)
    assert comp.agent.name == "42"
    assert comp.agent.prompt is not None and (comp.agent.prompt.id, comp.agent.prompt.version) == ("7", "1.5")


def test_quoted_yaml11_words_and_true_false_any_case(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x], repeat: TRUE}
          reset_tool_choice: False
          tools: [{use: echo, prefix: "NO"}]
        """), registry=registry)
    assert comp.agent.model.config.repeat is True
    assert comp.agent.reset_tool_choice is False
    assert comp.agent.tools[0].config.prefix == "NO"


def test_reset_tool_choice_none_reaches_the_agent(tmp_path: Path, registry: Registry) -> None:
    from seamkit.composition import build_agent

    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [{use: echo}]
          tool_choice: required
          reset_tool_choice: none
        """), registry=registry)
    assert comp.agent.reset_tool_choice == "none"
    assert build_agent(comp, registry=registry).reset_tool_choice == "none"


@pytest.mark.parametrize("value", ["bogus", "1", "[none]"])
def test_a_wrong_reset_tool_choice_is_one_problem_naming_the_values(tmp_path: Path, registry: Registry,
                                                                     value: str) -> None:
    # a newcomer saw two problems for one wrong value (one per alternative of the union)
    with pytest.raises(ConfigError) as info:
        load_composition(write(tmp_path, f"""\
            seamkit: 1
            agent:
              model: {{use: scripted, turns: [x]}}
              reset_tool_choice: {value}
            """), registry=registry)
    assert len(info.value.issues) == 1, info.value.issues
    assert "must be true, false, 'auto' or 'none'" in str(info.value.issues[0])


def test_relative_paths_resolve_against_the_yaml_directory(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "conf"
    (conf / "data").mkdir(parents=True)
    (conf / "data" / "x.txt").write_text("hello")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    comp = load_composition(write(conf, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [{use: read_file, root: ./data}]
        """), registry=registry)
    assert comp.base_dir == conf.resolve()
    assert Path(comp.agent.tools[0].config.root) == (conf / "data").resolve()
    assert comp.agent.tools[0].params["root"] == "./data"  # as written
    agent = build_agent(comp, registry=registry)
    assert agent.tools[0].fn("x.txt") == "hello"  # type: ignore[attr-defined]


def test_absolute_paths_are_kept(tmp_path: Path, registry: Registry) -> None:
    (tmp_path / "abs").mkdir()
    comp = load_composition(write(tmp_path / "abs", f"""\
        seamkit: 1
        agent:
          model: {{use: scripted, turns: [x]}}
          tools: [{{use: read_file, root: "{tmp_path / 'abs'}"}}]
        """), registry=registry)
    assert Path(comp.agent.tools[0].config.root) == tmp_path / "abs"


def test_env_interpolation_whole_embedded_default_and_escape(tmp_path: Path, registry: Registry) -> None:
    env = {"GREETING": "hi", "EMPTY": ""}
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: ["${GREETING}", "say ${GREETING}!", "${MISSING:-fallback}",
                                         "${EMPTY:-dflt}", "$${GREETING}", 'single ${GREETING}']}
          max_steps: ${STEPS:-3}
        """), env=env, registry=registry)
    turns = comp.agent.model.config.turns
    assert turns == ["hi", "say hi!", "fallback", "dflt", "${GREETING}", "single hi"]
    assert comp.agent.max_steps == 3


def test_env_argument_replaces_os_environ(tmp_path: Path, registry: Registry,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEAMKIT_ONLY_IN_OS", "x")
    p = write(tmp_path, """\
        seamkit: 1
        agent: {model: {use: scripted, turns: ["${SEAMKIT_ONLY_IN_OS}"]}}
        """)
    assert load_composition(p, registry=registry).agent.model.config.turns == ["x"]
    with pytest.raises(ConfigError, match="SEAMKIT_ONLY_IN_OS"):
        load_composition(p, env={}, registry=registry)


SECRET_YAML = """\
    seamkit: 1
    agent:
      name: ${NAME_FROM_ENV}
      model:
        use: secretive
        api_key: ${API_KEY}
        base_url: "http://127.0.0.1:9/${API_KEY}"
        answer: ${API_KEY}
      prompt: "token is ${API_KEY}"
      max_steps: ${API_KEY}
      tool_choice: ${API_KEY}
      tools: [{use: echo, times: "${API_KEY}", prefix: "${API_KEY}"}]
    """


def test_env_secrets_never_appear_in_errors(tmp_path: Path, registry: Registry) -> None:
    env = {"API_KEY": SECRET, "NAME_FROM_ENV": "bot"}
    with pytest.raises(ConfigError) as info:
        load_composition(write(tmp_path, SECRET_YAML), env=env, registry=registry)
    text = str(info.value) + repr(info.value) + repr(info.value.issues)
    assert SECRET not in text
    assert SECRET[:12] not in text
    paths = {i.path for i in info.value.issues}
    assert {"agent.max_steps", "agent.tool_choice", "agent.tools[0].times"} <= paths


def test_env_secrets_never_appear_in_repr(tmp_path: Path, registry: Registry) -> None:
    env = {"API_KEY": SECRET, "NAME_FROM_ENV": "bot"}
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: secretive, api_key: "${API_KEY}", answer: "${API_KEY}"}
          prompt: "token is ${API_KEY}"
          tools: [{use: echo, prefix: "${API_KEY}"}]
          name: ${NAME_FROM_ENV}
        """), env=env, registry=registry)
    for text in (repr(comp), str(comp), repr(comp.agent), repr(comp.agent.model), repr(comp.agent.tools)):
        assert SECRET not in text
    assert "***" in repr(comp.agent.model)
    # the values themselves are there for the program
    assert comp.agent.model.config.api_key.get_secret_value() == SECRET
    assert comp.agent.prompt is not None and comp.agent.prompt.template == f"token is {SECRET}"
    assert build_agent(comp, registry=registry).run_sync("x").output == SECRET


def test_secret_named_params_are_masked_even_when_written_inline(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent: {model: {use: secretive, api_key: inline-secret-value}}
        """), registry=registry)
    assert "inline-secret-value" not in repr(comp)


def test_factory_error_is_located_and_scrubbed(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model:
            use: failing
            why: "${WHY}"
        """), env={"WHY": SECRET}, registry=registry)
    with pytest.raises(ConfigError) as info:
        build_agent(comp, registry=registry)
    (issue,) = info.value.issues
    assert (issue.path, issue.line, issue.column) == ("agent.model", 4, 5)
    assert "RuntimeError" in issue.message and SECRET not in str(info.value)


def test_from_picks_one_of_two_distributions(tmp_path: Path, registry: Registry) -> None:
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [{use: search, from: seamkit-search-b}]
        """), registry=registry)
    assert comp.agent.tools[0].distribution == "seamkit-search-b"
    agent = build_agent(comp, registry=registry)
    assert agent.tools[0].fn("q") == "b:q"  # type: ignore[attr-defined]


def test_default_registry_is_the_process_registry(tmp_path: Path, register_plugin: Any) -> None:
    report = register_plugin(LocalTools(), "composition-local", distribution="seamkit-local-tools")
    assert report.status == "ok"
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [{use: echo, prefix: "> "}]
        """))
    assert build_agent(comp).tools[0].fn("a") == "> a"  # type: ignore[attr-defined]


def test_loads_composition_from_text(registry: Registry) -> None:
    comp = loads_composition("seamkit: 1\nagent: {model: {use: scripted, turns: [x]}}\n", registry=registry)
    assert comp.file is None and comp.agent.name == "agent"
    with pytest.raises(ConfigError) as info:
        loads_composition("seamkit: 1\nagent: {model: {use: nope}}\n", registry=registry)
    assert info.value.issues[0].file is None and info.value.issues[0].line == 2


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_composition(tmp_path / "missing.yaml", registry=Registry())
    assert "cannot read the file" in str(info.value)
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"seamkit: 1\nagent: \xff\n")
    with pytest.raises(ConfigError) as info:
        load_composition(bad, registry=Registry())
    assert (info.value.issues[0].line, info.value.issues[0].column) == (2, 8)


def test_alias_bomb_is_refused(registry: Registry) -> None:
    lines = ["seamkit: 1", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}]"
              for i in range(1, 8)]
    with pytest.raises(ConfigError, match="alias-expansion bomb"):
        loads_composition("\n".join(lines), registry=registry)


def _refused_measured(text: str, file: str, registry: Registry) -> tuple[pytest.ExceptionInfo[ConfigError], float, int]:
    """Load ``text`` (named ``file``), which must raise ``ConfigError``: its info, the seconds the
    load took and the peak memory it traced."""
    import time
    import tracemalloc

    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ConfigError) as info:
            loads_composition(text, file=file, registry=registry)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return info, elapsed, peak


@pytest.mark.parametrize("style", ["flow", "block", "mapping"])
def test_billion_laughs_is_reported_at_its_alias_fast_and_in_little_memory(registry: Registry, style: str) -> None:
    """Nine levels of ten aliases each: 10**9 values once expanded. Refused before any expansion,
    at the first alias that takes the document past MAX_VALUES, in well under a second."""
    from seamkit.composition._yaml import MAX_VALUES

    def level(i: int) -> str:
        items = [f"*l{i - 1}"] * 10 if i else ['"lol"'] * 10
        if style == "flow":
            return f"l{i}: &l{i} [{', '.join(items)}]"
        if style == "block":
            return f"l{i}: &l{i}\n" + "".join(f"  - {x}\n" for x in items).rstrip("\n")
        return f"l{i}: &l{i} {{{', '.join(f'k{j}: {x}' for j, x in enumerate(items))}}}"

    text = "\n".join(["seamkit: 1", *(level(i) for i in range(10)), "agent: {model: {use: scripted, turns: [x]}}"])
    info, elapsed, peak = _refused_measured(text, "laughs.yaml", registry)
    (issue,) = info.value.issues
    assert issue.file == "laughs.yaml" and issue.line is not None and issue.column is not None
    at = text.splitlines()[issue.line - 1][issue.column - 1:]
    assert at.startswith("*l"), at  # the position is an alias as written
    anchor = at[1:].split(",")[0].split("}")[0].split("]")[0].strip()
    assert issue.path.split(".")[0].split("[")[0] == f"l{int(anchor[1:]) + 1}"  # inside the next level

    def count(value: Any) -> int:  # values with aliases expanded, mapping keys included
        if isinstance(value, dict):
            return 1 + sum(1 + count(v) for v in value.values())
        return 1 + sum(count(v) for v in value) if isinstance(value, list) else 1

    upto = text.split(f"\nl{int(anchor[1:]) + 1}:")[0]  # the levels up to the anchor's
    expanded = count(yaml.safe_load(upto)[anchor])
    assert f"the alias *{anchor} expands to {expanded:,} values" in issue.message
    assert f"past {MAX_VALUES:,} values" in issue.message
    assert elapsed < 1.0 and peak < 20_000_000, (elapsed, peak)


@pytest.mark.parametrize("place", ["tools", "enum"])
def test_aliases_to_a_long_text_are_refused_at_the_alias_that_passes_the_character_limit(
        registry: Registry, place: str) -> None:
    """A 0.9 MB file that anchors a 900 KB text and uses it 300 times stands for 270 MB: once
    accepted by the value count alone, it made `validate` print 539 MB and take 90 s and 2.6 GB,
    and a valid schema `enum` of it passed. Refused before any expansion, at the alias (in document
    order) that takes the characters past MAX_CHARACTERS, fast and in little memory."""
    from seamkit.composition._yaml import MAX_CHARACTERS

    big = "A" * 200_000  # the tester's file had 900 KB; smaller keeps the test quick, the same shape
    uses = ", ".join(["*p"] * 300)
    if place == "tools":
        text = (f"seamkit: 1\nagent:\n  model: {{use: scripted, turns: [x]}}\n  prompt: &p \"{big}\"\n"
                f"  tools: [{uses}]\n")
    else:
        text = (f"seamkit: 1\nagent:\n  model: {{use: scripted, turns: [x]}}\n  output:\n    json_schema:\n"
                f"      type: string\n      enum: [&p \"{big}\", {uses}]\n")
    info, elapsed, peak = _refused_measured(text, "amplified.yaml", registry)
    (issue,) = info.value.issues
    assert "alias-expansion bomb" in issue.message
    assert f"the alias *p expands to {len(big):,} characters" in issue.message
    assert f"past {MAX_CHARACTERS:,} characters" in issue.message
    # after the anchored text and the rest of the file (a few characters), this many aliases fit
    fit = (MAX_CHARACTERS - len(big) - 1) // len(big)
    assert issue.path.endswith(f"[{fit + (place == 'enum')}]")
    line = text.splitlines()[issue.line - 1]  # type: ignore[operator]
    column = issue.column - 1  # type: ignore[operator]
    assert line[column:column + 2] == "*p" and line[:column].count("*p") == fit
    assert len(str(info.value)) < 1_000
    assert elapsed < 10.0 and peak < 60_000_000, (elapsed, peak)


def test_aliases_within_the_limit_still_load(registry: Registry) -> None:
    text = ("seamkit: 1\nx-defaults: &d {use: scripted, turns: &t [a, b]}\nagent:\n  model: *d\n"
            "  prompt: {template: hi, id: p}\n  max_steps: 3\nx-more: [*t, *t, *d]\n")
    with pytest.raises(ConfigError) as info:  # only the unknown top-level key: the aliases are fine
        loads_composition(text, registry=registry)
    assert [i.path for i in info.value.issues] == ["x-defaults", "x-more"]


def test_component_removed_after_validation_is_reported_at_build(tmp_path: Path) -> None:
    import seamkit.testing._components as testkit

    reg = Registry()
    reg.register_plugin(testkit, "testkit", distribution="seamkit")
    reg.register_plugin(SearchA(), "search-a", distribution="seamkit-search-a")
    comp = load_composition(write(tmp_path, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [search]
        """), registry=reg)
    reg.register_plugin(SearchB(), "search-b", distribution="seamkit-search-b")
    with pytest.raises(ConfigError) as info:
        build_agent(comp, registry=reg)
    (issue,) = info.value.issues
    assert issue.path == "agent.tools[0]" and issue.line == 4 and "seamkit-search-b" in issue.message


def test_explicit_str_tag_is_text_and_other_tags_are_refused(registry: Registry) -> None:
    comp = loads_composition(
        "seamkit: 1\nagent: {name: !!str 0755, model: {use: scripted, turns: [x]}}\n", registry=registry)
    assert comp.agent.name == "0755"
    with pytest.raises(ConfigError) as info:
        loads_composition("seamkit: 1\nagent: {name: !!int 5, model: {use: scripted, turns: [x]}}\n",
                          registry=registry)
    (issue,) = info.value.issues
    assert (issue.path, issue.line, issue.column) == ("agent.name", 2, 15) and "!!int" in issue.message


def test_new_slot_kinds_are_found_generically(registry: Registry) -> None:
    from pydantic import BaseModel
    from seamkit.composition import ComponentRef
    from seamkit.composition._check import Context, check_slot, iter_slots

    class StoreRef(ComponentRef):
        kind = "tool"  # any registry kind; a real one would be "store"

    class Request(BaseModel):
        compactor: StoreRef | None = None

    class Extended(BaseModel):
        checkpoints: StoreRef | None = None
        request: Request | None = None

    data = {"checkpoints": {"use": "echo", "times": 2}, "request": {"compactor": "calculatr"}}
    slots = list(iter_slots(Extended, data))
    assert [(p, s) for p, s, _ in slots] == [(("checkpoints",), StoreRef), (("request", "compactor"), StoreRef)]
    ctx = Context(None, {}, {}, set(), set())
    results = [check_slot(ctx, registry, s, raw, p) for p, s, raw in slots]
    assert results[0][1].times == 2 and results[0][2] is True
    assert [i.path for i in ctx.issues] == ["request.compactor"]
    assert "did you mean 'calculator'" in ctx.issues[0].message


def test_home_relative_paths_expand_to_the_home_directory(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    conf = tmp_path / "conf"
    conf.mkdir()
    comp = load_composition(write(conf, """\
        seamkit: 1
        agent:
          model: {use: scripted, turns: [x]}
          tools: [{use: read_file, root: ~/data}]
        """), registry=registry)
    assert Path(comp.agent.tools[0].config.root) == home / "data"  # not conf/~/data


# -- a key written in the wrong section: where it belongs (issue 10, item 22) ------------------------


def _issues(text: str, registry: Registry) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        loads_composition(textwrap.dedent(text), registry=registry)
    return {i.path: i.message for i in info.value.issues}


def test_a_key_of_another_section_says_where_it_belongs(registry: Registry) -> None:
    issues = _issues("""\
        seamkit: 1
        agent:
          api_key: ${NOT_NEEDED:-x}
          model: {use: secretive, api_key: k, temperature: 0.2, max_steps: 3, prefix: ">"}
          tools: [{use: echo, seed: 7}]
          settings: {answer: yes-please}
          max_tokens: 10
        """, registry)
    where = {path: message.split(" (allowed: ")[0] for path, message in issues.items()}
    assert where == {
        "agent.api_key": "unknown key 'api_key'; it belongs under agent.model, not here",
        "agent.model.temperature": "unknown key 'temperature' for provider 'secretive'; it belongs under "
                                   "agent.settings, not here",
        "agent.model.max_steps": "unknown key 'max_steps' for provider 'secretive'; it belongs under agent, not here",
        "agent.model.prefix": "unknown key 'prefix' for provider 'secretive'; it belongs under agent.tools[0], "
                              "not here",  # echo's own parameter
        "agent.tools[0].seed": "unknown key 'seed' for tool 'echo'; it belongs under agent.settings, not here",
        "agent.settings.answer": "unknown key 'answer'; it belongs under agent.model, not here",
        "agent.max_tokens": "unknown key 'max_tokens'; it belongs under agent.settings, not here",
    }
    assert issues["agent.max_tokens"].endswith(f"(allowed: {', '.join(fields_at(Composition, ['agent']))})")


def test_where_a_key_belongs_comes_from_the_models_and_close_spellings_point_there_too(registry: Registry) -> None:
    for key in Settings.model_fields:  # every setting, whatever the model declares
        issues = _issues(f"seamkit: 1\nagent:\n  model: {{use: scripted, turns: [x], {key}: 1}}\n", registry)
        assert issues[f"agent.model.{key}"].startswith(
            f"unknown key {key!r} for provider 'scripted'; it belongs under agent.settings, not here"), issues
    issues = _issues("seamkit: 1\nagent:\n  model: {use: scripted, turns: [x], temprature: 1}\n", registry)
    assert "did you mean agent.settings.temperature?" in issues["agent.model.temprature"]
    issues = _issues("seamkit: 1\nagent:\n  model: {use: scripted, turns: [x]}\n  settings: {max_tokenz: 3}\n",
                     registry)  # a close spelling in the same section still wins
    assert "did you mean 'max_tokens'?" in issues["agent.settings.max_tokenz"]
