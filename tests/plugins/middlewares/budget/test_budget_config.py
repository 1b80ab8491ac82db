"""The ``budget`` component: registration, its config model, YAML composition and located errors."""

from __future__ import annotations

import textwrap
from decimal import Decimal

import pytest
from pydantic import ValidationError
from seamkit._plugins.registry import get_registry
from seamkit.composition import build_agent, composition_json_schema, loads_composition
from seamkit.errors import ConfigError
from seamkit_budget import BudgetMiddleware
from seamkit_budget.config import BudgetConfig


def yaml_with(middleware: str) -> str:
    return textwrap.dedent(f"""\
        seamkit: 1
        agent:
          name: budgeted
          model: {{use: scripted, turns: [hello]}}
          prompt: Be brief.
          checkpoints: null
          middlewares:
            - {middleware}
        """)


def test_budget_is_registered_lazily_by_its_distribution() -> None:
    spec = get_registry().resolve("middleware", "budget")
    assert spec.distribution == "seamkit-budget"
    assert spec.factory == "seamkit_budget.middleware:build"
    assert spec.config_model() is BudgetConfig


def test_config_defaults_and_exact_amounts() -> None:
    cfg = BudgetConfig(max_cost_usd="0.50")
    assert cfg.max_cost_usd == Decimal("0.50") and type(cfg.max_cost_usd) is Decimal
    assert (cfg.allow_unpriced, cfg.default_max_tokens) == (False, 4096)
    assert BudgetConfig(max_cost_usd=3).max_cost_usd == Decimal(3)
    assert BudgetConfig(max_cost_usd=Decimal("0.1")).max_cost_usd == Decimal("0.1")


@pytest.mark.parametrize(("value", "fragment"), [
    (0.5, "inexact"), ("-1", "greater than 0"), ("0", "greater than 0"), ("lots", "not a decimal"),
    (True, "boolean"), ("NaN", "finite"), ([1], "USD amount"),
])
def test_config_refuses_bad_ceilings(value: object, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        BudgetConfig(max_cost_usd=value)
    assert fragment in str(info.value)


def test_config_refuses_unknown_keys_and_bad_token_counts() -> None:
    with pytest.raises(ValidationError):
        BudgetConfig(max_cost_usd="1", max_cost="2")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        BudgetConfig(max_cost_usd="1", default_max_tokens=0)


async def test_yaml_composition_builds_a_working_budget() -> None:
    comp = loads_composition(yaml_with('{use: budget, max_cost_usd: "0.50", default_max_tokens: 256}'))
    agent = build_agent(comp)
    (mw,) = agent.middlewares
    assert isinstance(mw, BudgetMiddleware)
    assert mw.ceiling == Decimal("0.50") and mw.default_max_tokens == 256 and not mw.allow_unpriced
    result = await agent.run("hi")  # the scripted model is local: free
    assert result.output == "hello"
    assert mw.ledger(result.run_id).spent == 0


def test_yaml_unquoted_decimal_that_stays_text_is_exact() -> None:
    # `0.50` is not the shortest form of a float, so the loader keeps it as the text "0.50"
    comp = loads_composition(yaml_with("{use: budget, max_cost_usd: 0.50}"))
    assert build_agent(comp).middlewares[0].ceiling == Decimal("0.50")


@pytest.mark.parametrize(("value", "fragment"), [
    ('"-0.5"', "greater than 0"), ("0.5", "inexact"), ("cheap", "not a decimal"), ('"0"', "greater than 0"),
])
def test_yaml_bad_ceiling_is_a_located_config_error(value: str, fragment: str) -> None:
    text = yaml_with(f"{{use: budget, max_cost_usd: {value}}}")
    with pytest.raises(ConfigError) as info:
        loads_composition(text, file="budget.yaml")
    (issue,) = info.value.issues
    assert issue.path == "agent.middlewares[0].max_cost_usd"
    assert fragment in issue.message
    assert issue.file == "budget.yaml"
    line = text.splitlines()[issue.line - 1]
    assert issue.line == 8 and line[issue.column - 1:].startswith(value)  # 1-based, at the value


def test_yaml_missing_ceiling_and_misspelt_key_are_reported() -> None:
    with pytest.raises(ConfigError) as info:
        loads_composition(yaml_with("{use: budget, max_cost: '1'}"))
    paths = {i.path for i in info.value.issues}
    assert "agent.middlewares[0].max_cost" in paths


def test_budget_params_appear_in_the_composition_schema() -> None:
    schema = composition_json_schema()
    text = str(schema)
    assert "max_cost_usd" in text and "allow_unpriced" in text and "default_max_tokens" in text


RULE = ("a call is admitted while spend plus reservations is under the ceiling, so the ceiling is "
        "overshot by at most one in-flight reservation (a first call whose reservation alone exceeds "
        "the ceiling is admitted)")


def _flat(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def test_the_readme_the_ask_docs_and_the_config_state_the_admission_rule_not_a_hard_ceiling() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[4]
    readme = _flat((root / "plugins/middlewares/budget/README.md").read_text(encoding="utf-8"))
    ask_doc = _flat((root / "docs/ask.md").read_text(encoding="utf-8"))
    field = _flat(BudgetConfig.model_fields["max_cost_usd"].description or "")
    for text in (readme, ask_doc, field):
        assert RULE.lower() in text.lower()
        assert "hard ceiling" not in text.lower() and "hard usd ceiling" not in text.lower()
