"""The pytest side of the durability checks (see :mod:`pytest_seamkit._durable`): when
they apply, skip or fail with a reason an author can act on, and the child process in a thread."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import pytest
from seamkit.errors import StoreUnavailable

from pytest_seamkit import _durable

__all__ = [
    "DURABILITY_CHECKS",
    "DeclaredPersistence",
    "child",
    "component_or_skip",
    "kill_mid_write",
    "no_problems",
    "open_second_or_skip",
    "require_persistence",
]

#: the checks of what outlives an instance: they do not apply to a store declaring persistent=False
DURABILITY_CHECKS = frozenset({
    "test_reopen_keeps_everything",
    "test_reopen_keeps_ttls",
    "test_two_open_instances_see_each_others_writes",
    "test_two_open_instances_share_one_location",
    "test_another_process_reads_and_writes",
    "test_acknowledged_writes_survive_a_kill",
})


class DeclaredPersistence:
    """What both store suites share: a test class may say its store's ``persistent`` flag again
    (``declared_persistent``); with ``False`` the durability checks are left out when the tests
    are collected (counted in pytest's summary) instead of skipped one by one, and the suite's
    ``test_the_declared_persistence_is_the_stores`` holds the class and the store equal."""

    declared_persistent: bool | None = None

    @classmethod
    def not_applicable(cls, name: str, params: dict[str, Any]) -> str | None:
        """Why the check ``name`` does not apply given :attr:`declared_persistent`, or ``None``
        (it applies, or nothing is said: decided at run time)."""
        if cls.declared_persistent is False and name in DURABILITY_CHECKS:
            return "the store declares persistent=False: nothing outlives the instance to check"
        return None

    def check_declaration(self, backend: Any) -> None:
        """Fail when :attr:`declared_persistent` differs from ``backend``'s flag."""
        said = type(self).declared_persistent
        if said is not None:
            actual = _durable.declared_persistent(backend)
            assert said == actual, (
                f"the test class says declared_persistent={said} but {type(backend).__name__} declares "
                f"persistent={actual}")


def require_persistence(backend: Any, opener: Any, fixture: str) -> None:
    """Skip when ``backend`` declares ``persistent = False``; fail when it is persistent (declared,
    or undeclared: the default) but the test class gives no ``fixture`` to open it again."""
    try:
        persistent = _durable.declared_persistent(backend)
    except TypeError as exc:
        pytest.fail(str(exc), pytrace=False)
    name = type(backend).__name__
    if not persistent:
        pytest.skip(f"{name} declares persistent=False: nothing outlives the instance to check")
    if opener is None:
        pytest.fail(
            f"{name} is persistent (it declares persistent=True, or declares nothing, which means True) but the "
            f"test class has no `{fixture}` fixture to open another instance on the same location: add one "
            f"(see pytest_seamkit.conformance), or declare `persistent = False` if nothing outlives the instance",
            pytrace=False,
        )


def component_or_skip(component: Any, fixture: str) -> Sequence[Any]:
    """The ``(name, config)`` the child builds; skip (with the reason) when the class gives none."""
    if component is None:
        pytest.skip(f"no `{fixture}` fixture: the checks in another process need the component as YAML names "
                    "it, (registered name or 'module:attr', config mapping)")
    name, config = component
    if not isinstance(name, str) or not isinstance(config, Mapping):
        pytest.fail(f"`{fixture}` must be (name: str, config: mapping), got {component!r}", pytrace=False)
    return (name, dict(config))


async def child(request: Mapping[str, Any]) -> _durable.ChildResult:
    """Run the child process (in a thread, so the event loop keeps running)."""
    return await asyncio.to_thread(_durable.run_child, request)


Check = Callable[[Sequence[_durable.RoundResult]], Awaitable[Sequence[str]]]


async def kill_mid_write(request: Mapping[str, Any], after_each: Check, after_all: Check) -> None:
    """Kill a writer of ``request`` (``kind``, ``component``) in the middle of a write, round
    after round: first at each file-system step of one write in turn (up to
    ``MAX_STEP_ROUNDS``; none for a write with no such step), then ``TIMED_ROUNDS`` times at a
    random moment of a write. After each round ``after_each`` checks the rounds so far (the
    last one is the round just killed), after the last ``after_all``; fail listing what they
    found. A write with more steps than ``MAX_STEP_ROUNDS`` is killed at that many of its steps,
    spread evenly from a random first one. ``SEAMKIT_CRASH_SEED`` repeats a run's random choices
    (a failure names its seed)."""
    if not hasattr(os, "fork"):
        pytest.skip("the kill check forks its writers (POSIX only)")
    seed = int(os.environ.get("SEAMKIT_CRASH_SEED") or random.randrange(2**32))
    crash = await asyncio.to_thread(_durable.CrashChild, request, random.Random(seed))
    rounds: list[_durable.RoundResult] = []
    try:
        first = await asyncio.to_thread(crash.round, 1, 1)  # also counts a write's steps
        rounds.append(first)
        no_problems(await _checked(after_each, rounds), _when(first, seed))
        for step in _durable.kill_steps(first.steps, random.Random(seed)):
            rounds.append(await asyncio.to_thread(crash.round, len(rounds) + 1, step))
            no_problems(await _checked(after_each, rounds), _when(rounds[-1], seed))
        for _ in range(_durable.TIMED_ROUNDS):
            rounds.append(await asyncio.to_thread(crash.round, len(rounds) + 1, 0))
            no_problems(await _checked(after_each, rounds), _when(rounds[-1], seed))
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    finally:
        await asyncio.to_thread(crash.close)
    no_problems(await _checked(after_all, rounds),
                f"after {len(rounds)} writers were killed in the middle of a write (SEAMKIT_CRASH_SEED={seed})")


async def _checked(check: Check, rounds: Sequence[_durable.RoundResult]) -> Sequence[str]:
    """``check``'s problems; what it raised (opening the store, reading it) is one problem too."""
    try:
        return await check(rounds)
    except Exception as exc:  # a store the kill left unreadable: say so, with the kill, not a traceback
        return [f"opening or reading the store again raised {type(exc).__name__}: {exc}"]


def _when(r: _durable.RoundResult, seed: int) -> str:
    return (f"after SIGKILL of a writer in the middle of a write (round {r.plan.round}: {r.how}, after "
            f"{r.acked} acknowledged writes; SEAMKIT_CRASH_SEED={seed})")


def no_problems(problems: Sequence[str], when: str) -> None:
    """Fail listing ``problems`` (what was lost or changed) ``when`` (``"after reopening"``)."""
    if problems:
        shown = "\n  ".join(problems[:20]) + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else "")
        pytest.fail(f"{when}, {len(problems)} problem(s):\n  {shown}", pytrace=False)


async def open_second_or_skip(opener: Any, probe: Callable[[Any], Awaitable[Any]]) -> Any:
    """A second instance on the location while the first is open, used once by ``probe``; skip
    when the backend refuses it with StoreUnavailable (a store that holds its location
    exclusively: honest, unlike one that shares it and loses writes)."""
    other: Any = None
    try:
        other = await _durable.open_with(opener)
        await probe(other)
    except StoreUnavailable as exc:
        if other is not None:
            await _durable.aclose(other)
        pytest.skip(f"the backend refuses a second instance while one is open (StoreUnavailable: {exc})")
    return other
