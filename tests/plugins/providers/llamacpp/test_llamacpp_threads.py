"""The default thread count of ``use: llamacpp`` (every usable CPU when llama.cpp's threads wait
passively, else the CPUs less the busy ones), the passive OpenMP wait policy llama_cpp is imported
with, and the ``threads`` override reaching llama.cpp. No model is loaded: ``Llama`` is replaced by
a recorder."""

from __future__ import annotations

import logging
import textwrap
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError
from seamkit.composition import build_agent, load_composition
from seamkit_llamacpp import provider as provider_module
from seamkit_llamacpp import threads as threads_module
from seamkit_llamacpp.config import LlamaCppConfig
from seamkit_llamacpp.threads import MAX_THREADS, choose_threads, cpu_quota, default_threads, warn_if_oversubscribed

TINY_GGUF = b"GGUF" + (3).to_bytes(4, "little") + bytes(16)


@pytest.mark.parametrize(
    ("usable", "load1", "online", "expected"),
    [
        (2, 0.0, 2, 2),  # idle: every CPU
        (2, 0.4, 2, 2),  # less than half a CPU busy: still every CPU
        (2, 0.6, 2, 1),  # more than half a CPU busy: leave it
        (2, 1.0, 2, 1),  # one busy process on 2 CPUs (the measurement)
        (2, 7.5, 2, 1),  # overloaded: never below 1
        (1, 0.0, 1, 1),
        (16, 0.0, 16, 16),
        (16, 1.0, 16, 15),
        (16, 3.4, 16, 13),
        (4, 8.0, 16, 2),  # 4 usable of 16: the load is assumed spread evenly, half of it busy
        (2, 1.0, 16, 2),  # one busy process somewhere on 16 CPUs hardly touches our 2
        (0, 0.0, 0, 1),  # nonsense counts still give a thread
        (2, -1.0, 2, 2),
    ],
)
def test_the_rule_leaves_the_cpus_other_work_keeps_busy(usable: int, load1: float, online: int,
                                                        expected: int) -> None:
    assert choose_threads(usable, load1, online) == expected


def test_default_threads_reads_affinity_load_and_quota(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(threads_module, "waits_passive", lambda: False)
    monkeypatch.setattr(threads_module.os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(threads_module.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(threads_module, "CGROUP_CPU_MAX", tmp_path / "absent")
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (0.0, 5.0, 5.0))
    assert default_threads() == 4  # the 1-minute figure counts, not the older ones
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (4.0, 0.0, 0.0))
    assert default_threads() == 2  # half the machine busy: half of our 4 CPUs
    quota = tmp_path / "cpu.max"
    quota.write_text("200000 100000\n")
    monkeypatch.setattr(threads_module, "cpu_quota", lambda: cpu_quota(quota))
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert default_threads() == 2  # a container limited to 2 CPUs


@pytest.mark.parametrize(("text", "expected"), [("200000 100000\n", 2), ("150000 100000", 2),
                                                ("50000 100000", 1), ("max 100000\n", None), ("", None),
                                                ("x y", None), ("100 0", None)])
def test_cgroup_quota_is_read_in_whole_cpus(tmp_path: Path, text: str, expected: int | None) -> None:
    f = tmp_path / "cpu.max"
    f.write_text(text)
    assert cpu_quota(f) == expected
    assert cpu_quota(tmp_path / "absent") is None


def test_with_passive_waits_the_default_is_every_usable_cpu_whatever_the_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(threads_module, "waits_passive", lambda: True)
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 2)
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (7.0, 7.0, 7.0))
    assert default_threads() == 2 and LlamaCppConfig().threads == 2


def test_the_config_default_follows_the_load_when_waits_spin_and_threads_overrides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(threads_module, "waits_passive", lambda: False)
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 2)
    monkeypatch.setattr(threads_module.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (0.1, 0.0, 0.0))
    assert LlamaCppConfig().threads == 2
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (1.2, 0.0, 0.0))
    assert LlamaCppConfig().threads == 1
    assert LlamaCppConfig(threads=2).threads == 2  # an explicit value is taken as is
    assert "threads" not in LlamaCppConfig().model_dump(exclude_defaults=True)


class _RecordingLlama:
    """Stands in for ``llama_cpp.llama.Llama``: records its keyword arguments."""

    calls: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        type(self).calls.append(kwargs)

    def close(self) -> None:
        pass


@pytest.fixture
def recording_llama(monkeypatch: pytest.MonkeyPatch) -> type[_RecordingLlama]:
    import llama_cpp.llama

    _RecordingLlama.calls = []
    monkeypatch.setattr(llama_cpp.llama, "Llama", _RecordingLlama)
    before = dict(provider_module._MODELS)
    yield _RecordingLlama
    provider_module._MODELS.clear()
    provider_module._MODELS.update(before)


def test_threads_from_a_yaml_composition_reach_llama(tmp_path: Path, recording_llama: type[_RecordingLlama],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 8)
    monkeypatch.setattr(threads_module, "waits_passive", lambda: True)
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "m.gguf"
    model.write_bytes(TINY_GGUF)
    for threads, expected in (("threads: 3", 3), ("", 8)):
        yaml = tmp_path / f"agent{expected}.yaml"
        yaml.write_text(textwrap.dedent(f"""\
            seamkit: 1
            agent:
              name: local
              model: {{use: llamacpp, model_path: m.gguf, n_ctx: {64 + expected}{", " + threads if threads else ""}}}
              prompt: hi
            """))
        provider = build_agent(load_composition(yaml)).model
        assert provider.config.threads == expected
        provider_module._load(provider_module.resolve_model_path(provider.config.model_path), provider.config)
        call = recording_llama.calls[-1]
        assert (call["n_threads"], call["n_threads_batch"]) == (expected, expected)


class _RecordingImporter:
    """Stands in for ``importlib`` in the provider module: records the OpenMP variables seen while
    ``llama_cpp.llama`` is imported."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str | None]] = []

    def import_module(self, name: str) -> Any:
        import os
        import sys

        self.seen.append({k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")})
        module = sys.modules[name] = types.ModuleType(name)  # not imported again for real
        return module


@pytest.mark.parametrize(
    ("env", "during", "passive"),
    [
        ({}, {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": None}, True),
        ({"OMP_WAIT_POLICY": "ACTIVE"}, {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": None}, False),
        ({"OMP_WAIT_POLICY": "passive "}, {"OMP_WAIT_POLICY": "passive ", "GOMP_SPINCOUNT": None}, True),
        ({"GOMP_SPINCOUNT": "10000"}, {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "10000"}, False),
        ({"GOMP_SPINCOUNT": "INFINITE"}, {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "INFINITE"}, False),
        # a spin count of 0 is no spinning at all: passive (libgomp's PASSIVE is spin count 0)
        ({"GOMP_SPINCOUNT": "0"}, {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "0"}, True),
        ({"GOMP_SPINCOUNT": " 0k"}, {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": " 0k"}, True),
        # libgomp takes a set spin count over the policy, which only picks the count's default
        ({"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "0"},
         {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "0"}, True),
        ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "300000"},
         {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "300000"}, False),
    ],
    ids=["default", "user-policy", "user-passive", "user-spincount", "infinite-spincount", "zero-spincount",
         "zero-k-spincount", "zero-spincount-over-active", "spincount-over-passive"],
)
def test_llama_cpp_is_imported_with_a_passive_openmp_wait_policy_unless_the_user_set_one(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], during: dict[str, str | None], passive: bool
) -> None:
    import os
    import sys

    for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    importer = _RecordingImporter()
    monkeypatch.setattr(threads_module, "importlib", importer)
    monkeypatch.setattr(threads_module._Imported, "passive", None)
    monkeypatch.delitem(sys.modules, "llama_cpp.llama")  # as in a process that has not imported it yet
    monkeypatch.delitem(sys.modules, "llama_cpp")
    assert threads_module.waits_passive() is passive  # known before the import
    module = threads_module.import_llama()
    assert module.__name__ == "llama_cpp.llama" and importer.seen == [during]
    assert {k: os.environ.get(k) for k in during} == {**dict.fromkeys(during), **env}  # restored
    assert threads_module.import_llama() is module and len(importer.seen) == 1  # imported once
    assert threads_module.waits_passive() is passive  # and after it, whatever the environment says now
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE" if passive else "PASSIVE")
    assert threads_module.waits_passive() is passive


def test_llama_cpp_imported_by_someone_else_counts_as_spinning(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setattr(threads_module._Imported, "passive", None)
    monkeypatch.setitem(sys.modules, "llama_cpp.llama", types.ModuleType("llama_cpp.llama"))
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert threads_module.waits_passive() is False


def test_threads_above_ggmls_limit_are_refused_naming_it() -> None:
    assert MAX_THREADS == 512  # GGML_MAX_N_THREADS in the ggml llama-cpp-python 0.3.36 ships
    assert LlamaCppConfig(threads=MAX_THREADS).threads == MAX_THREADS  # validation only: nothing loaded
    for bad in (MAX_THREADS + 1, 10_000):
        with pytest.raises(ValidationError) as info:
            LlamaCppConfig(threads=bad)
        message = str(info.value)
        assert "at most 512" in message and "GGML_MAX_N_THREADS" in message and str(bad) in message
    assert LlamaCppConfig.model_json_schema()["properties"]["threads"]["maximum"] == MAX_THREADS


def test_more_threads_than_usable_cpus_are_warned_about_once_per_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 2)
    monkeypatch.setattr(threads_module._Warned, "oversubscribed", False)
    caplog.set_level(logging.WARNING, logger="seamkit_llamacpp")
    assert warn_if_oversubscribed(2) is False and warn_if_oversubscribed(1) is False
    assert caplog.records == []
    assert warn_if_oversubscribed(3) is True
    assert [r.getMessage() for r in caplog.records] == [
        "llamacpp: threads=3 but this process may use 2 CPUs; more threads than CPUs slow generation down "
        "(leave threads out for the default)"
    ]
    assert warn_if_oversubscribed(8) is True and len(caplog.records) == 1  # once


def test_loading_a_model_with_too_many_threads_warns(tmp_path: Path, recording_llama: type[_RecordingLlama],
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 2)
    monkeypatch.setattr(threads_module._Warned, "oversubscribed", False)
    caplog.set_level(logging.WARNING, logger="seamkit_llamacpp")
    model = tmp_path / "m.gguf"
    model.write_bytes(TINY_GGUF)
    provider_module._load(model, LlamaCppConfig(model_path=model, threads=2))
    assert caplog.records == []
    provider_module._load(model, LlamaCppConfig(model_path=model, threads=4, n_ctx=65))
    assert recording_llama.calls[-1]["n_threads"] == 4  # warned, not changed: the user asked for it
    assert ["threads=4" in r.getMessage() for r in caplog.records] == [True]


def test_llama_cpp_package_imported_by_someone_else_is_not_imported_again_with_a_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Any module of llama_cpp loads libgomp, which reads the wait policy then: too late to set it."""
    import sys

    importer = _RecordingImporter()
    monkeypatch.setattr(threads_module, "importlib", importer)
    monkeypatch.setattr(threads_module._Imported, "passive", None)
    monkeypatch.delitem(sys.modules, "llama_cpp.llama")
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    assert "llama_cpp" in sys.modules  # e.g. llama_cpp.llama_grammar imported first
    threads_module.import_llama()
    assert importer.seen == [{"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": None}]
    assert threads_module.waits_passive() is False


FRESH_PROCESS = """
import os, sys
from seamkit_llamacpp.grammar import plan, to_gbnf
from seamkit_llamacpp.threads import waits_passive
assert to_gbnf(plan((), "none", {"type": "object", "properties": {"a": {"type": "number"}}})) is not None
assert "llama_cpp" in sys.modules and "OMP_WAIT_POLICY" not in os.environ
print(waits_passive())
"""


def test_a_grammar_built_before_the_model_loads_imports_llama_cpp_with_passive_waits() -> None:
    """The provider builds the grammar of a schema request before it loads the model; the
    converter's import of llama_cpp loaded libgomp with spinning waits while the default thread
    count had been chosen for passive ones (issue 19: schema answers 3-6x slower under load)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, env=env,
                         check=True, timeout=120)
    assert out.stdout.strip() == "True"


SERVER_PROCESS = """
import os, runpy, sys
ran = []
runpy.run_module = lambda *a, **k: ran.append(sys.argv)  # the server itself does not start
from seamkit_llamacpp import server
from seamkit_llamacpp.threads import waits_passive
server.main(["--model", "model.gguf"])
assert ran and "llama_cpp" in sys.modules and "OMP_WAIT_POLICY" not in os.environ
print(waits_passive())
"""


@pytest.mark.parametrize("repack", ["0", "1"])
def test_the_server_imports_llama_cpp_with_passive_waits(repack: str) -> None:
    """``python -m seamkit_llamacpp.server`` loaded llama_cpp (for its AMX guard) before anything
    chose the wait policy: its threads spun (issue 19, left over from the provider's fix)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["SEAMKIT_LLAMACPP_REPACK"] = repack
    out = subprocess.run([sys.executable, "-c", SERVER_PROCESS], capture_output=True, text=True, env=env,
                         check=True, timeout=120)
    assert out.stdout.strip() == "True"


def test_a_default_chosen_for_passive_waits_is_chosen_again_when_llama_cpp_came_in_spinning(
    tmp_path: Path, recording_llama: type[_RecordingLlama], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The configuration may be built before llama_cpp is imported, by someone else, with spinning
    waits: 2 spinning threads on a loaded 2-CPU machine made answers 3-6x slower, so the load rule
    applies at load time. A count the user gave is taken as is."""
    monkeypatch.setattr(threads_module, "usable_cpus", lambda: 2)
    monkeypatch.setattr(threads_module.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads_module.os, "getloadavg", lambda: (1.2, 0.0, 0.0))
    model = tmp_path / "m.gguf"
    model.write_bytes(TINY_GGUF)
    monkeypatch.setattr(threads_module, "waits_passive", lambda: True)
    default, pinned = LlamaCppConfig(model_path=model), LlamaCppConfig(model_path=model, threads=2, n_ctx=65)
    assert default.threads == pinned.threads == 2
    provider_module._load(model, default)
    assert recording_llama.calls[-1]["n_threads"] == 2  # still passive: as configured
    cfg = LlamaCppConfig(model_path=model, n_ctx=66)  # built while the waits looked passive
    monkeypatch.setattr(threads_module, "waits_passive", lambda: False)  # then llama_cpp came in spinning
    monkeypatch.setattr(provider_module, "waits_passive", lambda: False)
    provider_module._load(model, cfg)
    assert (recording_llama.calls[-1]["n_threads"], recording_llama.calls[-1]["n_threads_batch"]) == (1, 1)
    provider_module._load(model, pinned)
    assert recording_llama.calls[-1]["n_threads"] == 2
