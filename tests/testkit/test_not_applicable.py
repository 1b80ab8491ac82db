"""Conformance checks that do not apply to a component: left out at collection when its test class
declares what the component declares (counted in the summary, never skipped one by one), skipped
with the reason when it declares nothing (a third party's default), and a class declaring what the
component does not declare fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORE_SUITE = HERE.parent / "core" / "test_core_provider_conformance.py"

MODULE = '''
import pytest
from seamkit.plugin import PROVIDER_FEATURES
from test_core_provider_conformance import PARALLEL_IDS, REQUEST_FIELDS, TOOL_FIELDS, DeltaModel
from pytest_seamkit.conformance import ProviderConformance


class TestDeclared(ProviderConformance):
    declared_features = DECLARED
    sent_fields = REQUEST_FIELDS
    tool_fields = TOOL_FIELDS
    parallel_call_ids = PARALLEL_IDS
    filter_finish = "content_filter"
    reasoning_text = "1001 = 7 * 11 * 13"

    @pytest.fixture
    def make_provider(self, recorder):
        return lambda scenario: DeltaModel(scenario, recorder=recorder, features=PROVIDER_FEATURES - {"images"})
'''


def _run(tmp_path: Path, declared: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_declared.py").write_text(MODULE.replace("DECLARED", declared))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CORE_SUITE.parent), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_declared_features_leave_the_checks_out_instead_of_skipping(tmp_path: Path) -> None:
    proc = _run(tmp_path, 'PROVIDER_FEATURES - {"images"}')
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "skipped" not in proc.stdout
    # left out: the two image checks, and the refusal checks of the three features it declares
    assert "5 deselected" in proc.stdout
    assert "TestDeclared: the provider does not declare 'images'" in proc.stdout
    assert "seamkit conformance checks left out as not applicable" in proc.stdout


def test_nothing_declared_on_the_class_skips_with_the_reason(tmp_path: Path) -> None:
    proc = _run(tmp_path, "None")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "deselected" not in proc.stdout
    assert "the provider does not declare the feature(s) images" in proc.stdout


def test_a_class_declaring_what_the_provider_does_not_fails(tmp_path: Path) -> None:
    proc = _run(tmp_path, "PROVIDER_FEATURES")
    assert proc.returncode == 1
    assert "1 failed" in proc.stdout
    assert "FAILED test_declared.py::TestDeclared::test_the_declared_features_are_the_providers" in proc.stdout


STORE_MODULE = '''
import pytest_asyncio
from pytest_seamkit.conformance import StoreConformance
from seamkit.testing import MemoryStore


class TestSaid(StoreConformance):
    declared_persistent = DECLARED

    @pytest_asyncio.fixture
    async def store(self):
        backend = MemoryStore()
        yield backend
        await backend.aclose()
'''


def _run_store(tmp_path: Path, declared: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_said.py").write_text(STORE_MODULE.replace("DECLARED", declared))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", str(tmp_path),
                           "-k", "reopen or process or kill or two_open or declared"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_a_store_said_not_persistent_leaves_the_durability_checks_out(tmp_path: Path) -> None:
    proc = _run_store(tmp_path, "False")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "skipped" not in proc.stdout
    assert "TestSaid: the store declares persistent=False" in proc.stdout


def test_a_store_class_saying_persistent_for_a_memory_store_fails(tmp_path: Path) -> None:
    proc = _run_store(tmp_path, "True")
    failed = "FAILED test_said.py::TestSaid::test_the_declared_persistence_is_the_stores"
    assert failed in proc.stdout, proc.stdout[-3000:]


def test_an_api_giving_calls_no_ids_needs_no_parallel_call_ids(tmp_path: Path) -> None:
    """Ollama's /api/chat gives tool calls no ids (a result names its tool): a provider declaring
    parallel calls but not ``tool_call_ids`` is not asked which id each parallel call carries (an
    outside newcomer had to invent ids in their recording to pass)."""
    without = 'PROVIDER_FEATURES - {"images", "tool_call_ids"}'
    module = (MODULE.replace("DECLARED", without)
              .replace("parallel_call_ids = PARALLEL_IDS", "parallel_call_ids = None")
              .replace('features=PROVIDER_FEATURES - {"images"}', f"features={without}"))
    (tmp_path / "test_declared.py").write_text(module)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CORE_SUITE.parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", str(tmp_path),
                           "-k", "parallel"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "TestDeclared: the provider does not declare 'tool_call_ids'" in proc.stdout
    assert "parallel_call_ids" not in proc.stdout
