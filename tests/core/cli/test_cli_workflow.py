"""Workflows from the command line (``workflow:`` in the YAML): ``seamkit validate`` lists every
graph problem at its step; ``seamkit run`` runs the workflow (step lines on stderr, --json events);
a gate exits 3 with the commands that answer it; ``seamkit resume --answer`` continues;
``seamkit runs show`` prints the step tree. Scripted models, the embedded SQLite store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_testlib import CLI

COORDINATOR = """\
seamkit: 1
agent:
  name: planner
  model: {use: scripted, turns: ['["llamas", "alpacas", "vicunas"]']}
  output: {json_schema: {type: array, items: {type: string}}}
agents:
  researcher:
    model: {use: scripted, repeat: true, turns: ["notes"]}
  writer:
    model: {use: scripted, turns: ["the report"]}
workflow:
  outcomes: [report]
  steps:
    plan: {agent: planner, emits: [topic]}
    research: {agent: researcher, consumes: [topic], emits: [finding]}
    write: {agent: writer, consumes: [finding], join: true, emits: [report]}
"""

GATED = """\
seamkit: 1
agent:
  name: drafter
  model: {use: scripted, repeat: true, turns: ["refund $20"]}
workflow:
  outcomes: [sent, dropped]
  steps:
    draft: {agent: drafter, emits: [draft]}
    check: {gate: "Send this refund?", consumes: [draft], on_yes: approved, on_no: declined}
    send: {agent: drafter, consumes: [approved], emits: [sent]}
    drop: {agent: drafter, consumes: [declined], emits: [dropped]}
"""


def _latest_workflow_run(cli: CLI) -> str:
    rows = json.loads(cli("runs", "list", "--json").stdout)
    run_id: str = next(r["run_id"] for r in rows if r["parent_run_id"] is None)
    return run_id


def test_validate_reports_every_graph_problem_at_its_step(cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("bad.yaml", COORDINATOR.replace("consumes: [finding]", "consumes: [findings]")
                 .replace("emits: [report]", "emits: [report, summary]") + "    extra: {agent: writr, emits: [x]}\n")
    r = cli("validate", str(path))
    assert r.returncode == 2, r
    lines = r.stderr
    assert "bad.yaml:16:5: workflow.steps.write: STEP_WOULD_STALL: step 'write' waits for 'findings', but no step " \
           "emits it and it does not arrive from outside: it would stall there" in lines
    assert "workflow.steps.research: EVENT_NOT_CONSUMED: event 'finding' emitted by 'research'" in lines
    assert "workflow.steps.write: EVENT_NOT_CONSUMED: event 'summary'" in lines
    assert "bad.yaml:17:20: workflow.steps.extra.agent: no agent 'writr' in this file; did you mean 'writer'?" in lines
    assert "Traceback" not in lines
    ok = write("ok.yaml", COORDINATOR)
    r = cli("validate", str(ok))
    assert r.returncode == 0 and "workflow: 3 steps (plan, research, write), outcomes: report" in r.stdout, r


def test_run_fans_out_joins_and_shows_the_step_tree(cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("coord.yaml", COORDINATOR)
    r = cli("run", str(path), "camelids")
    assert r.returncode == 0, r
    assert r.stdout == "the report\n"
    assert r.stderr.count("<- step research") == 3 and "<- step write (" in r.stderr
    run_id = _latest_workflow_run(cli)
    r = cli("runs", "show", run_id)
    assert r.returncode == 0, r
    tree = [line for line in r.stdout.splitlines() if " done run_" in line]
    assert [line.split()[0] for line in tree] == ["plan", "research", "research", "research", "write"]
    assert "    research [2/3] (" in r.stdout  # a branch of the fan-out, indented under it
    doc = json.loads(cli("runs", "show", run_id, "--json").stdout)
    steps = doc["workflow"]["steps"]
    assert [s["status"] for s in steps] == ["done"] * 5 and "workflow_state" not in doc["state"]
    children = {r["run_id"] for r in json.loads(cli("runs", "list", "--json").stdout) if r["parent_run_id"] == run_id}
    assert children == {s["run_id"] for s in steps}  # each agent step is a child run of the workflow


def test_json_streams_step_events_and_ends_with_the_result(cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("coord.yaml", COORDINATOR)
    r = cli("run", str(path), "camelids", "--json")
    assert r.returncode == 0, r
    events = [json.loads(line) for line in r.stdout.splitlines()]
    steps = [(e["event"], e["name"], e["step"]) for e in events if e["kind"] == "step"]
    for e in (e for e in events if e["kind"] == "step"):  # each names its own child run, not the workflow's
        assert e["child_run_id"].startswith("run_") and e["child_run_id"] != e["run_id"], e
        assert e["step_kind"] == "agent"
    assert steps[:2] == [("started", "plan", 0), ("finished", "plan", 1)]  # step: activations finished so far
    assert [name for what, name, _ in steps if what == "finished"] == ["plan", "research", "research", "research",
                                                                       "write"]
    last = events[-1]
    assert (last["kind"], last["status"], last["outcome"], last["output"]) == ("workflow_finished", "done", "report",
                                                                              "the report")


def test_a_gate_waits_for_the_person_and_resume_answers_it(cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("gated.yaml", GATED)
    r = cli("run", str(path), "refund please")
    assert r.returncode == 3, r
    run_id = _latest_workflow_run(cli)
    assert "  check (a" in r.stderr and "): Send this refund? [input: refund $20]" in r.stderr
    assert f"answer with: seamkit resume {run_id} --answer yes" in r.stderr
    r = cli("runs", "show", run_id)
    assert "detail: waiting for the person: check: Send this refund?" in r.stdout
    assert "check (a" in r.stdout and f") with: seamkit resume {run_id} --answer TEXT" in r.stdout
    r = cli("resume", run_id)
    assert r.returncode == 2 and "waits for the person's answer" in r.stderr, r
    r = cli("resume", run_id, "--answer", "maybe")
    assert r.returncode == 2 and "gate 'check' takes a plain yes or no" in r.stderr, r
    r = cli("resume", run_id, "--answer", "yes")
    assert r.returncode == 0 and r.stdout == "refund $20\n", r
    assert "<- step check (" in r.stderr and "emitted approved" in r.stderr
    r = cli("resume", run_id, "--answer", "yes")
    assert r.returncode == 2 and "it is done" in r.stderr, r


STEP_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_steps(register):
    register("post_line", "cli_test_steps_impl:build", config="cli_test_steps_impl:PostConfig",
             description="Appends its input to a file through the effect ledger; raises while a flag file exists")
'''

STEP_IMPL = '''
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class PostConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    log: str
    fail: str


def build(cfg):
    async def post(ctx, text):
        async def op():
            if Path(cfg.fail).exists():
                raise ConnectionError("the line dropped")
            with open(cfg.log, "a") as f:
                f.write(text + "\\n")
            return "posted"

        return await ctx.run_effect("post", op)

    return post
'''

POSTER = """\
seamkit: 1
agent:
  model: {{use: scripted, turns: [hi]}}
workflow:
  outcomes: [posted]
  steps:
    post: {{use: post_line, log: {log}, fail: {fail}, emits: [posted]}}
"""


def test_a_steps_uncertain_effect_is_settled_from_the_command_line(tmp_path: Path,
                                                                   write: Callable[[str, str], Path]) -> None:
    from cli_testlib import make_dist

    root = make_dist(tmp_path / "site-steps", "cli-test-steps", "cli_test_steps", STEP_PLUGIN,
                     extra={"cli_test_steps_impl": STEP_IMPL})
    cli = CLI([root], tmp_path)
    log, fail = tmp_path / "log.txt", tmp_path / "fail"
    fail.touch()
    path = write("poster.yaml", POSTER.format(log=log, fail=fail))
    r = cli("run", str(path), "hello")
    assert r.returncode == 1, r
    run_id = _latest_workflow_run(cli)
    step_run = json.loads(cli("runs", "show", run_id, "--json").stdout)["workflow"]["steps"][0]["run_id"]
    key = f"{step_run}:post"
    assert f"seamkit runs settle {run_id} {key} applied --result JSON" in r.stderr, r
    fail.unlink()
    r = cli("resume", run_id, "--allow-finished")  # not settled: the step fails again, nothing is written
    assert r.returncode == 1 and not log.exists(), r
    r = cli("runs", "settle", run_id, "run_other:post", "not-applied")
    assert r.returncode == 2 and "has no unfinished step whose effect is" in r.stderr, r
    r = cli("runs", "settle", run_id, key, "not-applied")
    assert r.returncode == 0, r
    assert f"settled effect {key} of step post of workflow run {run_id} as not-applied" in r.stderr
    r = cli("resume", run_id, "--allow-finished")
    assert r.returncode == 0 and r.stdout == "posted\n" and log.read_text() == "hello\n", r


def test_a_step_component_missing_its_required_configuration_is_located(tmp_path: Path,
                                                                      write: Callable[[str, str], Path]) -> None:
    from cli_testlib import make_dist

    root = make_dist(tmp_path / "site-steps", "cli-test-steps", "cli_test_steps", STEP_PLUGIN,
                     extra={"cli_test_steps_impl": STEP_IMPL})
    cli = CLI([root], tmp_path)
    path = write("bare.yaml", POSTER.replace("log: {log}, fail: {fail}, ", "").format())
    r = cli("validate", str(path))
    assert r.returncode == 2, r
    assert "2 problems" in r.stderr and "Traceback" not in r.stderr, r
    for key in ("log", "fail"):
        assert f"bare.yaml:7:5: workflow.steps.post.{key}: missing required key '{key}' for step 'post_line'" \
            in r.stderr, r


EXTERNAL = """\
seamkit: 1
agent:
  name: drafter
  model: {use: scripted, repeat: true, turns: ["draft"]}
workflow:
  outcomes: [published]
  external: [approval]
  steps:
    draft: {agent: drafter, emits: draft}
    publish: {agent: drafter, consumes: [draft, approval], emits: [published]}
"""


def test_a_workflow_waiting_for_an_outside_event_takes_it_with_event(cli: CLI,
                                                                     write: Callable[[str, str], Path]) -> None:
    path = write("ext.yaml", EXTERNAL)
    r = cli("run", str(path), "go")
    assert r.returncode == 3, r
    run_id = _latest_workflow_run(cli)
    assert f"seamkit: workflow ext run {run_id}" in r.stderr.splitlines()[0]  # the run id comes first
    assert "waiting for an outside event: approval" in r.stderr
    assert f"hand it in with: seamkit resume {run_id} --event approval=JSON" in r.stderr
    assert cli("resume", run_id, "--event", "approval").returncode == 2
    r = cli("resume", run_id, "--event", "approval=not json")
    assert r.returncode == 2 and "the payload is not JSON" in r.stderr, r
    r = cli("resume", run_id, "--event", 'approval={"by": "ann"}')
    assert r.returncode == 0 and r.stdout == "draft\n", r


def test_several_waiting_gates_are_answered_one_by_one_with_gate(cli: CLI,
                                                                 write: Callable[[str, str], Path]) -> None:
    path = write("fan.yaml", """\
seamkit: 1
agent:
  name: lister
  model: {use: scripted, turns: ['["a", "b"]']}
  output: {json_schema: {type: array, items: {type: string}}}
workflow:
  outcomes: [kept]
  steps:
    list: {agent: lister, emits: [item]}
    check: {gate: "Keep this one?", consumes: [item], on_yes: keep, on_no: drop}
    keep_all: {agent: lister, consumes: [keep], join: true, emits: [kept]}
    drop_all: {agent: lister, consumes: [drop], join: true}
""")
    r = cli("run", str(path), "go")
    assert r.returncode == 3, r
    run_id = _latest_workflow_run(cli)
    assert "answer check (a" in r.stderr and f"seamkit resume {run_id} --gate a" in r.stderr, r
    r = cli("resume", run_id, "--answer", "yes")
    assert r.returncode == 2 and "several gates wait" in r.stderr, r
    assert cli("resume", run_id, "--gate", "check").returncode == 2  # --gate goes with --answer
    doc = json.loads(cli("runs", "show", run_id, "--json").stdout)
    waiting = [s["activation"] for s in doc["workflow"]["steps"] if s["status"] == "waiting"]
    assert len(waiting) == 2
    r = cli("resume", run_id, "--answer", "yes", "--gate", waiting[0])
    assert r.returncode == 3, r
    r = cli("resume", run_id, "--answer", "no", "--gate", "check")
    assert r.returncode != 2, r


def test_step_keys_are_located_and_a_single_event_may_be_written_as_text(cli: CLI,
                                                                         write: Callable[[str, str], Path]) -> None:
    path = write("keys.yaml", """\
seamkit: 1
agent:
  name: a
  model: {use: scripted, turns: [hi]}
workflow:
  outcomes: [done]
  steps:
    s: {agent: a, emits: done, emitz: [x]}
    "  ": {agent: a, consumes: [done]}
""")
    r = cli("validate", str(path))
    assert r.returncode == 2, r
    assert "keys.yaml:8:32: workflow.steps.s.emitz: unknown key 'emitz'; did you mean 'emits'?" in r.stderr, r
    assert "a step name is empty" in r.stderr and "EVENT_NOT_CONSUMED" not in r.stderr
APPROVED_STEP = """\
seamkit: 1
agent:
  name: lead
  model: {use: scripted, turns: ["lead"]}
agents:
  appr:
    model:
      use: scripted
      follow_transcript: true
      turns: [{tool_calls: [{name: add, arguments: {a: 2, b: 3}}]}, "the sum is 5"]
    tools: [add]
    approvals: {add: every_call}
workflow:
  outcomes: [done]
  steps:
    go: {agent: appr, emits: [done]}
"""


@pytest.mark.parametrize("with_file", [False, True])
def test_an_approval_of_a_workflow_steps_agent_run_is_decided_by_resuming_that_run(
        cli: CLI, write: Callable[[str, str], Path], with_file: bool) -> None:
    # the step's agent run records no agent file (its workflow run does), and it is a run of
    # 'appr', not of the entry agent: resume found no file, and with --agent built the entry agent
    path = write("appr.yaml", APPROVED_STEP)
    r = cli("run", str(path), "go")
    assert r.returncode != 0 and "waits for an approval" in r.stderr, r
    rows = json.loads(cli("runs", "list", "--json").stdout)
    (child,) = [row["run_id"] for row in rows if row["parent_run_id"] is not None]
    r = cli("resume", child, "--approve", "call_0_0", *(("--agent", str(path)) if with_file else ()))
    assert r.returncode == 0, r
    assert "<- add: 5" in r.stderr and r.stdout == "the sum is 5\n"


DELEGATING_STEP = """\
seamkit: 1
agent:
  name: lead
  model:
    use: scripted
    follow_transcript: true
    turns: [{tool_calls: [{name: helper, arguments: {task: "look it up"}}]}, "lead: done"]
  tools: [{agent: helper, max_depth: 1}]
agents:
  helper:
    model: {use: scripted, turns: ["found it"]}
workflow:
  outcomes: [done]
  steps:
    go: {agent: lead, emits: [done]}
"""


def test_a_workflow_steps_agent_calls_its_agent_tools_within_their_max_depth(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    # the step's run is a child of the workflow run; that level is no agent tool call: max_depth 1
    # was refused "at depth 2"
    r = cli("run", str(write("delegate.yaml", DELEGATING_STEP)), "go")
    assert r.returncode == 0, r
    assert r.stdout == "lead: done\n"
    rows = {row["agent"]: row for row in json.loads(cli("runs", "list", "--json").stdout)}
    assert rows["helper"]["status"] == "done"  # the agent tool ran, as a child of the step's run
    assert rows["helper"]["parent_run_id"] == rows["lead"]["run_id"]


def test_a_tool_call_of_a_handoff_target_is_approved_from_the_command_line(
        cli: CLI, write: Callable[[str, str], Path], tmp_path: Path) -> None:
    path = write("ho.yaml", """\
seamkit: 1
agent:
  name: triage
  model: {use: scripted, turns: [{tool_calls: [{name: transfer_to_billing}]}], follow_transcript: true}
  handoffs: [{agent: billing, filter: user_only}]
agents:
  billing:
    model:
      use: scripted
      follow_transcript: true
      turns: [{tool_calls: [{name: add, arguments: {a: 2, b: 3}}]}, "Refunded."]
    tools: [add]
    approvals: {add: every_call}
""")
    assert cli("run", str(path), "refund A1").returncode == 3
    run_id = json.loads(cli("runs", "list", "--json").stdout)[0]["run_id"]
    r = cli("resume", run_id, "--approve", "call_0_0")
    assert r.returncode == 0 and r.stdout == "Refunded.\n", r


def test_a_gate_on_a_store_that_does_not_outlive_the_process_is_refused_up_front(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("mem.yaml", GATED.replace("  name: drafter\n", "  name: drafter\n  checkpoints: {use: memory}\n"))
    r = cli("run", str(path), "refund please")
    assert r.returncode == 2 and "has gates or outside events" in r.stderr and "does not outlive" in r.stderr, r


def test_a_json_object_task_is_the_workflows_structured_input(cli: CLI, write: Callable[[str, str], Path]) -> None:
    path = write("calc.yaml", """\
seamkit: 1
agent:
  model: {use: scripted, turns: [hi]}
workflow:
  outcomes: done
  max_activations: 5
  steps:
    add: {tool: add, emits: done}
""")
    r = cli("run", str(path), '{"a": 2, "b": 40}')
    assert r.returncode == 0 and r.stdout == "42\n", r
