"""The service-desk capabilities: ``search_services`` -> ``submit_request`` -> ``request_status``.

- ``search_services`` (read): finds catalog services for a description of the problem; provides
  ``service.match@1`` (``{"id", "name", "team"}`` of the best match) with the catalog entry as its
  evidence (source ``catalog:<service id>``).
- ``submit_request`` (write, confirmation required): requires ``service.match@1``; opens a ticket
  ``SD-<n>`` in the ``store`` port through ``ctx.run_effect`` (exactly once per service, summary,
  urgency, user and thread); provides ``request.ticket@1``, depending on ``service.match@1``.
- ``request_status`` (read): requires ``request.ticket@1``; reads a ticket back.

Tickets live in the run's ``store`` port (a :class:`~seamkit._ports.StorePort`) under the tenant's
scope (``Scope(tenant=...)``): ``servicedesk:next_ticket`` (the counter) and
``servicedesk:ticket:<n>`` (the ticket: ``{"ticket", "service", "service_name", "team", "summary",
"urgency", "status", "requester", "created_at"}``). A ticket opened for a user is found only by that
user. Failures are results with codes: ``NO_MATCHING_SERVICE``, ``MISSING_FACT``, ``MISSING_PORT``,
``STORE_UNAVAILABLE``, ``UNKNOWN_TICKET``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from seamkit.capabilities import (
    Capability,
    CapabilityContext,
    CapabilityResult,
    Completed,
    Evidence,
    Fact,
    Failed,
    Guidance,
    fact_type,
)
from seamkit.errors import ConfigError, ConfigIssue, EffectNotApplied, StoreUnavailable
from seamkit.values import Scope, freeze

from seamkit_servicedesk.catalog import Service, bundled_catalog, load_catalog, search
from seamkit_servicedesk.config import RequestStatusConfig, SearchServicesConfig, SubmitRequestConfig

__all__ = [
    "MATCH",
    "TICKET",
    "RequestStatusInput",
    "SearchServicesInput",
    "SubmitRequestInput",
    "build_request_status",
    "build_search_services",
    "build_submit_request",
    "ticket_key",
]

MATCH = fact_type("service.match@1")
TICKET = fact_type("request.ticket@1")
STORE_PORT = "store"
COUNTER_KEY = "servicedesk:next_ticket"
PREFIX = "SD-"

_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class SearchServicesInput(BaseModel):
    """The problem to find a service for."""

    model_config = ConfigDict(extra="forbid")
    query: _Text = Field(description="The problem or request in a few words, e.g. 'laptop screen broken'")


class ServiceMatch(BaseModel):
    id: str
    name: str
    team: str


class SearchServicesOutput(BaseModel):
    matches: list[ServiceMatch]


class SubmitRequestInput(BaseModel):
    """The request to open a ticket for."""

    model_config = ConfigDict(extra="forbid")
    summary: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)] = Field(
        description="What is wrong or wanted, in one sentence")
    urgency: Literal["low", "normal", "high"] = "normal"


class TicketOutput(BaseModel):
    ticket: str
    service: str
    team: str
    summary: str
    urgency: str
    status: str


_TICKET = re.compile(r"SD-[1-9][0-9]*")


def _ticket_shape(value: str) -> str:
    if not _TICKET.fullmatch(value):
        raise ValueError("a ticket id is SD- and a number, e.g. SD-12")
    return value


def _ticket_id(value: Any) -> Any:
    # "sd-12 " is what a person (or a small model) writes for SD-12
    return value.strip().upper() if isinstance(value, str) else value


class RequestStatusInput(BaseModel):
    """The ticket to look up."""

    model_config = ConfigDict(extra="forbid")
    # the shape is checked by the validator, not a JSON Schema 'pattern': llama.cpp's grammar cannot
    # express one, so the bundled model's provider would warn about it on every request of the turn;
    # the before-validator runs first, so what a person writes ("sd-12 ") still validates
    ticket: Annotated[str, BeforeValidator(_ticket_id), AfterValidator(_ticket_shape)] = Field(
        description="The ticket id, e.g. 'SD-12'")


def _store_scope(ctx: CapabilityContext) -> Scope:
    # one ticket sequence per tenant: users and threads share the desk, not the numbers
    return Scope(tenant=ctx.run.scope.tenant)


def _ticket_store_key(number: int) -> str:
    return f"servicedesk:ticket:{number}"


def ticket_key(service_id: str, summary: str, urgency: str, user: str | None, thread: str | None) -> str:
    """The idempotency key of one request: SHA-256 (hex, 32 digits) of the canonical JSON of the
    service id, summary, urgency, and the requesting user and thread. The same request retried in a
    conversation (another attempt, another process) opens one ticket; the same words from another
    user or conversation open their own."""
    canonical = json.dumps([service_id, summary, urgency, user, thread], ensure_ascii=False, separators=(",", ":"))
    return "ticket:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def _store(ctx: CapabilityContext) -> Any:
    try:
        return ctx.port(STORE_PORT)
    except KeyError:
        return None


def _missing_port(ctx: CapabilityContext) -> Failed:
    return Failed("MISSING_PORT", f"{ctx.capability.ref} needs a {STORE_PORT!r} port (a StorePort) in the run",
                  (ctx.capability.ref, STORE_PORT))


def _ticket_evidence(ticket: dict[str, Any]) -> Evidence:
    return Evidence(source=f"servicedesk:ticket:{ticket['ticket']}", excerpt=ticket["summary"])


def _ticket_output(ticket: dict[str, Any]) -> dict[str, Any]:
    return {"ticket": ticket["ticket"], "service": ticket["service_name"], "team": ticket["team"],
            "summary": ticket["summary"], "urgency": ticket["urgency"], "status": ticket["status"]}


# Input class docstrings and field descriptions are the JSON Schema the model reads: kept short
# (the bundled model has a 2048-token context).


# -- search_services ---------------------------------------------------------------------------


def build_search_services(config: SearchServicesConfig | None = None) -> Capability:
    """The ``search_services`` capability over the bundled catalog, or ``config.catalog``
    (read and checked now: :class:`~seamkit.errors.ConfigError` naming the problem otherwise)."""
    config = config or SearchServicesConfig()
    custom: tuple[Service, ...] | None = None
    if config.catalog is not None:
        try:
            custom = load_catalog(config.catalog)
        except ValueError as exc:
            raise ConfigError([ConfigIssue(str(exc), "catalog")]) from None
    limit = config.max_matches

    async def execute(ctx: CapabilityContext, data: SearchServicesInput) -> CapabilityResult:
        services = custom if custom is not None else bundled_catalog()
        found = search(data.query, services, limit=limit)
        if not found:
            return Failed("NO_MATCHING_SERVICE",
                          f"no service in the catalog matches {data.query!r}; ask what the problem is about",
                          (data.query,))
        best = found[0]
        evidence = Evidence(source=f"catalog:{best.id}", excerpt=best.description)
        return Completed(
            output={"matches": [s.summary() for s in found]},
            facts=(Fact(MATCH, best.summary(), evidence=(evidence.id,)),),
            evidence=(evidence,),
        )

    return Capability(
        id="search_services", version=1,
        description="Find the service-desk service for a problem (IT or facilities)",
        execute=execute, input=SearchServicesInput, output=SearchServicesOutput,
        provides=(MATCH,), effect="read", confirmation="none",
        guidance=Guidance(
            when_to_use="The user describes a problem or wants something from IT or facilities.",
            when_not_to_use="The service is already found, or the user asks about an existing ticket.",
            examples=("my laptop screen is broken", "I forgot my password"),
        ),
    )


# -- submit_request ----------------------------------------------------------------------------


def build_submit_request(config: SubmitRequestConfig | None = None) -> Capability:
    """The ``submit_request`` capability (see the module doc)."""

    async def execute(ctx: CapabilityContext, data: SubmitRequestInput) -> CapabilityResult:
        fact = ctx.facts.get(str(MATCH))
        if fact is None:  # the planner defers a call without its fact; this guards a direct call
            return Failed("MISSING_FACT", f"{ctx.capability.ref} needs {MATCH}: search for the service first",
                          (ctx.capability.ref, str(MATCH)))
        store = _store(ctx)
        if store is None:
            return _missing_port(ctx)
        service = fact.value
        scope = _store_scope(ctx)
        run_scope = ctx.run.scope

        async def open_ticket() -> dict[str, Any]:
            try:
                number = await store.increment(scope, COUNTER_KEY)
            except StoreUnavailable as exc:
                # nothing was written: the ledger may run the request again
                raise EffectNotApplied("the ticket store is unavailable") from exc
            ticket = {
                "ticket": f"{PREFIX}{number}", "service": service["id"], "service_name": service["name"],
                "team": service["team"], "summary": data.summary, "urgency": data.urgency, "status": "open",
                "requester": run_scope.user, "created_at": ctx.run.clock.now().isoformat(),
            }
            await store.set(scope, _ticket_store_key(number), ticket)
            return ticket

        key = ticket_key(service["id"], data.summary, data.urgency, run_scope.user, run_scope.thread)
        try:
            ticket = await ctx.run_effect(key, open_ticket)
        except EffectNotApplied:
            return Failed("STORE_UNAVAILABLE", "the ticket store is unavailable; no ticket was opened, try again",
                          (ctx.capability.ref,))
        evidence = _ticket_evidence(ticket)
        return Completed(
            output=_ticket_output(ticket),
            facts=(Fact(TICKET, {"ticket": ticket["ticket"], "service": ticket["service"]},
                        evidence=(evidence.id,), depends_on=(MATCH,)),),
            evidence=(evidence,),
            artifacts=freeze({"ticket": ticket["ticket"]}),
        )

    return Capability(
        id="submit_request", version=1,
        description="Open a service-desk ticket for the service found",
        execute=execute, input=SubmitRequestInput, output=TicketOutput,
        requires=(MATCH,), provides=(TICKET,), effect="write", confirmation="required",
        guidance=Guidance(
            when_to_use="A service was found and the user wants a ticket opened.",
            when_not_to_use="No service found yet, or the user only asks a question.",
            examples=("yes, open a ticket", "please submit it, it is urgent"),
        ),
    )


# -- request_status ----------------------------------------------------------------------------


def build_request_status(config: RequestStatusConfig | None = None) -> Capability:
    """The ``request_status`` capability (see the module doc)."""

    async def execute(ctx: CapabilityContext, data: RequestStatusInput) -> CapabilityResult:
        store = _store(ctx)
        if store is None:
            return _missing_port(ctx)
        number = int(data.ticket.removeprefix(PREFIX))
        try:
            ticket = await store.get(_store_scope(ctx), _ticket_store_key(number))
        except StoreUnavailable:
            return Failed("STORE_UNAVAILABLE", "the ticket store is unavailable; try again", (ctx.capability.ref,))
        # another user's ticket reads as unknown: its existence is not theirs to learn
        if not isinstance(ticket, dict) or ticket.get("requester") not in (None, ctx.run.scope.user):
            return Failed("UNKNOWN_TICKET", f"there is no ticket {data.ticket}", (data.ticket,))
        evidence = _ticket_evidence(ticket)
        return Completed(output=_ticket_output(ticket), evidence=(evidence,))

    return Capability(
        id="request_status", version=1,
        description="Show the status of a service-desk ticket",
        execute=execute, input=RequestStatusInput, output=TicketOutput,
        requires=(TICKET,), effect="read", confirmation="none",
        guidance=Guidance(
            when_to_use="The user asks about a ticket that was opened.",
            when_not_to_use="No ticket was opened yet.",
            examples=("what is the status of SD-3?",),
        ),
    )
