"""The Python examples of docs/getting-started.md, layers.md, providers.md, guardrails.md,
capabilities.md, multi-agent.md, yaml-reference.md, workflows.md, mcp.md, observability.md,
evals.md, scale-out.md and every page of docs/plugins/ run and their asserts hold.

Every fenced ``python`` block runs in a fresh namespace, in a temporary working directory; a block
whose info string has ``notest`` (it needs the real model) is only compiled, and so is a block with
``title="path"``: a file of a package a page builds (docs/plugins/index.md's tutorial package, which
tests/docs/test_plugin_tutorial.py installs and runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from docs_testlib import Block, fenced_blocks, file_blocks

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "getting-started.md", ROOT / "docs" / "layers.md", ROOT / "docs" / "providers.md",
        ROOT / "docs" / "guardrails.md", ROOT / "docs" / "capabilities.md", ROOT / "docs" / "multi-agent.md",
        ROOT / "docs" / "yaml-reference.md", ROOT / "docs" / "workflows.md", ROOT / "docs" / "mcp.md",
        ROOT / "docs" / "observability.md", ROOT / "docs" / "evals.md", ROOT / "docs" / "scale-out.md",
        # the plugin authors' pages, one per kind (every page there is run)
        *sorted((ROOT / "docs" / "plugins").glob("*.md"))]


def _python_blocks() -> list[tuple[Path, Block]]:
    out = []
    for doc in DOCS:
        for block in fenced_blocks(doc):
            words = block.info.split()
            if words and words[0] == "python":
                out.append((doc, block))
    return out


BLOCKS = _python_blocks()


def test_the_docs_have_python_examples() -> None:
    assert {doc for doc, _ in BLOCKS} == set(DOCS)


@pytest.mark.parametrize(("doc", "block"), BLOCKS, ids=[f"{d.relative_to(ROOT / 'docs')}:{b.line}" for d, b in BLOCKS])
def test_python_example_runs(doc: Path, block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # dont_inherit: the example runs as a reader runs it, without this module's `from __future__` flags
    code = compile(block.body, f"{doc}:{block.line}", "exec", dont_inherit=True)
    if "notest" in block.info.split() or 'title="' in block.info:
        return
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"doc_example_{block.line}"}
    exec(code, namespace)  # the examples hold their own asserts; a failing one fails the test
    assert len(namespace) > 1, "the example defined nothing: was it extracted whole?"


def test_the_scale_out_yaml_examples_can_run_on_the_queue() -> None:
    """docs/scale-out.md's compositions are valid as written and pass the queue's check (a shared
    checkpoint store); the budget one keeps its ledger in the store under the name it says; the
    workflow's branches go to the children's queue."""
    from seamkit.composition import loads_composition
    from seamkit_celery.task import check_composition

    blocks = [b for b in fenced_blocks(ROOT / "docs" / "scale-out.md")
              if b.info.split()[:1] == ["yaml"] and b.body.lstrip().startswith("seamkit: 1")]
    assert len(blocks) == 5
    flows = [b for b in blocks if "workflow:" in b.body]
    for block in blocks:
        comp = loads_composition(block.body, env={"REDIS_URL": "redis://127.0.0.1:6379/0"})
        assert check_composition(comp) == ("lead" if block in flows else "summariser")
    (flow,) = flows
    steps = loads_composition(flow.body, env={"REDIS_URL": "redis://127.0.0.1:6379/0"}).workflow.steps  # type: ignore[union-attr]
    assert {n: s.queue_name() for n, s in steps.items()} == {"market": "children", "rivals": "children", "write": None}
    (budgeted,) = [b for b in blocks if "use: budget" in b.body]
    (budget,) = loads_composition(budgeted.body, env={"REDIS_URL": "redis://127.0.0.1:6379/0"}).agent.middlewares
    assert budget.use == "budget"


def test_the_scale_out_batch_inputs_pass_the_batch_checks_with_their_compositions(tmp_path: Path) -> None:
    """The input files of docs/scale-out.md's *Batch* section pass what ``seamkit batch`` checks
    before it enqueues (each line's JSON, then its variables against the prompt of the composition
    the page runs it with)."""
    import asyncio

    from seamkit._cli.commands import _check_variables
    from seamkit.composition import build_agents, loads_composition
    from seamkit_celery.batch import parse_inputs

    files = file_blocks(ROOT / "docs" / "scale-out.md", fenced_blocks(ROOT / "docs" / "scale-out.md"))
    for composition, inputs in (("agent.yaml", "inputs.jsonl"), ("reports.yaml", "teams.jsonl")):
        assert f"seamkit batch {composition} {inputs}" in (ROOT / "docs" / "scale-out.md").read_text()
        (tmp_path / inputs).write_text(files[inputs])
        items = parse_inputs(tmp_path / inputs)
        assert len(items) == 2
        comp = loads_composition(files[composition], env={"REDIS_URL": "redis://127.0.0.1:6379/0"})
        (agent,) = build_agents(comp).values()
        try:
            for it in items:
                _check_variables(agent, dict(it.variables))  # raises UsageError as seamkit batch reports it
        finally:
            asyncio.run(agent.checkpointer.aclose())


def test_the_guardrails_yaml_example_loads() -> None:
    """docs/guardrails.md's composition is valid as written (every guardrail, point and parameter)."""
    from seamkit.composition import loads_composition

    blocks = [b for b in fenced_blocks(ROOT / "docs" / "guardrails.md")
              if b.info.split()[:1] == ["yaml"] and b.body.lstrip().startswith("seamkit: 1")]
    assert blocks
    for block in blocks:
        comp = loads_composition(block.body)
        assert [g.use for g in comp.agent.guardrails] == ["deny", "wrap_tool_output", "redact", "moderation"]


def test_the_observability_yaml_examples_build(otel_registered: None) -> None:
    """docs/observability.md's compositions are valid as written and build (exporters included;
    nothing is exported: the agents are not run)."""
    from seamkit.composition import build_agent, loads_composition

    blocks = [b for b in fenced_blocks(ROOT / "docs" / "observability.md")
              if b.info.split()[:1] == ["yaml"] and b.body.lstrip().startswith("seamkit: 1")]
    assert len(blocks) == 3
    for block in blocks:
        agent = build_agent(loads_composition(block.body))
        otel = [m for m in agent.middlewares if type(m).__name__ == "Otel"]
        assert len(otel) == 1 and otel[0].owned is not None, block.line
        otel[0].owned.tracer_provider.shutdown()
        if otel[0].owned.meter_provider is not None:
            otel[0].owned.meter_provider.shutdown()


@pytest.fixture
def otel_registered(register_plugin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``use: otel`` resolvable whether or not seamkit-otel is installed; ``OTLP_TOKEN`` set."""
    import seamkit_otel.plugin
    from seamkit._plugins.registry import get_registry

    monkeypatch.setenv("OTLP_TOKEN", "doc-token-0123456789")
    if "otel" not in get_registry().names("middleware"):
        assert register_plugin(seamkit_otel.plugin, "otel-docs", distribution="seamkit-otel").status == "ok"


def test_the_compiled_desk_write_runs_through_the_executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/capabilities.md's first worked example declares a write a reader would copy: run through
    the executor once the person confirmed, it completes (it coordinates its effect with
    ``ctx.run_effect``, so it is not ``WRITE_EFFECT_NOT_COORDINATED``)."""
    import asyncio

    from seamkit._runtime.context import RunContext
    from seamkit.capabilities import Completed, Fact
    from seamkit.capabilities._executor import execute_capability

    [block] = [b for _, b in BLOCKS if "agent = compile_agent(desk, version=1)" in b.body]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "doc_example_desk"}
    exec(compile(block.body, "capabilities.md", "exec"), namespace)
    agent: Any = namespace["agent"]
    facts = {"request.selected@1": Fact("request.selected@1", "REQ-7")}
    result = asyncio.run(execute_capability(agent, "submit_request", {}, ctx=RunContext(), facts=facts,
                                            confirmed=True))
    assert isinstance(result, Completed), result
    assert result.output == {"ticket": "T-100"}


def test_the_multi_agent_yaml_example_runs_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """docs/multi-agent.md's desk.yaml validates and runs, printing what its console block shows."""
    from docs_testlib import console_commands, file_blocks, missing_lines
    from seamkit._cli.main import main

    doc = ROOT / "docs" / "multi-agent.md"
    blocks = fenced_blocks(doc)
    import jsonschema
    import yaml
    from seamkit.composition import composition_json_schema

    validator = jsonschema.Draft202012Validator(composition_json_schema())
    for rel, body in file_blocks(doc, blocks).items():
        (tmp_path / rel).write_text(body, encoding="utf-8")
        assert not list(validator.iter_errors(yaml.safe_load(body))), rel  # editors accept it too
    monkeypatch.chdir(tmp_path)
    commands = console_commands(doc, blocks)
    assert [c.line.split()[:2] for c in commands] == [["seamkit", "validate"], ["seamkit", "run"]]
    for command in commands:
        import shlex

        assert main(shlex.split(command.line)[1:]) == 0
        out, err = capsys.readouterr()
        assert not missing_lines(command.expected, out + "\n" + err), out + err


def test_the_evals_console_example_prints_what_it_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """docs/evals.md's bad suite is reported as its console block shows (exit code 2)."""
    import shlex

    from docs_testlib import console_commands, file_blocks, missing_lines
    from seamkit._cli.main import main

    doc = ROOT / "docs" / "evals.md"
    blocks = fenced_blocks(doc)
    for rel, body in file_blocks(doc, blocks).items():
        (tmp_path / rel).write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    [command] = [c for c in console_commands(doc, blocks) if "bad_suite.yaml" in c.line]
    capsys.readouterr()
    assert main(shlex.split(command.line)[1:]) == 2
    out, err = capsys.readouterr()
    assert command.expected and not missing_lines(command.expected, out + "\n" + err), out + err


def test_the_evals_suite_examples_load(tmp_path: Path) -> None:
    """docs/evals.md: the quick-start suite is examples/evals/quickstart_suite.yaml (less its comment
    lines), and the reference suite showing every key loads (with an agent file written for it)."""
    from seamkit_evals.suite import load_suite

    doc = ROOT / "docs" / "evals.md"
    suites = [b.body for b in fenced_blocks(doc) if b.info == "yaml" and b.body.startswith("version: 1")]
    quick, reference = suites
    example = (ROOT / "examples" / "evals" / "quickstart_suite.yaml").read_text(encoding="utf-8")
    assert quick == "".join(line + "\n" for line in example.splitlines() if not line.startswith("#"))
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "support.yaml").write_text(
        "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n  checkpoints: null\n"
        "agents:\n  billing:\n    model: {use: scripted, turns: [hi]}\n    prompt: 'You help {{tier}} customers.'\n"
        "    checkpoints: null\n", encoding="utf-8")
    (tmp_path / "more_cases.jsonl").write_text('{"id": "extra", "input": "hello"}\n', encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(reference, encoding="utf-8")
    suite = load_suite(tmp_path / "suite.yaml", env={"OPENAI_API_KEY": "sk-docs-example-000"})
    assert suite.agent_name == "billing" and [c.case.id for c in suite.cases] == ["refund-late", "follow-up", "extra"]
    assert suite.thresholds.evaluators == {"contains": 1.0, "llm_judge": 0.8} and len(suite.middlewares) == 1
