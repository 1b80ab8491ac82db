"""``seamkit eval`` end to end: exit codes, the JSON and HTML reports, thresholds, --compare with a
changed agent, --concurrency/--repeat/--case, the budget stop, failures recorded, bad input
reported (exit 2, located, no traceback); and the example suite on the bundled local model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import evalrun_testlib
import pytest
from conftest import Ran

Write = Callable[[str, str], Path]
Eval = Callable[..., Ran]
ROOT = Path(__file__).resolve().parents[4]

CAPITALS = """
version: 1
agent: agent.yaml
evaluators: [{use: contains, text: Paris}]
cases:
  - {id: france, input: "Capital of France?"}
  - {id: again, input: "And the capital of France again?"}
"""


def agent(write: Write, answer: str) -> Path:
    return write("agent.yaml", f"""
        seamkit: 1
        agent:
          name: geo
          model: {{use: scripted, turns: [{json.dumps(answer)}], repeat: true}}
          checkpoints: null
        """)


def test_an_eval_runs_from_the_command_line(seamkit_subprocess: Eval, write: Write, tmp_path: Path) -> None:
    agent(write, "It is Paris.")
    write("suite.yaml", CAPITALS)
    r = seamkit_subprocess("eval", "suite.yaml", "--json", "out.json", "--html", "out.html")
    assert r.code == 0, r
    assert "Traceback" not in r.err
    assert "france" in r.out and "pass rate: 100%" in r.out and "attempts: 2 run, 2 passed" in r.out
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["version"] == 1 and doc["exit_code"] == 0 and doc["summary"]["pass_rate"] == 1.0
    assert [c["id"] for c in doc["cases"]] == ["france", "again"]
    assert doc["cases"][0]["attempts"][0]["scores"][0]["evaluator"] == "contains"
    html = (tmp_path / "out.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "It is Paris." in html


def test_the_command_is_registered_cheaply(seamkit_subprocess: Eval) -> None:
    """``seamkit --help`` with seamkit-evals loaded lists ``eval`` and imports none of its heavy modules."""
    code = ("import sys\nfrom seamkit._cli.main import main\nrc = main(['--help'])\n"
            "heavy = [m for m in ('pydantic', 'rich', 'yaml', 'seamkit.composition', 'seamkit_evals.suite', "
            "'seamkit_evals.runner') if m in sys.modules]\nprint('HEAVY', heavy, rc, file=sys.stderr)\n")
    env = {**seamkit_subprocess.env, "SEAMKIT_LOAD_PLUGINS": "evals"}  # type: ignore[attr-defined]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "HEAVY [] 0" in proc.stderr, proc.stderr
    assert "eval" in proc.stdout and "run an eval suite against a composed agent" in proc.stdout


def test_a_failing_attempt_fails_the_eval_without_thresholds(seamkit_eval: Eval, write: Write) -> None:
    agent(write, "It is Lyon.")
    write("suite.yaml", CAPITALS)
    r = seamkit_eval("suite.yaml")
    assert r.code == 1, r
    assert "fail" in r.out and "'Paris'" in r.out


def test_thresholds_decide_the_exit_code(seamkit_eval: Eval, write: Write, tmp_path: Path) -> None:
    agent(write, "It is Paris.")
    write("suite.yaml", CAPITALS.replace("cases:", "thresholds: {pass_rate: 0.9}\ncases:")
          .replace('again?"}', 'again?", evaluators: [{use: contains, text: Rome, name: rome}]}'))
    r = seamkit_eval("suite.yaml", "--json", "r.json")
    assert r.code == 1, r
    assert "threshold pass_rate 90.0%: NOT MET (50.0%)" in r.out
    assert json.loads((tmp_path / "r.json").read_text())["thresholds"] == [
        {"name": "pass_rate", "limit": 0.9, "actual": 0.5, "met": False}]
    write("suite.yaml", (tmp_path / "suite.yaml").read_text().replace("pass_rate: 0.9", "pass_rate: 0.5"))
    r = seamkit_eval("suite.yaml")
    assert r.code == 0, r
    assert "threshold pass_rate 50.0%: met (50.0%)" in r.out


def test_compare_shows_a_regression_after_the_agent_changed(seamkit_eval: Eval, write: Write, tmp_path: Path) -> None:
    agent(write, "It is Paris.")
    write("suite.yaml", CAPITALS)
    assert seamkit_eval("suite.yaml", "--json", "before.json").code == 0
    agent(write, "It is Lyon.")  # a deliberately worse agent
    write("suite.yaml", CAPITALS.replace("  - {id: again", "  - {id: brand_new, input: hi}\n  - {id: again")
          .replace("  - {id: france, input: \"Capital of France?\"}\n", ""))
    r = seamkit_eval("suite.yaml", "--compare", "before.json", "--json", "after.json")
    assert r.code == 1, r
    assert "compared with the earlier report" in r.out
    assert "0 regressed" not in r.out and "1 regressed, 0 improved, 0 unchanged, 1 new, 1 removed" in r.out
    assert "pass rate 100% -> 0%" in r.out
    cmp = json.loads((tmp_path / "after.json").read_text())["comparison"]
    assert cmp["against"] == "before.json"
    assert {c["id"]: c["change"] for c in cmp["cases"]} == {"again": "regressed", "brand_new": "new",
                                                           "france": "removed"}
    assert cmp["pass_rate"] == {"old": 1.0, "new": 0.0, "delta": -1.0}



def test_compare_with_a_report_of_another_suite_says_so(seamkit_eval: Eval, write: Write, tmp_path: Path) -> None:
    agent(write, "It is Paris.")
    write("other.yaml", "version: 1\nagent: agent.yaml\ncases: [{id: unrelated, input: x}]\n")
    assert seamkit_eval("other.yaml", "--json", "other.json").code == 0
    write("suite.yaml", CAPITALS)
    r = seamkit_eval("suite.yaml", "--compare", "other.json")
    assert r.code == 0, r  # the exit code is the thresholds'
    assert "2 new, 1 removed" in r.out
    assert "no case of other.json is in this eval: is it a report of another suite (other.yaml)?" in r.out
    r = seamkit_eval("suite.yaml", "--compare", "other.json", "--case", "france")
    assert "another suite" in r.out
    assert seamkit_eval("suite.yaml", "--json", "before.json").code == 0
    assert "another suite" not in seamkit_eval("suite.yaml", "--compare", "before.json").out


def test_a_malformed_compare_report_is_bad_input(seamkit_eval: Eval, write: Write) -> None:
    agent(write, "Paris")
    write("suite.yaml", CAPITALS)
    write("old.json", '{"version": 9, "summary": {}, "cases": []}')
    r = seamkit_eval("suite.yaml", "--compare", "old.json")
    assert r.code == 2, r
    assert "old.json is an eval report of format version 9" in r.err and "Traceback" not in r.err
    r = seamkit_eval("suite.yaml", "--compare", "missing.json")
    assert r.code == 2 and "cannot read the report missing.json" in r.err


@pytest.mark.parametrize(("suite", "expected"), [
    ("version: 1\nagent: agent.yaml\ncases: [{id: a, input: x, evaluators: [{use: contians}]}]\n",
     "suite.yaml:3:46: cases[0].evaluators[0].use: unknown evaluator 'contians'; did you mean 'contains'?"),
    ("version: 1\nagent: agent.yaml\nevaluators: [{use: regex, pattern: '('}]\ncases: [{id: a, input: x}]\n",
     "suite.yaml:3:"),
    ("version: 1\nagent: nowhere.yaml\ncases: [{id: a, input: x}]\n", "suite.yaml:2:8: agent: the agent file"),
    ("version: 1\nagent: agent.yaml\nthresholds: {pass_rat: 1}\ncases: [{id: a, input: x}]\n",
     "suite.yaml:3:14: thresholds.pass_rat: unknown key 'pass_rat'; did you mean 'pass_rate'?"),
    ("version: 1\nagent: agent.yaml\ncases: [{id: a, input: x}, {id: a, input: z}]\n",
     "suite.yaml:3:33: cases[1].id: duplicate case id 'a'"),
])
def test_bad_suites_are_located_errors(seamkit_eval: Eval, write: Write, suite: str, expected: str) -> None:
    agent(write, "Paris")
    write("suite.yaml", suite)
    r = seamkit_eval("suite.yaml")
    assert r.code == 2, r
    assert r.err.startswith("seamkit: error: ConfigError:") and expected in r.err, r.err
    assert "Traceback" not in r.err and r.out == ""


def test_a_missing_suite_and_an_unknown_case_are_bad_input(seamkit_eval: Eval, write: Write) -> None:
    r = seamkit_eval("nope.yaml")
    assert r.code == 2 and "nope.yaml" in r.err
    agent(write, "Paris")
    write("suite.yaml", CAPITALS)
    r = seamkit_eval("suite.yaml", "--case", "frnace")
    assert r.code == 2 and "--case 'frnace': no such case in suite.yaml; did you mean 'france'?" in r.err
    r = seamkit_eval("suite.yaml", "--concurrency", "0")
    assert r.code == 2 and "expected a number of at least 1" in r.err



@pytest.mark.parametrize("option", ["--json", "--html"])
def test_a_report_path_that_cannot_be_written_is_refused_before_anything_runs(
        seamkit_eval: Eval, write: Write, tmp_path: Path, option: str) -> None:
    """Found out only after the eval, it would lose every report of a long (and paid for) eval."""
    mark = tmp_path / "started"
    write("agent.yaml", PROBED.format(hold=1).replace("hold_until: 1", f"hold_until: 1, mark: {mark}"))
    write("suite.yaml", "version: 1\nagent: agent.yaml\ncases: [{id: a, input: x}]\n")
    r = seamkit_eval("suite.yaml", option, "no_such_dir/r.out")
    assert r.code == 2, r
    assert f"{option} no_such_dir/r.out: the folder no_such_dir does not exist" in r.err and "Traceback" not in r.err
    assert not mark.exists()  # no attempt started


def test_a_report_that_fails_to_write_after_the_eval_still_leaves_the_others(
        seamkit_eval: Eval, write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent(write, "It is Paris.")
    write("suite.yaml", CAPITALS)
    from seamkit_evals import report

    def full_disk(doc: Any, path: Any) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(report, "write_json", full_disk)
    r = seamkit_eval("suite.yaml", "--json", "r.json", "--html", "r.html")
    assert r.code == 2, r
    assert "cannot write the report r.json: No space left on device" in r.err
    assert "attempts: 2 run, 2 passed" in r.out  # the table is still shown
    assert "It is Paris." in (tmp_path / "r.html").read_text()  # and the other report written


PROBED = """
seamkit: 1
agent:
  name: prober
  model:
    use: scripted
    follow_transcript: true
    turns: [{{tool_calls: [{{name: probe}}]}}, "Paris"]
  tools: [{{use: probe, hold_until: {hold}}}]
  checkpoints: null
"""


def probed_suite(write: Write, n: int, hold: int, extra: str = "") -> None:
    write("agent.yaml", PROBED.format(hold=hold))
    cases = "".join(f"  - {{id: c{i}, input: q{i}}}\n" for i in range(n))
    write("suite.yaml", f"version: 1\nagent: agent.yaml\nconcurrency: 1\n{extra}\ncases:\n{cases}")


def test_concurrency_and_repeat_from_the_command_line(seamkit_eval: Eval, write: Write, tmp_path: Path) -> None:
    # each probe call waits until 3 are in flight: with --concurrency 3 they meet, and no 4th joins
    probed_suite(write, 4, hold=3)
    r = seamkit_eval("suite.yaml", "--concurrency", "3", "--repeat", "2", "--json", "r.json")
    assert r.code == 0, r
    assert evalrun_testlib.STATE["max_in_flight"] == 3 and evalrun_testlib.STATE["probe_calls"] == 8
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [[a["repeat"] for a in c["attempts"]] for c in doc["cases"]] == [[0, 1]] * 4
    r = seamkit_eval("suite.yaml", "--case", "c2", "--case", "c0", "--json", "r.json")
    assert [c["id"] for c in json.loads((tmp_path / "r.json").read_text())["cases"]] == ["c0", "c2"]


def test_the_budget_stops_the_eval(seamkit_eval: Eval, write: Write, tmp_path: Path) -> None:
    write("agent.yaml", "seamkit: 1\nagent:\n  model: {use: priced, cost: '0.02'}\n  checkpoints: null\n")
    cases = "".join(f"  - {{id: c{i}, input: q}}\n" for i in range(4))
    write("suite.yaml", f"version: 1\nagent: agent.yaml\nconcurrency: 1\nbudget: 0.03\ncases:\n{cases}")
    r = seamkit_eval("suite.yaml", "--json", "r.json", "--html", "r.html")
    assert r.code == 1, r
    assert "stopped: the eval's budget was spent; 2 attempts were not run" in r.out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["stopped"] == "budget" and doc["summary"]["not_run"] == 2 and doc["summary"]["cost_usd"] == "0.04"
    assert [c["not_run"] for c in doc["cases"]] == [0, 0, 1, 1]
    assert "budget was spent: 2 attempts were not run" in (tmp_path / "r.html").read_text()


def test_failing_runs_and_raising_evaluators_are_recorded(seamkit_eval: Eval, write: Write, tmp_path: Path) -> None:
    write("agent.yaml", "seamkit: 1\nagent:\n  model: {use: priced, error: overloaded}\n  checkpoints: null\n")
    write("suite.yaml", "version: 1\nagent: agent.yaml\ncases: [{id: a, input: x}]\n")
    r = seamkit_eval("suite.yaml", "--json", "r.json")
    assert r.code == 1, r
    [a] = json.loads((tmp_path / "r.json").read_text())["cases"][0]["attempts"]
    assert a["status"] == "error" and a["error"] == "ProviderError(overloaded): priced: the provider is down"
    write("agent.yaml", "seamkit: 1\nagent:\n  model: {use: priced, text: fine}\n  checkpoints: null\n")
    write("suite.yaml", "version: 1\nagent: agent.yaml\nevaluators: [explode, {use: contains, text: fine}]\n"
                        "thresholds: {evaluators: {contains: 1.0}}\ncases: [{id: a, input: x}]\n")
    r = seamkit_eval("suite.yaml", "--json", "r.json")
    assert r.code == 0, r  # the stated threshold is met; the raising evaluator is an error score
    [a] = json.loads((tmp_path / "r.json").read_text())["cases"][0]["attempts"]
    assert [(s["evaluator"], s["status"]) for s in a["scores"]] == [("explode", "error"), ("contains", "pass")]


def test_secrets_from_the_environment_never_reach_the_output(seamkit_eval: Eval, write: Write, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-cli-eval-5e4d3c2b1a009988"
    monkeypatch.setenv("EVAL_CLI_SECRET", secret)
    write("agent.yaml", "seamkit: 1\nagent:\n  model: {use: scripted, turns: ['key ${EVAL_CLI_SECRET}'], "
                        "repeat: true}\n  checkpoints: null\n")
    write("suite.yaml", "version: 1\nagent: agent.yaml\ncases: [{id: a, input: x}]\n")
    r = seamkit_eval("suite.yaml", "--json", "r.json", "--html", "r.html")
    assert r.code == 0, r
    for text in (r.out, r.err, (tmp_path / "r.json").read_text(), (tmp_path / "r.html").read_text()):
        assert secret not in text
    assert "key ***" in (tmp_path / "r.json").read_text()


def test_ctrl_c_stops_cleanly_with_a_partial_report(seamkit_subprocess_popen: Any, write: Write,
                                                   tmp_path: Path) -> None:
    mark = tmp_path / "started"
    write("agent.yaml", PROBED.format(hold=99).replace("hold_until: 99", f"hold_until: 99, hold_s: 120, mark: {mark}"))
    cases = "".join(f"  - {{id: c{i}, input: q{i}}}\n" for i in range(3))
    write("suite.yaml", f"version: 1\nagent: agent.yaml\nconcurrency: 1\ncases:\n{cases}")
    proc = seamkit_subprocess_popen("eval", "suite.yaml", "--json", "r.json", "--html", "r.html")
    deadline = time.monotonic() + 60
    while not mark.exists():  # the first attempt is inside its tool call
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "interrupted: 3 attempts were not run" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["stopped"] == "interrupted" and doc["exit_code"] == 130 and doc["summary"]["not_run"] == 3
    assert "The eval was interrupted: 3 attempts were not run." in (tmp_path / "r.html").read_text()


@pytest.mark.slow
def test_the_example_suite_on_the_bundled_local_model(seamkit_subprocess: Eval, tmp_path: Path) -> None:
    """examples/evals/quickstart_suite.yaml against examples/quickstart.yaml (Gemma 3 270M on the CPU)."""
    suite = ROOT / "examples" / "evals" / "quickstart_suite.yaml"
    r = seamkit_subprocess("eval", str(suite), "--json", "r.json", "--html", "r.html", "--quiet", timeout=600)
    doc: dict[str, Any] = json.loads((tmp_path / "r.json").read_text())
    assert r.code == doc["exit_code"], r
    assert [c["id"] for c in doc["cases"]] == ["multiply", "add"]
    s = doc["summary"]
    assert s["attempts"] == 2 and s["errors"] == 0 and s["input_tokens"] > 0 and s["cost_usd"] == "0"
    assert s["evaluators"]["tool_called"]["pass_rate"] == 1.0  # the agent calls its calculator every time
    multiply = doc["cases"][0]["attempts"][0]
    assert multiply["output"] == {"answer": 391} and multiply["status"] == "pass"
    assert r.code == 0 and all(t["met"] for t in doc["thresholds"])
    assert "multiply" in (tmp_path / "r.html").read_text()
