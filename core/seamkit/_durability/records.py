"""Values a :class:`~seamkit._ports.CheckpointPort` stores and returns, and the store namespace of a
:class:`~seamkit.values.Scope`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from seamkit.values import EMPTY, FrozenDict, Scope, freeze

__all__ = [
    "RUN_STATUSES",
    "CheckpointInfo",
    "CheckpointRecord",
    "PendingWrite",
    "RunStatus",
    "StoredCheckpoint",
    "scope_namespace",
]

RunStatus = Literal["running", "suspended", "done", "failed"]
RUN_STATUSES: tuple[str, ...] = ("running", "suspended", "done", "failed")
FINISHED_STATUSES: tuple[str, ...] = ("done", "failed")


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """One version of one run, as written.

    ``version``: 1, 2, 3, ... per run. ``status``: ``running`` / ``suspended`` / ``done`` /
    ``failed``. ``state``: codec JSON text, the run's small replaceable state. ``entries``: codec
    JSON texts appended to the run's log at this version (new transcript messages). ``metadata``:
    JSON-safe ``str -> str | int | float | bool | None`` (agent name, owner, lease...).
    ``created_at``: unix seconds.
    """

    run_id: str
    version: int
    status: str
    state: str
    entries: tuple[str, ...] = ()
    parent_run_id: str | None = None
    metadata: FrozenDict = EMPTY
    created_at: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}, got {self.status!r}")
        if self.version < 1:
            raise ValueError("version must be at least 1")
        if type(self.entries) is not tuple:
            object.__setattr__(self, "entries", tuple(self.entries))
        if type(self.metadata) is not FrozenDict:
            object.__setattr__(self, "metadata", freeze(self.metadata))


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """One task's result recorded for a step: what :meth:`~seamkit._ports.CheckpointPort.put_write`
    takes, as a value (``save_many`` takes several). ``payload``: codec JSON text."""

    run_id: str
    version: int
    task_id: str
    payload: str


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    """A stored version: ``record`` plus ``log``, the run's log entries of every version up to and
    including this one, oldest first."""

    record: CheckpointRecord
    log: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """A version's header, without payloads (for listings). ``created_at`` in unix seconds."""

    run_id: str
    version: int
    status: str
    parent_run_id: str | None
    metadata: FrozenDict
    created_at: float


def scope_namespace(scope: Scope) -> str:
    """The namespace string a store uses for ``scope``: ``tenant/user/thread`` with each part
    percent-encoded (``-`` for a missing part), so distinct scopes never share a namespace."""
    parts = (scope.tenant, scope.user, scope.thread)
    return "/".join("-" if p is None else "=" + quote(p, safe="") for p in parts)
