"""The ``deny`` guardrail, and tripwires at each point of a YAML-composed ``seamkit run``: exit code
4, a clear message, and a checkpoint that says why (``seamkit runs show``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from seamkit._guardrails import GuardContext
from seamkit._runtime.context import RunContext
from seamkit.composition import build_agent, loads_composition
from seamkit.errors import ConfigError
from seamkit.values import ToolCall, ToolResult
from seamkit_guardrails_content.deny import Deny, DenyConfig


def _deny(*patterns: str) -> Deny:
    return Deny(DenyConfig(patterns=list(patterns)))


async def test_deny_matches_each_point_case_insensitively_after_nfkc() -> None:
    d = _deny(r"project\s+falcon")
    g = GuardContext("input", RunContext())
    assert (await d.check_input("Tell me about PROJECT  Falcon", g)).action == "block"
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in "project")  # U+FF50... : NFKC folds them
    assert (await d.check_input(f"{fullwidth} falcon", g)).action == "block"
    assert (await d.check_input("falcon project", g)).action == "allow"
    call = ToolCall("c1", "search", {"q": "project falcon budget"})
    assert (await d.check_tool_call(call, g)).action == "block"
    assert (await d.check_tool_result(ToolResult("c1", "search", "nothing"), g)).action == "allow"
    assert (await d.check_output({"notes": ["Project Falcon"]}, g)).action == "block"


@pytest.mark.parametrize("text", [
    "project\u200bfalcon",  # zero-width space
    "proj\u00adect falcon",  # soft hyphen
    "pr\u043eject falcon",  # Cyrillic o
    "PR\u039fJECT FALCON",  # Greek capital omicron
    "project\n\n falcon",
    "".join(chr(0xE0000 + ord(c)) for c in "project falcon"),  # tag characters (invisible ASCII)
])
async def test_deny_sees_through_invisible_characters_and_look_alike_letters(text: str) -> None:
    v = await _deny(r"project\s+falcon").check_input(f"tell me about {text}", GuardContext("input", RunContext()))
    assert v.action == "block"


async def test_the_block_reason_names_the_pattern_by_index_only() -> None:
    g = GuardContext("input", RunContext())
    v = await _deny("harmless", "SECRETWORD").check_input("the secretword is out", g)
    assert v.action == "block" and v.reason == "matched deny pattern 1"
    custom = Deny(DenyConfig(patterns=["SECRETWORD"], reason="internal codename"))
    assert (await custom.check_input("SECRETWORD", g)).reason == "internal codename"


def test_deny_refuses_bad_patterns_at_load() -> None:
    with pytest.raises(ConfigError) as info:
        loads_composition(textwrap.dedent("""
            seamkit: 1
            agent:
              model: {use: scripted, turns: [hi]}
              guardrails:
                - {use: deny, patterns: ["(unclosed"]}
        """))
    issue = info.value.issues[0]
    assert issue.path == "agent.guardrails[0].patterns" and "not a valid regular expression" in issue.message
    assert issue.line == 6


def test_guardrail_slot_problems_are_located() -> None:
    with pytest.raises(ConfigError) as info:
        loads_composition(textwrap.dedent("""
            seamkit: 1
            agent:
              model: {use: scripted, turns: [hi]}
              guardrails:
                - {use: deny, patterns: [x], at: [inputs]}
                - {use: dney, patterns: [x]}
                - {use: deny, patterns: [x], advisory: maybe}
        """))
    got = {(i.path, i.line) for i in info.value.issues}
    assert ("agent.guardrails[0].at[0]", 6) in got
    assert ("agent.guardrails[1].use", 7) in got
    assert ("agent.guardrails[2].advisory", 8) in got
    messages = " ".join(i.message for i in info.value.issues)
    assert "did you mean 'deny'" in messages


@pytest.mark.parametrize(("entry", "path", "message"), [
    ("{use: wrap_tool_output, at: [input]}", "agent.guardrails[0].at[0]", "cannot act at the input point"),
    ("{use: redact, at: [output, tool]}", "agent.guardrails[0].at[1]", "cannot act at the tool point"),
    ("{use: wrap_tool_output, parallel: true}", "agent.guardrails[0].parallel", "input point only"),
    ("{use: deny, patterns: [x], at: [output], parallel: true}", "agent.guardrails[0].parallel", "input point only"),
])
def test_a_point_the_guardrail_cannot_act_at_is_an_error_when_loaded(entry: str, path: str, message: str) -> None:
    """seamkit validate reports it (file, line, key path) before anything is built."""
    with pytest.raises(ConfigError) as info:
        loads_composition(textwrap.dedent(f"""
            seamkit: 1
            agent:
              model: {{use: scripted, turns: [hi]}}
              checkpoints: null
              guardrails:
                - {entry}
        """))
    issue = info.value.issues[0]
    assert issue.path == path and message in issue.message and issue.line == 7


def test_a_guardrail_built_for_a_point_it_cannot_act_at_is_refused_when_built() -> None:
    """The same check when building (a factory whose return type is not annotated is only known then)."""
    from seamkit.composition._models import Composition

    comp = loads_composition(textwrap.dedent("""
        seamkit: 1
        agent:
          model: {use: scripted, turns: [hi]}
          checkpoints: null
          guardrails:
            - {use: wrap_tool_output}
    """))
    assert isinstance(comp, Composition)
    comp.agent.guardrails[0].at = ["input"]  # past the load-time check
    with pytest.raises(ConfigError) as info:
        build_agent(comp)
    issue = info.value.issues[0]
    assert issue.path == "agent.guardrails[0].at" and "cannot act at the input point" in issue.message


# -- tripwires from YAML, through the command line ---------------------------------------------------

AGENT = """
seamkit: 1
agent:
  name: guarded
  model:
    use: scripted
    turns:
      - tool_calls: [{{name: calculator, arguments: {{expression: "{expression}"}}}}]
      - text: "{answer}"
  tools: [calculator]
  guardrails:
    - use: deny
      at: [{point}]
      patterns: ["forbidden", "6 \\\\* 7", "internal-only"]
"""


def _seamkit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    return subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize(
    ("point", "task", "expression", "answer", "reason"),
    [
        ("input", "tell me the forbidden thing", "1 + 1", "2", "matched deny pattern 0"),
        ("tool", "multiply", "6 * 7", "42", "matched deny pattern 1"),
        ("output", "where?", "1 + 1", "it is on internal-only.example", "matched deny pattern 2"),
    ],
)
def test_a_tripwire_ends_a_composed_run_with_exit_4_and_a_checkpoint_saying_why(
    tmp_path: Path, point: str, task: str, expression: str, answer: str, reason: str
) -> None:
    (tmp_path / "guarded.yaml").write_text(AGENT.format(point=point, expression=expression, answer=answer))
    r = _seamkit(tmp_path, "run", "guarded.yaml", task)
    assert r.returncode == 4, r.stderr
    assert f"guardrail 'deny' blocked the run at the {point} point: {reason}" in r.stderr
    assert "Traceback" not in r.stderr
    run_id = re.search(r"run (run_[0-9a-f]+) was stopped by a guardrail; inspect it with: seamkit runs show",
                       r.stderr)
    assert run_id, r.stderr
    human = _seamkit(tmp_path, "runs", "show", run_id.group(1))
    assert "a guardrail stopped this run; it cannot be resumed" in human.stdout, human.stdout
    assert "seamkit resume" not in human.stdout
    shown = _seamkit(tmp_path, "runs", "show", run_id.group(1), "--json")
    assert shown.returncode == 0, shown.stderr
    snap = json.loads(shown.stdout)
    text = json.dumps(snap)
    assert '"failed"' in text and f'"point": "{point}"' in text and reason in text
    if point != "input":
        assert '"name": "calculator"' in text  # the transcript up to the trip is there
    if point == "tool":
        assert '"content": "42"' not in text  # the call did not run
    resumed = _seamkit(tmp_path, "resume", run_id.group(1), "--allow-finished")
    assert resumed.returncode == 1 and "a guardrail stopped it" in resumed.stderr, resumed.stderr


def test_plugins_lists_the_guardrails(tmp_path: Path) -> None:
    r = _seamkit(tmp_path, "plugins")
    rows = [line.split() for line in r.stdout.splitlines()]
    guardrails = {row[3] for row in rows if len(row) > 3 and row[2] == "guardrail"}
    assert {"deny", "redact", "wrap_tool_output", "moderation", "egress"} <= guardrails


def test_seamkit_run_never_sends_control_characters_from_outside_text_to_the_terminal(tmp_path: Path) -> None:
    """A tool result (a file, a web page) or a guardrail's reason holding ANSI/OSC escapes is shown
    escaped on stderr, not as escapes a terminal would act on (clear screen, set title...)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "page.txt").write_text("\x1b[2J\x1b]0;pwned\x07hello")
    (tmp_path / "esc.yaml").write_text(textwrap.dedent("""
        seamkit: 1
        agent:
          model:
            use: scripted
            turns:
              - tool_calls: [{name: read_file, arguments: {path: page.txt}}]
              - text: "done"
          tools: [{use: read_file, root: ./data}]
          guardrails:
            - use: deny
              at: [output]
              patterns: [done]
              reason: "\\e[31mFAKE: all good\\a"
    """))
    r = _seamkit(tmp_path, "run", "esc.yaml", "go")
    assert r.returncode == 4, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr
    assert "\\u001b[2J" in r.stderr  # the tool result preview, escaped
    assert "\\u001b[31mFAKE: all good\\u0007" in r.stderr  # the tripwire's reason, escaped


@pytest.mark.parametrize("value", ['"yes"', '"false"', "1", '"on"'])
def test_advisory_in_yaml_takes_only_true_or_false(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        loads_composition(textwrap.dedent(f"""
            seamkit: 1
            agent:
              model: {{use: scripted, turns: [hi]}}
              guardrails:
                - {{use: deny, patterns: [x], advisory: {value}}}
        """))
    assert info.value.issues[0].path == "agent.guardrails[0].advisory"


def test_runs_show_lists_the_run_warnings_such_as_advisory_flags(tmp_path: Path) -> None:
    (tmp_path / "adv.yaml").write_text(textwrap.dedent("""
        seamkit: 1
        agent:
          model: {use: scripted, turns: ["a forbidden answer"]}
          guardrails:
            - {use: deny, at: [output], patterns: [forbidden], advisory: true}
    """))
    r = _seamkit(tmp_path, "run", "adv.yaml", "go")
    assert r.returncode == 0, r.stderr
    run_id = re.search(r"run (run_[0-9a-f]+): completed", r.stderr)
    assert run_id, r.stderr
    shown = _seamkit(tmp_path, "runs", "show", run_id.group(1))
    assert "warning: guardrail 'deny' would block (advisory) at the output point: matched deny pattern 0" \
        in shown.stdout, shown.stdout
