"""Reading an eval suite: what it holds, and every problem located (file:line:column + key path)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest
from seamkit.errors import ConfigError
from seamkit_evals.suite import load_suite

AGENT = """
seamkit: 1
agent:
  name: echo
  model: {use: scripted, turns: ["hello there"], repeat: true}
  prompt: "You help {{who}}."
  checkpoints: null
agents:
  other:
    model: {use: scripted, turns: ["other"]}
    checkpoints: null
"""

Write = Callable[[str, str], Path]


def problems(exc: pytest.ExceptionInfo[ConfigError]) -> list[str]:
    return [str(i) for i in exc.value.issues]


@pytest.fixture
def agent(write: Write) -> Path:
    return write("agent.yaml", AGENT)


def test_a_suite_loads_with_its_cases_evaluators_and_defaults(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", """
        version: 1
        agent: agent.yaml
        evaluators: [{use: has_text, text: hello}]
        thresholds: {pass_rate: 0.5, evaluators: {only_b: 1}, max_cost_usd: 0.1}
        budget: 0.30
        cases:
          - id: a
            input: say hello
            variables: {who: Ann}
            expected: {answer: 1}
            metadata: {tag: smoke}
          - id: 7
            input: [{role: user, content: hi}, {role: assistant, content: hello}, {role: user, content: again}]
            evaluators: [{use: has_text, text: there, name: only_b}, explode]
        """)
    suite = load_suite(path)
    assert (suite.concurrency, suite.repeat, suite.agent_name) == (4, 1, "echo")
    a, b = suite.cases
    assert a.case.id == "a" and a.case.input == "say hello" and dict(a.case.variables) == {"who": "Ann"}
    assert a.case.expected == {"answer": 1} and dict(a.case.metadata) == {"tag": "smoke"}
    assert b.case.id == "7" and [(m.role, m.text) for m in b.case.input] == [
        ("user", "hi"), ("assistant", "hello"), ("user", "again")]
    # the suite's evaluators first, then the case's own
    assert [e.name for e in a.evaluators] == ["has_text"]
    assert [e.name for e in b.evaluators] == ["has_text", "only_b", "explode"]
    assert suite.budget == Decimal("0.30") and suite.thresholds.max_cost_usd == Decimal("0.1")
    assert suite.thresholds.evaluators == {"only_b": 1.0} and suite.thresholds.stated


def test_agent_name_picks_an_agent_of_the_file(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\nagent_name: other\ncases: [{id: a, input: x}]\n")
    assert load_suite(path).agent_name == "other"
    path = write("bad.yaml", "version: 1\nagent: agent.yaml\nagent_name: otter\ncases: [{id: a, input: x}]\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert problems(exc) == [f"{path}:3:13: agent_name: no agent 'otter' in agent.yaml; did you mean 'other'? "
                             "(agents: echo, other)"]


def test_an_unknown_key_is_located_with_a_did_you_mean(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", """
        version: 1
        agent: agent.yaml
        concurency: 2
        cases:
          - {id: a, input: x, expect: 1}
        """)
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    found = problems(exc)
    assert len(found) == 2, found
    assert found[0].startswith(f"{path}:3:1: concurency: unknown key 'concurency'; did you mean 'concurrency'?")
    assert found[1].startswith(f"{path}:5:23: cases[0].expect: unknown key 'expect'; did you mean 'expected'?")


def test_an_unknown_evaluator_and_bad_parameters_are_located(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", """
        version: 1
        agent: agent.yaml
        evaluators:
          - use: has_txt
        cases:
          - id: a
            input: x
            evaluators:
              - {use: has_text, txt: hello}
        """)
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    first, *rest = problems(exc)
    assert first.startswith(f"{path}:4:10: evaluators[0].use: unknown evaluator 'has_txt'; did you mean 'has_text'?")
    assert "installed evaluators:" in first and "explode" in first
    assert sorted(rest) == [
        f"{path}:9:25: cases[0].evaluators[0].txt: unknown key 'txt' for evaluator 'has_text'; did you mean 'text'? "
        "(allowed: text, name)",
        f"{path}:9:9: cases[0].evaluators[0].text: missing required key 'text' for evaluator 'has_text'"]


def test_a_missing_agent_file_is_located(components: None, write: Write) -> None:
    path = write("suite.yaml", "version: 1\nagent: nowhere.yaml\ncases: [{id: a, input: x}]\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    [problem] = problems(exc)
    assert problem.startswith(f"{path}:2:8: agent: the agent file ") and "nowhere.yaml' does not exist" in problem


def test_the_agents_own_problems_are_located_in_its_file(components: None, write: Write) -> None:
    agent = write("agent.yaml", "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n  temprature: 0\n")
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\ncases: [{id: a, input: x}]\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    [problem] = problems(exc)
    assert problem.startswith(f"{agent}:4:3: agent.temprature: unknown key 'temprature'")


def test_duplicate_case_ids_are_an_error_at_the_second(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", """
        version: 1
        agent: agent.yaml
        cases:
          - {id: same, input: x}
          - {id: other, input: q}
          - {id: same, input: z}
        """)
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert problems(exc) == [f"{path}:6:10: cases[2].id: duplicate case id 'same' (first at line 4); case ids "
                             "must be unique"]


def test_bad_thresholds_are_located(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", """
        version: 1
        agent: agent.yaml
        evaluators: [{use: has_text, text: a}]
        thresholds:
          pass_rate: 1.5
          evaluators: {has_txt: 1}
        cases: [{id: a, input: x}]
        """)
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    found = problems(exc)
    assert found[0].startswith(f"{path}:5:14: thresholds.pass_rate: Input should be less than or equal to 1")
    path2 = write("suite2.yaml", path.read_text().replace("pass_rate: 1.5", "pass_rate: 0.5"))
    with pytest.raises(ConfigError) as exc:
        load_suite(path2)
    assert problems(exc) == [f"{path2}:6:16: thresholds.evaluators.has_txt: thresholds name the evaluator "
                             "'has_txt', which no case of the suite uses; did you mean 'has_text'? "
                             "(evaluators: has_text)"]
    # reported with the suite's other problems, not only once they are fixed; by the names the
    # evaluators are declared with (name:, else the registered name)
    path3 = write("suite3.yaml", path2.read_text().replace("agent: agent.yaml", "agent: gone.yaml")
                  .replace("{use: has_text, text: a}", "{use: has_text, text: a}, {use: has_text, name: b, text: b}")
                  .replace("{has_txt: 1}", "{has_txt: 1, has_text: 1, b: 1}"))
    with pytest.raises(ConfigError) as exc:
        load_suite(path3)
    assert [p.split(": ", 2)[1] for p in problems(exc)] == ["agent", "thresholds.evaluators.has_txt"]


def test_the_version_is_required(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", "version: 2\nagent: agent.yaml\ncases: [{id: a, input: x}]\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert problems(exc)[0].startswith(f"{path}:1:10: version: unsupported suite format version 2")
    path = write("suite.yaml", "agent: agent.yaml\ncases: [{id: a, input: x}]\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert "missing format version: add 'version: 1'" in problems(exc)[0]


def test_a_suite_without_cases_is_an_error(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert "the suite has no cases" in problems(exc)[0]


def test_cases_from_a_jsonl_file_with_located_problems(components: None, agent: Path, write: Write) -> None:
    write("more.jsonl", '{"id": "b", "input": "hi", "evaluators": [{"use": "has_text", "text": "hello"}]}\n\n'
                        '{"id": "c", "input": "yo", "expected": "x"}\n')
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\ncases_file: more.jsonl\ncases: [{id: a, input: x}]\n")
    suite = load_suite(path)
    assert [c.case.id for c in suite.cases] == ["a", "b", "c"]
    assert [e.name for e in suite.cases[1].evaluators] == ["has_text"] and suite.cases[2].case.expected == "x"
    bad = write("bad.jsonl", '{"id": "a", "input": "dup"}\n{"id": "d", "inptu": "x"}\nnot json\n'
                             '{"id": "e", "input": "x", "evaluators": ["nope"]}\n')
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\ncases_file: bad.jsonl\ncases: [{id: a, input: x}]\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    found = problems(exc)
    # the first is in the other file: named, or "line 4" would read as line 4 of bad.jsonl
    assert found[0] == f"{bad}:1:1: [1].id: duplicate case id 'a' (first at suite.yaml line 4); case ids must be unique"
    assert any(p.startswith(f"{bad}:2:1: [2].inptu: unknown key 'inptu'; did you mean 'input'?") for p in found)
    assert any(p.startswith(f"{bad}:3:1: [3]: not a JSON object") for p in found), found
    assert any(p.startswith(f"{bad}:4:1: [4].evaluators[0]: unknown evaluator 'nope'") for p in found), found



def test_a_cases_file_that_is_a_folder_or_nests_too_deeply_is_located(components: None, agent: Path,
                                                                      write: Write) -> None:
    (agent.parent / "folder.jsonl").mkdir()
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\ncases_file: folder.jsonl\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert problems(exc) == [f"{path}:3:13: cases_file: the cases file '{agent.parent / 'folder.jsonl'}' is a "
                             "directory, not a file of cases (the path is relative to the suite file)"]
    # json.loads raises RecursionError on "[[[[..." (it was an unexpected error, exit 1)
    deep = write("deep.jsonl", "[" * 100_000 + "\n" + '{"id": "a", "input": "x", "expected": '
                 + "[" * 150 + "]" * 150 + "}\n" + '{"id": "b", "input": "x"}\n')
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\ncases_file: deep.jsonl\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert problems(exc) == [f"{deep}:1:1: [1]: nested more than 100 levels deep",
                             f"{deep}:2:1: [2]: nested more than 100 levels deep"]


@pytest.mark.parametrize(("value", "what"), [("{a: 1}", "a mapping"), ("5", "a number"), ("true", "a boolean")])
def test_an_input_neither_text_nor_messages_is_one_clear_problem(components: None, agent: Path, write: Write,
                                                                 value: str, what: str) -> None:
    path = write("suite.yaml", f"version: 1\nagent: agent.yaml\ncases:\n  - {{id: a, input: {value}}}\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    # not pydantic's union members as keys ('input.str', 'input["list[MessageModel]"]: ... an empty value')
    assert problems(exc) == [f"{path}:4:20: cases[0].input: expected a text or a list of messages "
                             f"({{role: user, content: ...}}), not {what}"]


def test_environment_values_are_secrets_of_the_suite(components: None, agent: Path, write: Write,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_SECRET_WORD", "hunter2-very-secret")
    path = write("suite.yaml", """
        version: 1
        agent: agent.yaml
        cases: [{id: a, input: x, evaluators: [{use: has_text, text: "${EVAL_SECRET_WORD}"}]}]
        """)
    suite = load_suite(path)
    assert "hunter2-very-secret" in suite.secrets
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\ncases: [{id: a, input: x, evaluators: "
                               "[{use: has_text, text: a, bogus: \"${EVAL_SECRET_WORD}\"}]}]\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert "hunter2" not in str(exc.value)


def test_the_judge_middlewares_are_built(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\nmiddlewares: [recorder]\ncases: [{id: a, input: x}]\n")
    [mw] = load_suite(path).middlewares
    assert callable(mw)
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\nmiddlewares: [recordr]\ncases: [{id: a, input: x}]\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert problems(exc)[0].startswith(f"{path}:3:15: middlewares[0]: unknown middleware 'recordr'")


def test_an_evaluator_failing_when_built_is_located(components: None, agent: Path, write: Write) -> None:
    # stub_judge builds its model when it is built: a price that is no number fails only then
    write("more.jsonl", '{"id": "b", "input": "hi"}\n'
                        '{"id": "c", "input": "yo", "evaluators": [{"use": "stub_judge", "model": {"use": "priced", '
                        '"cost": "x"}}]}\n'
                        '{"id": "d", "input": "yo", "evaluators": [{"use": "stub_judge", "model": {"use": "priced", '
                        '"cost": "y"}}]}\n')
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\ncases_file: more.jsonl\ncases:\n  - {id: a, "
                               "input: x, evaluators: [{use: stub_judge, model: {use: priced, cost: z}}]}\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    found = problems(exc)
    jsonl = path.parent / "more.jsonl"
    assert [p.split(": evaluator 'stub_judge' cannot be built")[0] for p in found] == [
        f"{jsonl}:2:1: [2].evaluators[0].use", f"{jsonl}:3:1: [3].evaluators[0].use",
        f"{path}:5:42: cases[0].evaluators[0].use"]


def test_a_bad_message_of_an_input_is_one_problem(components: None, agent: Path, write: Write) -> None:
    path = write("suite.yaml", "version: 1\nagent: agent.yaml\ncases:\n"
                               "  - {id: a, input: [{role: wizard, content: x}]}\n")
    with pytest.raises(ConfigError) as exc:
        load_suite(path)
    assert problems(exc) == [f"{path}:4:28: cases[0].input[0].role: Input should be 'system', 'user' or 'assistant'"]
