"""Human approval of tool calls: policies, pending calls and decisions.

Decisions cross process boundaries (a queued continuation's message, a web form) as plain data,
one JSON object per call id::

    {"call_0_0": {"approved": true, "arguments": null, "reason": null},
     "call_0_1": {"approved": false, "arguments": null, "reason": "not today"}}

:func:`parse_decision_flags` makes that from the command line's ``--approve`` / ``--reject`` /
``--edit`` flags and :func:`decisions_from_data` turns it into :class:`Decision` values for
:meth:`~seamkit._agent.agent.Agent.resume`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from seamkit.values import FrozenDict, freeze

__all__ = [
    "APPROVAL_POLICIES",
    "ApprovalPolicy",
    "Decision",
    "DecisionData",
    "PendingApproval",
    "approve",
    "decision_data",
    "decisions_from_data",
    "parse_decision_flags",
    "reject",
]

ApprovalPolicy = Literal["never", "every_call", "once_per_run", "once_per_thread"]
APPROVAL_POLICIES: tuple[str, ...] = ("never", "every_call", "once_per_run", "once_per_thread")


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call waiting for a person: ``call_id``, ``tool`` (name), ``arguments`` as the model
    wrote them, and the ``policy`` that asked for approval."""

    call_id: str
    tool: str
    arguments: FrozenDict
    policy: str = "every_call"

    def __post_init__(self) -> None:
        if type(self.arguments) is not FrozenDict:
            object.__setattr__(self, "arguments", freeze(self.arguments))


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's decision on one pending call. ``approved``; ``arguments``: edited arguments to run
    the call with instead of the model's (``None``: unchanged); ``reason``: shown to the model on a
    rejection."""

    approved: bool
    arguments: FrozenDict | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.arguments is not None and type(self.arguments) is not FrozenDict:
            object.__setattr__(self, "arguments", freeze(self.arguments))
        if self.arguments is not None and not self.approved:
            raise ValueError("a rejection cannot carry edited arguments")


def approve(arguments: Mapping[str, Any] | None = None) -> Decision:
    """Approve a call, optionally with edited ``arguments`` (validated against the tool's schema
    when the run resumes)."""
    return Decision(True, freeze(arguments) if arguments is not None else None)


def reject(reason: str | None = None) -> Decision:
    """Reject a call; the model sees a tool result saying so (with ``reason``)."""
    return Decision(False, None, reason)


#: One call's decision as plain (JSON) data: ``{"approved": bool, "arguments": {...} | None,
#: "reason": str | None}`` (``arguments``: edited arguments of an approval; ``reason``: of a
#: rejection).
DecisionData = dict[str, Any]


def parse_decision_flags(
    approvals: Iterable[str] = (), rejections: Iterable[str] = (), edits: Iterable[str] = ()
) -> dict[str, DecisionData]:
    """Decisions from command-line flags, as plain data keyed by call id (see the module doc).

    :param approvals: ``CALL_ID`` values of ``--approve``.
    :param rejections: ``CALL_ID`` or ``CALL_ID=REASON`` values of ``--reject``.
    :param edits: ``CALL_ID=JSON`` values of ``--edit`` (a JSON object: the arguments to run the
        call with instead; an approval).
    :returns: call id -> ``{"approved", "arguments", "reason"}``, in flag order (approvals,
        rejections, edits); empty when no flag was given.
    :raises ValueError: a flag without a call id, a call with more than one decision, an edit that
        is not ``CALL_ID=JSON``, not JSON or not a JSON object; the message names the flag and is
        meant to be shown as is. (The arguments are checked against the tool's schema only when
        the pending call is known: :meth:`~seamkit._agent.agent.Agent.check_decisions`.)
    """
    out: dict[str, DecisionData] = {}

    def put(call_id: str, decision: DecisionData, flag: str) -> None:
        if not call_id:
            raise ValueError(f"{flag} needs a tool call id")
        if call_id in out:
            raise ValueError(f"call {call_id} has more than one decision")
        out[call_id] = decision

    for call_id in approvals:
        put(call_id, {"approved": True, "arguments": None, "reason": None}, "--approve")
    for item in rejections:
        call_id, sep, reason = item.partition("=")
        put(call_id, {"approved": False, "arguments": None, "reason": reason if sep else None}, "--reject")
    for item in edits:
        call_id, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"--edit {item}: write CALL_ID='{{...json arguments...}}'")
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--edit {call_id}: the arguments are not JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(arguments, dict):
            raise ValueError(f"--edit {call_id}: the arguments must be a JSON object")
        put(call_id, {"approved": True, "arguments": arguments, "reason": None}, "--edit")
    return out


def decisions_from_data(data: Mapping[str, Mapping[str, Any]]) -> dict[str, Decision]:
    """:class:`Decision` values from plain decision data (see the module doc; what
    :func:`parse_decision_flags` returns): ``approved`` true -> :func:`approve` with its
    ``arguments``, else :func:`reject` with its ``reason``."""
    out: dict[str, Decision] = {}
    for call_id, d in data.items():
        if d.get("approved"):
            arguments = d.get("arguments")
            out[call_id] = approve(arguments if isinstance(arguments, Mapping) else None)
        else:
            reason = d.get("reason")
            out[call_id] = reject(str(reason) if reason is not None else None)
    return out


def decision_data(decisions: Mapping[str, Decision]) -> dict[str, DecisionData]:
    """Plain decision data (see the module doc) from :class:`Decision` values: the inverse of
    :func:`decisions_from_data` (edited arguments thawed to plain dicts and lists)."""
    from seamkit.values import thaw

    return {call_id: {"approved": d.approved, "arguments": thaw(d.arguments) if d.arguments is not None else None,
                      "reason": d.reason}
            for call_id, d in decisions.items()}
