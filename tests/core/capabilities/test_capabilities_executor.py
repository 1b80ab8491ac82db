"""Running one capability (``seamkit.capabilities._executor``): input validation, ports, effects
through the ledger exactly once, and every misuse as a Failed result with its code."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from seamkit._durability.ledger import EffectLedger
from seamkit._runtime.context import RunContext
from seamkit.capabilities import (
    Capability,
    CapabilityContext,
    Completed,
    Failed,
    NeedsConfirmation,
    compile_agent,
    execute_capability,
)
from seamkit.errors import EffectNotApplied
from seamkit.testing import MemoryStore


class Order(BaseModel):
    order_id: str
    amount: int


CALLS: list[str] = []


def agent_of(*caps: Capability) -> Any:
    return compile_agent(caps)


def ctx_with(store: Any = None) -> RunContext:
    ctx = RunContext()
    ctx.effects = EffectLedger(store if store is not None else MemoryStore())
    return ctx


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


async def refund(ctx: CapabilityContext, order: Order) -> Completed:
    async def op() -> str:
        CALLS.append(order.order_id)
        return f"refund-{order.order_id}"

    receipt = await ctx.run_effect(f"refund:{order.order_id}", op)
    return Completed(output={"receipt": receipt})


REFUND = Capability("refund", 1, "Refund an order", refund, input=Order, effect="write", confirmation="required")


async def test_a_write_runs_its_effect_once_across_attempts_and_contexts_sharing_a_store() -> None:
    store = MemoryStore()
    agent = agent_of(REFUND)
    first = await execute_capability(agent, "refund", {"order_id": "A1", "amount": 5}, ctx=ctx_with(store))
    again = await execute_capability(agent, "refund", {"order_id": "A1", "amount": 5}, ctx=ctx_with(store))
    assert isinstance(first, Completed) and first.output == {"receipt": "refund-A1"}
    assert isinstance(again, Completed) and again.output == first.output
    assert CALLS == ["A1"]


async def test_invalid_input_and_unknown_ids_are_failed_results_with_codes() -> None:
    agent = agent_of(REFUND)
    r = await execute_capability(agent, "refund", {"order_id": "A1", "amount": "lots"}, ctx=ctx_with())
    assert isinstance(r, Failed) and r.code == "INVALID_CAPABILITY_INPUT" and "amount" in r.message
    r = await execute_capability(agent, "refunds", {}, ctx=ctx_with())
    assert isinstance(r, Failed) and r.code == "CAPABILITY_NOT_REGISTERED" and r.ids == ("refunds",)
    assert CALLS == []


async def test_an_uncertain_effect_is_never_run_again() -> None:
    async def flaky(ctx: CapabilityContext, order: Order) -> Completed:
        async def op() -> str:
            CALLS.append(order.order_id)
            raise ConnectionError("reset by peer after sending; secret=hunter2")

        await ctx.run_effect("pay", op)
        return Completed()

    agent = agent_of(Capability("pay", 1, "Pay", flaky, input=Order, effect="write", confirmation="required"))
    ctx = ctx_with()
    for _ in range(3):
        r = await execute_capability(agent, "pay", {"order_id": "A1", "amount": 5}, ctx=ctx)
        assert isinstance(r, Failed) and r.code == "EFFECT_UNCERTAIN"
        assert "hunter2" not in r.message
    assert CALLS == ["A1"]


async def test_an_effect_that_certainly_did_not_happen_may_be_retried() -> None:
    declined = [True]

    async def charge(ctx: CapabilityContext, order: Order) -> Any:
        async def op() -> str:
            CALLS.append(order.order_id)
            if declined[0]:
                raise EffectNotApplied("card declined")
            return "charged"

        try:
            return Completed(output=await ctx.run_effect("charge", op))
        except EffectNotApplied:
            return Failed("DECLINED", "the card was declined")

    agent = agent_of(Capability("charge", 1, "Charge", charge, input=Order, effect="write", confirmation="required"))
    ctx = ctx_with()
    r = await execute_capability(agent, "charge", {"order_id": "A1", "amount": 5}, ctx=ctx)
    assert isinstance(r, Failed) and r.code == "DECLINED"
    declined[0] = False
    r = await execute_capability(agent, "charge", {"order_id": "A1", "amount": 5}, ctx=ctx)
    assert isinstance(r, Completed) and r.output == "charged"
    assert CALLS == ["A1", "A1"]


@pytest.mark.parametrize(("effect", "key", "code"), [
    ("read", "k", "EFFECT_NOT_ALLOWED"),
    ("none", "k", "EFFECT_NOT_ALLOWED"),
    ("write", "  ", "INVALID_IDEMPOTENCY_KEY"),
    ("write", "", "INVALID_IDEMPOTENCY_KEY"),
])
async def test_misusing_run_effect_is_refused_with_a_code(effect: str, key: str, code: str) -> None:
    async def misuse(ctx: CapabilityContext, order: Order) -> Completed:
        async def op() -> None:
            CALLS.append("ran")

        await ctx.run_effect(key, op)
        return Completed()

    conf = "required" if effect == "write" else "none"
    agent = agent_of(Capability("x", 1, "X", misuse, input=Order, effect=effect, confirmation=conf))  # type: ignore[arg-type]
    r = await execute_capability(agent, "x", {"order_id": "A1", "amount": 1}, ctx=ctx_with())
    assert isinstance(r, Failed) and r.code == code and r.ids[0] == "x@1"
    assert CALLS == []


async def test_a_write_completing_without_its_effect_is_refused() -> None:
    async def sloppy(ctx: CapabilityContext, order: Order) -> Completed:
        CALLS.append("wrote directly")
        return Completed()

    agent = agent_of(Capability("w", 1, "W", sloppy, input=Order, effect="write", confirmation="required"))
    r = await execute_capability(agent, "w", {"order_id": "A1", "amount": 1}, ctx=ctx_with())
    assert isinstance(r, Failed) and r.code == "WRITE_EFFECT_NOT_COORDINATED"


async def test_a_write_may_ask_for_confirmation_without_an_effect() -> None:
    async def ask(ctx: CapabilityContext, order: Order) -> NeedsConfirmation:
        return NeedsConfirmation(f"refund {order.amount} on {order.order_id}?")

    agent = agent_of(Capability("w", 1, "W", ask, input=Order, effect="write", confirmation="capability"))
    r = await execute_capability(agent, "w", {"order_id": "A1", "amount": 1}, ctx=ctx_with())
    assert isinstance(r, NeedsConfirmation) and r.summary == "refund 1 on A1?"


@pytest.mark.parametrize("outcome", [RuntimeError("db password is hunter2"), "not a result"])
async def test_an_unexpected_exception_or_value_is_a_typed_failure_without_its_text(outcome: Any) -> None:
    async def broken(ctx: CapabilityContext, order: Order) -> Any:
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    agent = agent_of(Capability("b", 1, "B", broken, input=Order, effect="read"))
    r = await execute_capability(agent, "b", {"order_id": "A1", "amount": 1}, ctx=ctx_with())
    assert isinstance(r, Failed) and r.code == "CAPABILITY_ERROR" and "hunter2" not in r.message


async def test_ports_are_the_run_services_plus_the_given_ones() -> None:
    seen: dict[str, Any] = {}

    async def look(ctx: CapabilityContext, order: Order) -> Completed:
        seen["crm"] = ctx.port("crm")
        seen["store"] = ctx.port("store")
        with pytest.raises(KeyError, match="no port 'mail'"):
            ctx.port("mail")
        return Completed()

    agent = agent_of(Capability("l", 1, "L", look, input=Order, effect="read"))
    ctx = ctx_with()
    ctx.services = {"store": "the-store"}
    r = await execute_capability(agent, "l", {"order_id": "A1", "amount": 1}, ctx=ctx, ports={"crm": "the-crm"})
    assert isinstance(r, Completed) and seen == {"crm": "the-crm", "store": "the-store"}


async def test_confirmation_and_continuation_state_reach_the_capability() -> None:
    seen: list[Any] = []

    async def resume(ctx: CapabilityContext, order: Order) -> Completed:
        seen.append((ctx.confirmed, ctx.state))
        return Completed()

    agent = agent_of(Capability("r", 1, "R", resume, input=Order, effect="read"))
    args = {"order_id": "A1", "amount": 1}
    await execute_capability(agent, "r", args, ctx=ctx_with())
    await execute_capability(agent, "r", args, ctx=ctx_with(), confirmed=True, state={"step": 2})
    assert seen == [(False, None), (True, {"step": 2})]
