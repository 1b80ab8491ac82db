"""What the kill check asks of a store after a writer was killed in the middle of a write
(pytest_seamkit._durable): which steps of a write it kills at, and which states of the killed
write it accepts (absent, or a prefix of its calls, each whole) and which it reports (an
acknowledged write lost, a torn value, a later call without an earlier one, a write never made)."""

from __future__ import annotations

import itertools
import random

import pytest
from pytest_seamkit import _durable
from pytest_seamkit._durable import KillPlan, RoundResult, S
from seamkit.testing._memory_store import MemoryStore


def _round(n: int, acked: int) -> RoundResult:
    return RoundResult(KillPlan(n, acked, 0, 0.5), acked, "killed for the test", 0)


@pytest.mark.parametrize("steps", [0, 1, 2, 7, _durable.MAX_STEP_ROUNDS])
def test_every_step_of_a_short_write_is_killed_at(steps: int) -> None:
    assert _durable.kill_steps(steps, random.Random(1)) == list(range(2, steps + 1))


@pytest.mark.parametrize("seed", range(5))
def test_a_long_write_is_killed_at_steps_spread_over_all_of_it(seed: int) -> None:
    steps = 3 * _durable.MAX_STEP_ROUNDS + 1
    chosen = _durable.kill_steps(steps, random.Random(seed))
    assert len(chosen) == _durable.MAX_STEP_ROUNDS - 1
    assert chosen == sorted(set(chosen)) and 2 <= chosen[0] <= 5 and steps - 3 <= chosen[-1] <= steps
    assert max(b - a for a, b in itertools.pairwise(chosen)) <= 4


async def _written(rounds: list[RoundResult], *, killed_calls: int = 0) -> MemoryStore:
    """A store holding every acknowledged write of ``rounds`` and the first ``killed_calls`` calls
    of the last round's killed write."""
    store = MemoryStore()
    for r in rounds:
        for n in range(1, r.acked + 1):
            await _durable._crash_write(store, "store", r.plan.round, n)
    last = rounds[-1]
    n = last.acked + 1
    calls = [lambda: store.set(S, _durable.crash_key(last.plan.round, n), n),
             lambda: store.append(S, "crash/log", f"{last.plan.round}/{n}"),
             lambda: store.increment(S, "crash/count")]
    for call in calls[:killed_calls]:
        await call()
    return store


@pytest.mark.parametrize("killed_calls", [0, 1, 2, 3])
async def test_a_killed_write_absent_or_a_prefix_of_its_calls_passes(killed_calls: int) -> None:
    rounds = [_round(1, 3), _round(2, 2)]
    store = await _written(rounds, killed_calls=killed_calls)
    assert await _durable.check_crash_store(store, rounds, only_last=False) == []


async def test_a_lost_acknowledged_write_is_reported() -> None:
    rounds = [_round(1, 3), _round(2, 2)]
    store = await _written(rounds)
    await store.delete(S, _durable.crash_key(1, 2))
    problems = await _durable.check_crash_store(store, rounds, only_last=False)
    assert problems == ["round 1 (killed for the test, 3 acknowledged): acknowledged set of crash/1/2 reads back "
                        "nothing"]
    # the per-round check reads only the last round's keys
    assert await _durable.check_crash_store(store, rounds, only_last=True) == []


async def test_a_lost_append_of_an_earlier_round_is_reported_by_the_per_round_check() -> None:
    rounds = [_round(1, 3), _round(2, 2)]
    store = await _written(rounds)
    await store.delete(S, "crash/log")
    problems = await _durable.check_crash_store(store, rounds, only_last=True)
    assert len(problems) == 1 and "acknowledged appends ['1/1']..['1/3'] to crash/log" in problems[0]


async def test_a_torn_killed_value_is_reported() -> None:
    rounds = [_round(1, 2)]
    store = await _written(rounds)
    await store.set(S, _durable.crash_key(1, 3), "3\x00")
    problems = await _durable.check_crash_store(store, rounds, only_last=True)
    assert problems == ["round 1 (killed for the test, 2 acknowledged): the killed set of crash/1/3 is half "
                        "there: '3\\x00'"]


async def test_a_later_call_without_an_earlier_one_is_reported() -> None:
    rounds = [_round(1, 2)]
    store = await _written(rounds)
    await store.append(S, "crash/log", "1/3")  # without its set
    problems = await _durable.check_crash_store(store, rounds, only_last=True)
    assert problems == ["round 1 (killed for the test, 2 acknowledged): the killed write's append is there but "
                        "its earlier set is not"]


async def test_a_counter_off_by_more_than_the_killed_writes_is_reported() -> None:
    rounds = [_round(1, 2)]
    store = await _written(rounds, killed_calls=1)
    await store.increment(S, "crash/count")  # the killed write's append is not there: neither may this be
    problems = await _durable.check_crash_store(store, rounds, only_last=True)
    assert len(problems) == 1 and "reads back 3" in problems[0]


async def test_a_write_never_made_is_reported() -> None:
    rounds = [_round(1, 2)]
    store = await _written(rounds)
    await store.set(S, _durable.crash_key(1, 4), 4)
    await store.append(S, "crash/log", "1/9")
    problems = await _durable.check_crash_store(store, rounds, only_last=True)
    assert any("crash/1/4 was never written" in p for p in problems)
    assert any("crash/log holds items never appended: ['1/9']" in p for p in problems)


async def _saved(r: RoundResult, *, killed_save: bool, killed_write: bool) -> MemoryStore:
    cp = MemoryStore()
    for n in range(1, r.acked + 1):
        await _durable._crash_write(cp, "checkpoints", r.plan.round, n)
    n = r.acked + 1
    if killed_save:
        await cp.save(_durable.crash_record(r.plan.round, n), expected_version=n - 1)
    if killed_write:
        await cp.put_write(_durable.crash_run(r.plan.round), n, f"call-{n}", _durable.crash_payload(r.plan.round, n))
    return cp


@pytest.mark.parametrize(("killed_save", "killed_write"), [(False, False), (True, False), (True, True)])
async def test_a_killed_save_absent_or_whole_passes(killed_save: bool, killed_write: bool) -> None:
    r = _round(1, 3)
    cp = await _saved(r, killed_save=killed_save, killed_write=killed_write)
    assert await _durable.check_crash_checkpoints(cp, r) == []


async def test_a_pending_write_without_its_save_is_reported() -> None:
    r = _round(1, 3)
    cp = await _saved(r, killed_save=False, killed_write=True)
    problems = await _durable.check_crash_checkpoints(cp, r)
    assert len(problems) == 1 and "the killed write's pending write" in problems[0]


async def test_a_lost_acknowledged_save_is_reported() -> None:
    r = _round(1, 3)
    cp = await _saved(r, killed_save=False, killed_write=False)
    await cp.delete_run(_durable.crash_run(1))
    problems = await _durable.check_crash_checkpoints(cp, r)
    assert "latest('crash-1') is version 0, but version 3 was the last acknowledged" in problems[0]
    assert len(problems) == 7  # the latest version, three versions, three pending writes
