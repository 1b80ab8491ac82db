"""A budget over a workflow: agent steps are child runs of the workflow's run, so one budget
middleware shared by the agents charges every step to the workflow's ledger, and the ceiling
stops the fan-out once reached (the step that is refused fails the workflow)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from budget_fakes import PricedModel
from seamkit._agent.agent import Agent
from seamkit._runtime.context import RunContext
from seamkit.errors import BudgetExceeded
from seamkit.workflows import Step, StepContext, Workflow, WorkflowFailed, agent_step, run_workflow
from seamkit_budget.middleware import BudgetMiddleware


async def five_topics(ctx: StepContext, data: object) -> list[str]:
    return ["a", "b", "c", "d", "e"]


async def test_agent_steps_are_charged_to_the_workflow_and_its_ceiling_stops_the_fan_out() -> None:
    budget = BudgetMiddleware(max_cost_usd="0.0025")
    model = PricedModel(cost=Decimal("0.001"))
    researcher = Agent(model, name="researcher", middlewares=(budget,), max_tokens=10)
    w = Workflow("research", (
        Step("plan", five_topics, "start", "topic"),
        agent_step("research", researcher, consumes="topic", emits="notes"),
        Step("write", _join, "notes", "report", join=True),
    ), outcomes=("report",), max_concurrency=1)
    ctx = RunContext()
    with pytest.raises(WorkflowFailed) as err:
        await run_workflow(w, "q", ctx=ctx)
    assert err.value.code == "STEP_FAILED" and err.value.step == "research"
    assert isinstance(err.value.__cause__, BudgetExceeded)
    spent = budget.ledger(ctx.run_id).spent
    assert model.dispatched == 3 and spent == Decimal("0.003")  # three children, charged to the workflow


async def _join(ctx: StepContext, notes: list[str]) -> str:
    return " ".join(notes)
