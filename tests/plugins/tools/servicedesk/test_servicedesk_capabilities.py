"""The service-desk capabilities run through the kernel's executor (``execute_capability``) against
real stores: the in-memory reference store and SQLite. Searches establish ``service.match@1`` with
catalog evidence, a submitted request opens exactly one ticket through the effect ledger, and
every failure is a result with a code."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from seamkit._durability.ledger import EffectLedger
from seamkit._grounding import citation_id
from seamkit._runtime.context import RunContext
from seamkit.capabilities import Completed, Fact, Failed, compile_agent, execute_capability, reduce_facts
from seamkit.errors import StoreUnavailable
from seamkit.testing import MemoryStore
from seamkit.values import Scope, thaw
from seamkit_servicedesk.capabilities import (
    build_request_status,
    build_search_services,
    build_submit_request,
)
from seamkit_servicedesk.catalog import bundled_catalog
from seamkit_sqlite.store import SqliteStore

ANN = Scope(tenant="acme", user="ann", thread="t1")
DESK = Scope(tenant="acme")  # where the tickets live: the tenant's scope

AGENT = compile_agent([build_search_services(), build_submit_request(), build_request_status()])

# opens a store; called again with the same tmp_path it opens the same data (another process, for
# SQLite; the same object for the in-memory store, which lives only in this process)
StoreOpener = Callable[[], Any]


@pytest_asyncio.fixture(params=["memory", "sqlite"])
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreOpener]:
    opened: list[Any] = []
    memory = MemoryStore()

    def opener() -> Any:
        store = memory if request.param == "memory" else SqliteStore(tmp_path / "desk.db")
        opened.append(store)
        return store

    yield opener
    for store in {id(s): s for s in opened}.values():
        await store.aclose()


def run_ctx(store: Any, scope: Scope = ANN) -> RunContext:
    """A run with ``store`` as its ``store`` port and a durable effect ledger over it."""
    ctx = RunContext(scope=scope, services={"store": store})
    ctx.effects = EffectLedger(store, tenant=scope.tenant)
    return ctx


async def found(store: Any, query: str = "my laptop screen is broken") -> dict[str, Fact]:
    result = await execute_capability(AGENT, "search_services", {"query": query}, ctx=run_ctx(store))
    assert isinstance(result, Completed), result
    return {str(f.type): f for f in result.facts}


async def test_search_matches_the_service_and_backs_the_fact_with_catalog_evidence() -> None:
    result = await execute_capability(AGENT, "search_services", {"query": "My LAPTOP screen is broken"},
                                      ctx=run_ctx(MemoryStore()))
    assert isinstance(result, Completed), result
    matches = result.output["matches"]
    assert 1 <= len(matches) <= 3 and matches[0] == {"id": "laptop-repair", "name": "Laptop repair",
                                                     "team": "IT Hardware"}
    (fact,) = result.facts
    (evidence,) = result.evidence
    assert str(fact.type) == "service.match@1" and fact.value == matches[0]
    laptop = next(s for s in bundled_catalog() if s.id == "laptop-repair")
    assert (evidence.source, evidence.excerpt) == ("catalog:laptop-repair", laptop.description)
    # the fact cites its evidence by the citation id answers use
    assert fact.evidence == (evidence.id,) == (citation_id("catalog:laptop-repair"),)


@pytest.mark.parametrize(("query", "service"), [
    ("I forgot my password and my account is locked", "password-reset"),
    ("the printers on floor 2 keep jamming", "printer-issue"),
    ("VPN fails when I work from home", "vpn-access"),
    ("lost my access badge", "access-badge"),
    ("projector in the meeting room is dead", "meeting-room-av"),
    ("I deleted a folder by mistake, please restore it", "data-recovery"),
])
async def test_search_picks_the_service_a_person_means(query: str, service: str) -> None:
    facts = await found(MemoryStore(), query)
    assert facts["service.match@1"].value["id"] == service


async def test_a_query_sharing_no_word_with_the_catalog_is_no_matching_service() -> None:
    result = await execute_capability(AGENT, "search_services", {"query": "xyzzy plugh"}, ctx=run_ctx(MemoryStore()))
    assert isinstance(result, Failed) and result.code == "NO_MATCHING_SERVICE" and result.ids == ("xyzzy plugh",)


@pytest.mark.parametrize(("capability", "arguments", "field"), [
    ("search_services", {"query": "   "}, "query"),
    ("search_services", {}, "query"),
    ("submit_request", {"summary": ""}, "summary"),
    ("submit_request", {"summary": "x" * 501}, "summary"),
    ("submit_request", {"summary": "broken", "urgency": "asap"}, "urgency"),
    ("submit_request", {"summary": "broken", "priority": "high"}, "priority"),
    ("request_status", {"ticket": "12"}, "ticket"),
    ("request_status", {"ticket": "SD-0"}, "ticket"),
])
async def test_invalid_input_is_invalid_capability_input_naming_the_field(
        capability: str, arguments: dict[str, Any], field: str) -> None:
    store = MemoryStore()
    facts = await found(store)
    result = await execute_capability(AGENT, capability, arguments, ctx=run_ctx(store), facts=facts)
    assert isinstance(result, Failed) and result.code == "INVALID_CAPABILITY_INPUT", result
    assert field in result.message
    assert await store.get(DESK, "servicedesk:next_ticket") is None  # nothing was written


async def test_submit_opens_exactly_one_ticket_when_executed_twice(open_store: StoreOpener) -> None:
    facts = await found(open_store())
    request = {"summary": "Screen flickers and goes black", "urgency": "high"}
    first = await execute_capability(AGENT, "submit_request", request, ctx=run_ctx(open_store()), facts=facts)
    # again, in a fresh run with a fresh ledger over the same data (for SQLite: the file reopened)
    again = await execute_capability(AGENT, "submit_request", request, ctx=run_ctx(open_store()), facts=facts)
    assert isinstance(first, Completed) and isinstance(again, Completed), (first, again)
    assert first.output == again.output == {
        "ticket": "SD-1", "service": "Laptop repair", "team": "IT Hardware",
        "summary": "Screen flickers and goes black", "urgency": "high", "status": "open"}
    assert first.artifacts == {"ticket": "SD-1"}
    store = open_store()
    assert await store.get(DESK, "servicedesk:next_ticket") == 1
    stored = await store.get(DESK, "servicedesk:ticket:1")
    assert stored["service"] == "laptop-repair" and stored["requester"] == "ann"
    assert await store.get(DESK, "servicedesk:ticket:2") is None
    # another request is another ticket
    other = await execute_capability(AGENT, "submit_request", {"summary": "Battery dies in an hour"},
                                     ctx=run_ctx(store), facts=facts)
    assert isinstance(other, Completed) and other.output["ticket"] == "SD-2" and other.output["urgency"] == "normal"


async def test_the_same_words_from_another_user_open_their_own_ticket() -> None:
    store = MemoryStore()
    facts = await found(store)
    request = {"summary": "Screen is broken"}
    mine = await execute_capability(AGENT, "submit_request", request, ctx=run_ctx(store), facts=facts)
    bob = Scope(tenant="acme", user="bob", thread="t9")
    theirs = await execute_capability(AGENT, "submit_request", request, ctx=run_ctx(store, bob), facts=facts)
    assert isinstance(mine, Completed) and isinstance(theirs, Completed)
    assert (mine.output["ticket"], theirs.output["ticket"]) == ("SD-1", "SD-2")


async def test_the_ticket_fact_depends_on_the_match_and_a_new_match_forgets_it() -> None:
    store = MemoryStore()
    facts = await found(store)
    result = await execute_capability(AGENT, "submit_request", {"summary": "Screen is broken"},
                                      ctx=run_ctx(store), facts=facts)
    assert isinstance(result, Completed)
    (ticket,) = result.facts
    (evidence,) = result.evidence
    assert str(ticket.type) == "request.ticket@1" and ticket.value == {"ticket": "SD-1", "service": "laptop-repair"}
    assert [str(t) for t in ticket.depends_on] == ["service.match@1"] and ticket.evidence == (evidence.id,)
    state = reduce_facts(facts, AGENT.get("submit_request"), result).facts
    search = await execute_capability(AGENT, "search_services", {"query": "printer offline"}, ctx=run_ctx(store))
    assert isinstance(search, Completed)
    after = reduce_facts(state, AGENT.get("search_services"), search)
    assert [str(t) for t in after.removed] == ["request.ticket@1"] and "request.ticket@1" not in after.facts


async def test_submit_without_the_match_or_the_store_fails_with_a_code_and_writes_nothing() -> None:
    store = MemoryStore()
    r = await execute_capability(AGENT, "submit_request", {"summary": "broken"}, ctx=run_ctx(store))
    assert isinstance(r, Failed) and r.code == "MISSING_FACT" and r.ids == ("submit_request@1", "service.match@1")
    facts = await found(store)
    no_port = RunContext(scope=ANN)
    no_port.effects = EffectLedger(store)
    r = await execute_capability(AGENT, "submit_request", {"summary": "broken"}, ctx=no_port, facts=facts)
    assert isinstance(r, Failed) and r.code == "MISSING_PORT" and "store" in r.ids
    assert await store.get(DESK, "servicedesk:next_ticket") is None


class FlakyStore(MemoryStore):
    """A store whose next ``increment`` fails as a backend outage does."""

    down = False

    async def increment(self, scope: Scope, key: str, by: int = 1) -> int:
        if self.down:
            self.down = False
            raise StoreUnavailable("connection refused")
        return await super().increment(scope, key, by)


async def test_a_store_outage_before_the_write_is_store_unavailable_and_a_retry_opens_the_ticket() -> None:
    store = FlakyStore()
    facts = await found(store)
    store.down = True
    request = {"summary": "Screen is broken"}
    r = await execute_capability(AGENT, "submit_request", request, ctx=run_ctx(store), facts=facts)
    assert isinstance(r, Failed) and r.code == "STORE_UNAVAILABLE", r
    r = await execute_capability(AGENT, "submit_request", request, ctx=run_ctx(store), facts=facts)
    assert isinstance(r, Completed) and r.output["ticket"] == "SD-1"


async def test_status_reads_the_ticket_back_for_its_requester_only(open_store: StoreOpener) -> None:
    facts = await found(open_store())
    submitted = await execute_capability(AGENT, "submit_request", {"summary": "Keyboard missing keys"},
                                         ctx=run_ctx(open_store()), facts=facts)
    assert isinstance(submitted, Completed)
    facts = dict(reduce_facts(facts, AGENT.get("submit_request"), submitted).facts)
    status = await execute_capability(AGENT, "request_status", {"ticket": " sd-1 "}, ctx=run_ctx(open_store()),
                                      facts=facts)
    assert isinstance(status, Completed), status
    assert status.output == submitted.output
    assert [e.id for e in status.evidence] == [e.id for e in submitted.evidence]
    for scope, ticket in ((ANN, "SD-2"), (Scope(tenant="acme", user="bob"), "SD-1"), (Scope(tenant="other", user="ann"),
                                                                                       "SD-1")):
        r = await execute_capability(AGENT, "request_status", {"ticket": ticket}, ctx=run_ctx(open_store(), scope),
                                     facts=facts)
        assert isinstance(r, Failed) and r.code == "UNKNOWN_TICKET" and r.ids == (ticket,), (scope, r)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_the_three_compile_in_the_order_search_submit_status(order: tuple[int, ...]) -> None:
    caps = [build_search_services(), build_submit_request(), build_request_status()]
    agent = compile_agent([caps[i] for i in order])
    assert agent.order == ("search_services", "submit_request", "request_status")
    assert dict(agent.providers) == {"service.match@1": "search_services", "request.ticket@1": "submit_request"}
    assert agent.fingerprint == AGENT.fingerprint
    submit = agent.get("submit_request")
    assert submit is not None and (submit.effect, submit.confirmation) == ("write", "required")


def test_what_the_model_reads_fits_a_small_context() -> None:
    # the bundled local model has 2048 tokens for everything: each capability's description,
    # guidance and input schema together stay under 800 characters (about 200 tokens)
    for c in AGENT.capabilities:
        g = c.guidance
        shown = c.description + g.when_to_use + g.when_not_to_use + "".join(g.examples)
        shown += json.dumps(thaw(AGENT.input_schemas[c.id]))
        assert g.when_to_use and g.when_not_to_use and g.examples, c.id
        assert len(shown) < 800, (c.id, len(shown))
    # no 'pattern' the bundled model's grammar cannot express (its provider would warn on every request)
    assert "pattern" not in json.dumps(thaw(AGENT.input_schemas["request_status"]))
