"""The store and checkpoint conformance suites catch broken backends: each mutant in
store_mutants.py is run through the suites in one pytest subprocess, and exactly the checks that
should catch it fail (the correct controls, a pickle-file store and SQLite, pass everything)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from seamkit._plugins.ports_check import port_problems
from seamkit._ports import CheckpointPort, StorePort
from seamkit.testing._memory_store import MemoryStore

HERE = Path(__file__).parent
ROOT = HERE.parent.parent

TWO_OPEN_STORE = "test_two_open_instances_see_each_others_writes"
TWO_OPEN_CHECKPOINTS = "test_two_open_instances_share_one_location"
DURABLE_STORE = {
    "test_reopen_keeps_everything",
    "test_reopen_keeps_ttls",
    TWO_OPEN_STORE,
    "test_another_process_reads_and_writes",
    "test_acknowledged_writes_survive_a_kill",
}
DURABLE_CHECKPOINTS = DURABLE_STORE - {"test_reopen_keeps_ttls", TWO_OPEN_STORE} | {TWO_OPEN_CHECKPOINTS}
LOOKALIKES = "test_keys_differing_only_in_case_length_spaces_or_normalisation_are_distinct"
REOPEN = {"test_reopen_keeps_everything", "test_reopen_keeps_ttls"}
OTHER_PROCESS = {"test_another_process_reads_and_writes", "test_acknowledged_writes_survive_a_kill"}
KILL = {"test_acknowledged_writes_survive_a_kill"}

# Only what tells the mutants apart is run (a child process costs about a second): the durability
# checks for the durability mutants (some without their child processes), the whole
# store suite for the lossy one, the checks without sleeps for the key, scope and counter ones,
# the expiry checks for the prune ones, the listing checks for the tie-order one.
SELECT = (
    "((Lossy or reopen or process or kill or two_open or is_a)"
    " and not ((Amnesiac or SingleInstance or RelativeTtl or Exclusive) and (process or kill)))"
    " or ((KeysStore or JoinedScopes or FloatCounters) and not (ttl or expir or prune or get_or_set))"
    " or ((PruneDeletes or NativeExpiry) and (ttl or expir or prune))"
    " or (TiesByRunId and list_runs)"
    " or (CounterOrdered and (reopen or two_open or append))"
)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """class name -> test name (without parameters) -> "passed" / "failed" / "skipped" / "error"."""
    out = tmp_path_factory.mktemp("mutants")
    report = out / "report.xml"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *(p for p in sys.path if p)])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         str(HERE / "store_mutants.py"), "-k", SELECT, f"--junitxml={report}", f"--basetemp={out / 'tmp'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    found: dict[str, dict[str, str]] = {"_messages": {}}
    for case in ET.parse(report).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        name = case.get("name", "").split("[", 1)[0]
        state = "passed"
        for child, word in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
            if (node := case.find(child)) is not None:
                state = word
                found["_messages"][f"{cls}::{name}"] = (node.get("message") or "") + (node.text or "")
        before = found.setdefault(cls, {}).get(name)
        found[cls][name] = state if before in (None, "passed") else before  # a failing parameter wins
    return found


def messages(outcomes: dict[str, dict[str, str]], cls: str, name: str) -> str:
    """The failure or skip text of one test."""
    return outcomes["_messages"].get(f"{cls}::{name}", "")


def _failed(outcomes: dict[str, dict[str, str]], cls: str) -> set[str]:
    assert cls in outcomes, f"{cls} did not run: {sorted(outcomes)}"
    assert "error" not in outcomes[cls].values(), outcomes[cls]
    return {name for name, state in outcomes[cls].items() if state == "failed"}


@pytest.mark.parametrize("cls", ["TestFileStore", "TestFileCheckpoints", "TestSqliteStore", "TestSqliteCheckpoints"])
def test_correct_persistent_stores_pass_every_durability_check(outcomes: dict[str, dict[str, str]], cls: str) -> None:
    assert _failed(outcomes, cls) == set()
    want = DURABLE_STORE if cls.endswith("Store") else DURABLE_CHECKPOINTS
    assert {n for n, s in outcomes[cls].items() if s == "passed"} >= want


def test_an_in_memory_store_claiming_persistence_fails_the_reopen_checks(outcomes: dict[str, dict[str, str]]) -> None:
    assert _failed(outcomes, "TestAmnesiacStore") == REOPEN | {TWO_OPEN_STORE}
    assert _failed(outcomes, "TestAmnesiacCheckpoints") == {"test_reopen_keeps_everything", TWO_OPEN_CHECKPOINTS}


def test_a_process_global_store_passes_reopening_but_fails_in_another_process(
    outcomes: dict[str, dict[str, str]],
) -> None:
    assert _failed(outcomes, "TestProcessGlobalStore") == OTHER_PROCESS


def test_a_store_that_writes_only_on_close_fails_the_kill_and_two_instance_checks(
    outcomes: dict[str, dict[str, str]],
) -> None:
    assert _failed(outcomes, "TestNeverFlushedStore") == KILL | {TWO_OPEN_STORE}
    assert _failed(outcomes, "TestNeverFlushedCheckpoints") == KILL | {TWO_OPEN_CHECKPOINTS}


def test_a_store_misordering_a_list_appended_after_a_reopen_fails_the_reopen_check(
    outcomes: dict[str, dict[str, str]],
) -> None:
    assert _failed(outcomes, "TestCounterOrderedStore") == {"test_reopen_keeps_everything", TWO_OPEN_STORE} | KILL
    assert "in the order appended" in messages(outcomes, "TestCounterOrderedStore", "test_reopen_keeps_everything")


def test_a_store_a_kill_in_the_middle_of_a_write_corrupts_fails_the_kill_check(
    outcomes: dict[str, dict[str, str]],
) -> None:
    """dbm.dumb without crash protection: every check passes but the kill, which stops a writer at
    each file-system step of a write in turn, so it lands between dbm.dumb's in-place value write
    and its index rewrite (the old check, a kill after 20 acknowledgements, passed it)."""
    for cls in ("TestNaiveDbmStore", "TestNaiveDbmCheckpoints"):
        assert _failed(outcomes, cls) == KILL
        said = messages(outcomes, cls, "test_acknowledged_writes_survive_a_kill")
        assert "in the middle of a write" in said and "killed just before step" in said, said


def test_a_checkpoint_store_losing_pending_writes_fails_every_durability_check(
    outcomes: dict[str, dict[str, str]],
) -> None:
    assert _failed(outcomes, "TestForgetfulCheckpoints") == DURABLE_CHECKPOINTS


def test_a_store_losing_writes_fails_ordinary_checks_and_skips_durability(
    outcomes: dict[str, dict[str, str]],
) -> None:
    assert _failed(outcomes, "TestLossyStore") == {
        "test_scopes_are_isolated",
        "test_arbitrary_unicode_keys",
        LOOKALIKES,
        "test_ttl_expiry_and_prune",
        "test_list_negative_indices_follow_python_slicing",
        "test_concurrent_appends_lose_nothing",
    }
    assert {n for n, s in outcomes["TestLossyStore"].items() if s == "skipped"} == DURABLE_STORE


def test_a_persistent_store_without_open_store_fails_with_guidance(outcomes: dict[str, dict[str, str]]) -> None:
    assert _failed(outcomes, "TestNoOpenerStore") == DURABLE_STORE
    assert "no `open_store` fixture" in messages(outcomes, "TestNoOpenerStore", "test_reopen_keeps_everything")
    assert "declare `persistent = False`" in messages(outcomes, "TestNoOpenerStore", "test_reopen_keeps_everything")


def test_a_store_reading_its_file_once_fails_only_the_two_instance_checks(
    outcomes: dict[str, dict[str, str]],
) -> None:
    """The first example store of stores.md: it passes reopening, another process and a kill,
    but two instances open at once both win a save and never see each other's writes."""
    assert _failed(outcomes, "TestSingleInstanceStore") == {TWO_OPEN_STORE}
    assert _failed(outcomes, "TestSingleInstanceCheckpoints") == {TWO_OPEN_CHECKPOINTS}
    assert "CheckpointConflict" in messages(outcomes, "TestSingleInstanceCheckpoints", TWO_OPEN_CHECKPOINTS)


def test_a_store_refusing_a_second_open_instance_skips_the_two_instance_checks(
    outcomes: dict[str, dict[str, str]],
) -> None:
    for cls, name in (("TestExclusiveStore", TWO_OPEN_STORE), ("TestExclusiveCheckpoints", TWO_OPEN_CHECKPOINTS)):
        assert _failed(outcomes, cls) == set()
        assert outcomes[cls][name] == "skipped"
        assert "refuses a second instance" in messages(outcomes, cls, name)
        assert {n for n, s in outcomes[cls].items() if s == "passed"} >= (
            REOPEN if cls.endswith("Store") else {"test_reopen_keeps_everything"}
        )


def test_a_store_mangling_keys_on_disk_fails_when_the_file_is_read_again(outcomes: dict[str, dict[str, str]]) -> None:
    """Non-ASCII keys written as '?' while the live instance reads its memory: only the checks that
    read the file again (a reopen, another process) see it, through the data set's Unicode keys."""
    assert _failed(outcomes, "TestManglingDiskStore") == {
        "test_reopen_keeps_everything",
        "test_another_process_reads_and_writes",
    }
    assert "ключ" in messages(outcomes, "TestManglingDiskStore", "test_reopen_keeps_everything")


def test_a_ttl_restarted_on_every_reopen_fails_the_reopen_ttl_check(outcomes: dict[str, dict[str, str]]) -> None:
    assert _failed(outcomes, "TestRelativeTtlStore") == {"test_reopen_keeps_ttls"}
    assert "restarted" in messages(outcomes, "TestRelativeTtlStore", "test_reopen_keeps_ttls")


@pytest.mark.parametrize(
    "cls", ["TestCaseInsensitiveKeysStore", "TestTruncatedKeysStore", "TestTrailingSpaceKeysStore",
            "TestNormalisedKeysStore"],
)
def test_a_store_merging_lookalike_keys_fails_the_lookalike_check(
    outcomes: dict[str, dict[str, str]], cls: str,
) -> None:
    assert _failed(outcomes, cls) == {LOOKALIKES}
    assert "were merged" in messages(outcomes, cls, LOOKALIKES)


def test_a_store_joining_scope_parts_fails_the_scope_check(outcomes: dict[str, dict[str, str]]) -> None:
    assert _failed(outcomes, "TestJoinedScopesStore") == {"test_scopes_are_isolated"}
    assert "read another scope's value" in messages(outcomes, "TestJoinedScopesStore", "test_scopes_are_isolated")


def test_a_prune_deleting_live_lists_fails_the_prune_check(outcomes: dict[str, dict[str, str]]) -> None:
    assert _failed(outcomes, "TestPruneDeletesListsStore") == {"test_ttl_expiry_and_prune"}
    assert "deleted or changed live keys" in messages(outcomes, "TestPruneDeletesListsStore",
                                                      "test_ttl_expiry_and_prune")


def test_float_counters_fail_the_exact_increment_check(outcomes: dict[str, dict[str, str]]) -> None:
    assert _failed(outcomes, "TestFloatCountersStore") == {"test_increment_is_exact_beyond_float_precision"}


def test_a_backend_expiring_keys_by_itself_passes_the_expiry_checks(outcomes: dict[str, dict[str, str]]) -> None:
    """prune() returning 0 because the backend already removed the expired keys is correct."""
    assert _failed(outcomes, "TestNativeExpiryStore") == set()
    assert outcomes["TestNativeExpiryStore"]["test_ttl_expiry_and_prune"] == "passed"


def test_a_tie_order_by_run_id_fails_the_tie_check(outcomes: dict[str, dict[str, str]]) -> None:
    assert _failed(outcomes, "TestTiesByRunIdCheckpoints") == {"test_list_runs_ties_list_the_later_save_first"}


def test_without_store_component_the_other_process_checks_are_skipped(outcomes: dict[str, dict[str, str]]) -> None:
    assert _failed(outcomes, "TestNoComponentStore") == set()
    assert {n for n, s in outcomes["TestNoComponentStore"].items() if s == "skipped"} == OTHER_PROCESS
    skipped = messages(outcomes, "TestNoComponentStore", "test_acknowledged_writes_survive_a_kill")
    assert "no `store_component` fixture" in skipped


def test_the_persistent_flag_is_optional_for_the_ports() -> None:
    """A store written before the flag existed still satisfies both ports (the flag is not a
    protocol member, so neither isinstance nor the registry's port check asks for it)."""
    members = {k: v for k, v in vars(MemoryStore).items() if k == "__init__" or not k.startswith("__")}
    members.pop("persistent")
    undeclared = type("Undeclared", (), members)()
    assert not hasattr(undeclared, "persistent")
    assert isinstance(undeclared, StorePort) and isinstance(undeclared, CheckpointPort)
    assert port_problems(undeclared, StorePort) == [] and port_problems(undeclared, CheckpointPort) == []
