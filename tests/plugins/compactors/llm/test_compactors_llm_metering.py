"""The summariser's call is metered like any chat call: given the agent's own budget middleware, its
cost is charged to the run's ledger (by run id), next to the agent's own calls."""

from __future__ import annotations

from decimal import Decimal

from llm_compactor_fakes import filler
from seamkit import Agent
from seamkit._pricing import Price
from seamkit.testing import ScriptedModel, ScriptedTurn
from seamkit.values import Usage
from seamkit_budget.middleware import BudgetMiddleware
from seamkit_compaction.config import CompactionConfig
from seamkit_compaction.middleware import Compaction
from seamkit_compactors_llm.config import SummarizationConfig
from seamkit_compactors_llm.summarization import SummarizationCompactor


class PricedModel(ScriptedModel):
    price = Price(Decimal("1"), Decimal("2"))  # USD per million input / output tokens


async def test_the_summariser_is_charged_to_the_runs_budget() -> None:
    budget = BudgetMiddleware(Decimal("1"))
    unpriced = Usage(input_tokens=1000, output_tokens=100, requests=1)  # priced by the middleware
    summariser = PricedModel([ScriptedTurn(text="the task, in short", usage=unpriced)], model="summariser")
    comp = SummarizationCompactor(SummarizationConfig.model_validate({"model": "scripted", "keep_recent_units": 1}),
                                  model=summariser, middlewares=[budget])
    compaction = Compaction(CompactionConfig.model_validate({"compactor": "summarization", "budget_tokens": 100}),
                            compactor=comp)
    main = PricedModel([ScriptedTurn(text="", tool_calls=({"name": "nope", "arguments": {}},), usage=unpriced),
                        ScriptedTurn(text="done", usage=unpriced)], model="main")
    agent = Agent(main, middlewares=[compaction, budget])  # budget reserves for what is sent
    result = await agent.run("Do this: " + filler(300))
    assert result.output == "done" and summariser.calls == 1
    ledger = budget.ledger(result.run_id)
    per_call = Decimal("0.0012")  # 1000 * 1 / 1e6 + 100 * 2 / 1e6
    assert ledger.calls == 3 and ledger.spent == 3 * per_call  # two agent turns and the summary
