"""Every example composition that runs on the bundled model (``llamacpp`` without ``model_path``:
Gemma 3 270M, a tiny base model whose free text is junk) constrains what it answers with: a typed
output (``output: json_schema``), a gather-mode agent (its output is the tools' results) or
capabilities (the planner writes grammar-constrained JSON). Checked for ``examples/*.yaml`` and
the compositions shown in docs/getting-started.md, each entry agent and every agent under
``agents:``, read with the composition loader (docs/getting-started.md, "The bundled model")."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_testlib import fenced_blocks
from seamkit.composition import load_composition, loads_composition
from seamkit.composition._models import AgentConfig, Composition

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
GUIDE = ROOT / "docs" / "getting-started.md"
# the hosted examples read their keys and URLs from the environment: any value loads them
ENV = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}


def bundled(agent: AgentConfig) -> bool:
    """Whether ``agent`` runs on the bundled model: ``llamacpp`` with no ``model_path``."""
    return agent.model.use == "llamacpp" and agent.model.params.get("model_path") is None


def unconstrained(composition: Composition) -> list[str]:
    """The names of the agents of ``composition`` on the bundled model whose answer is free text."""
    agents = {"agent": composition.agent, **{f"agents.{k}": v for k, v in composition.agents.items()}}
    return [name for name, a in agents.items()
            if bundled(a) and a.output is None and a.mode != "gather" and not a.capabilities]


def _guide_compositions() -> list[tuple[int, str]]:
    return [(b.line, b.body) for b in fenced_blocks(GUIDE)
            if b.info.split()[:1] == ["yaml"] and b.body.startswith("seamkit: 1")]


def test_the_examples_on_the_bundled_model_are_found() -> None:
    # the check below must look at something: the quickstart and the other local examples
    names = [p.name for p in EXAMPLES if any(bundled(a) for a in _agents(load_composition(p, env=ENV)))]
    assert {"quickstart.yaml", "coordinator.yaml", "chat.yaml", "service-desk.yaml"} <= set(names), names
    assert _guide_compositions(), "docs/getting-started.md shows no composition"


def _agents(c: Composition) -> list[AgentConfig]:
    return [c.agent, *c.agents.values()]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_on_the_bundled_model_constrains_its_output(path: Path) -> None:
    assert unconstrained(load_composition(path, env=ENV)) == [], (
        f"{path.name}: an agent on the bundled model answers in free text; give it a typed output "
        "(output: json_schema), see docs/getting-started.md 'The bundled model'")


def test_the_getting_started_compositions_constrain_their_output(tmp_path: Path) -> None:
    for line, body in _guide_compositions():
        assert unconstrained(loads_composition(body, env=ENV, base_dir=tmp_path)) == [], f"{GUIDE}:{line}"


def test_the_check_catches_a_free_text_agent_on_the_bundled_model(tmp_path: Path) -> None:
    text = ("seamkit: 1\nagent:\n  model: {use: llamacpp}\n  output: {json_schema: {type: object}}\n"
            "agents:\n  talker: {model: {use: llamacpp}, prompt: Tell a story.}\n"
            "  big: {model: {use: llamacpp, model_path: MODEL}, prompt: Tell a story.}\n")
    gguf = tmp_path / "big.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))  # the loader checks the magic bytes only (no model is loaded)
    comp = loads_composition(text.replace("MODEL", str(gguf)), env={})
    assert unconstrained(comp) == ["agents.talker"]
