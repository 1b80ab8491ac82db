"""The compaction middleware composed from YAML, with a compactor slot and the compactor's own
nested model slot: it loads, builds and runs; every bad nested slot is located at load time."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from seamkit.composition import build_agent, composition_json_schema, load_composition
from seamkit.errors import ConfigError
from seamkit_compaction.middleware import Compaction
from seamkit_compactors_llm.importance import ImportanceCompactor
from seamkit_compactors_llm.summarization import SummarizationCompactor


def write(tmp_path: Path, middlewares: str, turns: str = "[done]") -> Path:
    p = tmp_path / "agent.yaml"
    p.write_text(textwrap.dedent(f"""\
        seamkit: 1
        agent:
          model: {{use: scripted, turns: {turns}}}
          prompt: You are terse.
          checkpoints: null
          middlewares: {middlewares}
        """))
    return p


async def test_summarization_composes_builds_and_runs(tmp_path: Path) -> None:
    words = " ".join(["context"] * 300)
    file = write(tmp_path, """
            - use: compaction
              budget_tokens: 200
              compactor:
                use: summarization
                keep_recent_units: 1
                max_summary_tokens: 64
                model: {use: scripted, turns: [the user wants a one-word answer], repeat: true}
        """, "[{tool_calls: [{name: echo, arguments: {x: 1}}]}, done]")
    agent = build_agent(load_composition(file))
    (mw,) = agent.middlewares
    assert isinstance(mw, Compaction) and mw.config.budget_tokens == 200
    comp = mw.compactor
    assert isinstance(comp, SummarizationCompactor) and comp.config.max_summary_tokens == 64
    result = await agent.run(f"Answer in one word. {words}")
    assert result.output == "done"
    assert comp.model.calls == 1  # type: ignore[attr-defined]
    assert any(w.startswith("compacted ") and "with summarization" in w for w in result.warnings), result.warnings


def test_importance_and_shorthands_load(tmp_path: Path) -> None:
    file = write(tmp_path, "[{use: compaction, budget_fraction: 0.5, context_tokens: 8000, "
                           "compactor: {use: importance, model: {use: scripted, turns: ['{\"keep\": []}']}}}]")
    (mw,) = build_agent(load_composition(file)).middlewares
    assert isinstance(mw, Compaction) and isinstance(mw.compactor, ImportanceCompactor)
    assert mw.budget_for(None) == 4000
    (mw2,) = build_agent(load_composition(write(tmp_path, "[{use: compaction, budget_tokens: 9, "
                                                          "compactor: truncation}]"))).middlewares
    assert mw2.compactor.name == "truncation"  # type: ignore[attr-defined]


@pytest.mark.parametrize("middleware,path,line,fragment", [
    ("{use: compaction, budget_tokens: 9, compactor: {use: sumarization, model: scripted}}",
     "agent.middlewares[0].compactor.use", 6, "unknown compactor 'sumarization'; did you mean 'summarization'?"),
    ("{use: compaction, budget_tokens: 9, compactor: {use: summarization, model: {use: scriptd, turns: [s]}}}",
     "agent.middlewares[0].compactor.model.use", 6, "unknown provider 'scriptd'; did you mean 'scripted'?"),
    ("{use: compaction, budget_tokens: 9, compactor: {use: summarization, model: {use: scripted}}}",
     "agent.middlewares[0].compactor.model.turns", 6, "missing required key 'turns' for provider 'scripted'"),
    ("{use: compaction, budget_tokens: 9, compactor: {use: importance, model: {use: scripted, turns: [x], b: 1}}}",
     "agent.middlewares[0].compactor.model.b", 6, "unknown key 'b' for provider 'scripted'"),
    ("{use: compaction, budget_tokens: 9, compactor: {use: summarization, model: {use: scripted, turns: [s]}, "
     "keep_recent_units: 0}}",
     "agent.middlewares[0].compactor.keep_recent_units", 6, "greater than or equal to 1"),
    ("{use: compaction, budget_tokens: 9, compactor: {use: summarization, model: retry}}",
     "agent.middlewares[0].compactor.model", 6, "'retry' is a middleware, not a provider"),
    ("{use: compaction, budget_tokens: 9, compactor: {use: retry}}",
     "agent.middlewares[0].compactor.use", 6, "'retry' is a middleware, not a compactor"),
    ("{use: compaction, compactor: truncation}", "agent.middlewares[0]", 6,
     "set exactly one of budget_tokens and budget_fraction"),
])
def test_bad_nested_slots_are_located_at_load(tmp_path: Path, middleware: str, path: str, line: int,
                                              fragment: str) -> None:
    file = write(tmp_path, f"[{middleware}]")
    with pytest.raises(ConfigError) as info:
        load_composition(file)
    (issue,) = info.value.issues
    assert (issue.file, issue.line, issue.path) == (str(file), line, path), issue
    assert issue.column is not None and fragment in issue.message, issue


def test_every_bad_slot_is_reported_once(tmp_path: Path) -> None:
    file = write(tmp_path, """
            - {use: compaction, budget_tokens: 9, compactor: {use: summarization, model: {use: scriptd, turns: [s]}}}
            - use: compaction
              budget_tokens: 9
              compactor:
                use: importance
                model: {use: scripted}
        """)
    with pytest.raises(ConfigError) as info:
        load_composition(file)
    assert sorted((i.path, i.line) for i in info.value.issues) == [
        ("agent.middlewares[0].compactor.model.use", 7),
        ("agent.middlewares[1].compactor.model.turns", 12),
    ]


def test_the_composition_schema_describes_them() -> None:
    text = str(composition_json_schema())
    assert "'compaction'" in text and "budget_fraction" in text
