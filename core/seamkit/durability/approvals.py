"""Human approval of tool calls: policies, pending calls and decisions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from seamkit.values import FrozenDict, freeze

__all__ = ["APPROVAL_POLICIES", "ApprovalPolicy", "Decision", "PendingApproval", "approve", "reject"]

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


