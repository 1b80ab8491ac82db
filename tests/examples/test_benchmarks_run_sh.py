"""``bash benchmarks/run.sh SECTION``: each section runs its bench file, every bench file has a
section, and an unknown name is refused listing the sections (found after issue 19:
``run.sh startup_tools`` fell through to run.py's argparse error).

run.sh is run from a copy of the repository's ``benchmarks/`` next to a no-op ``scripts/_setup.sh``
and ``scripts/_services.sh`` and a ``.venv/bin/python`` that prints its arguments, so nothing is
installed or measured: what is checked is which file each section runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_SH = ROOT / "benchmarks" / "run.sh"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(ROOT / "benchmarks", root / "benchmarks")
    (root / "scripts").mkdir()
    (root / "scripts" / "_setup.sh").write_text('cd "$(dirname "${BASH_SOURCE[0]}")/.."\n')
    (root / "scripts" / "_services.sh").write_text("")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "python $*"\n')
    python.chmod(0o755)
    return root


def _run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(["bash", str(tree / "benchmarks" / "run.sh"), *args], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def _sections() -> list[str]:
    text = RUN_SH.read_text()
    match = re.search(r'SECTIONS="([^"]*)"', text)
    assert match, "run.sh lists its sections in SECTIONS"
    return match.group(1).split()


@pytest.mark.parametrize(("section", "bench"), [
    ("long_run", "long_run_bench.py"),
    ("startup_tools", "startup_tools_bench.py"),
    ("local_model", "local_model_bench.py"),
    ("memory", "memory_bench.py"),
    ("tokens", "tokens_bench.py"),
    ("kernel", "kernel_turns_bench.py"),
])
def test_a_section_runs_its_bench_file_with_the_options_after_it(tree: Path, section: str, bench: str) -> None:
    r = _run(tree, section, "--reps", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"python benchmarks/{bench} --reps 1"


def test_no_section_or_options_only_run_run_py(tree: Path) -> None:
    assert _run(tree).stdout.strip() == "python benchmarks/run.py"
    assert _run(tree, "--peers").stdout.strip() == "python benchmarks/run.py --peers"


@pytest.mark.parametrize("name", ["startup_tool", "long-run", "nope"])
def test_an_unknown_section_is_refused_listing_the_sections(tree: Path, name: str) -> None:
    r = _run(tree, name)
    assert r.returncode == 2 and r.stdout == ""
    assert f"benchmarks/run.sh: unknown section '{name}'; the sections are: all long_run startup_tools " \
           "local_model memory" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "usage:" not in r.stderr


def test_every_bench_file_has_a_section_named_in_the_header(tree: Path) -> None:
    header = "\n".join(line for line in RUN_SH.read_text().splitlines() if line.startswith("#"))
    ran: set[str] = set()
    for section in _sections():
        if section == "all":
            continue
        assert f"bash benchmarks/run.sh {section} " in header, f"section {section!r} is not in run.sh's header"
        r = _run(tree, section)
        assert r.returncode == 0, (section, r.stderr)
        ran.update(re.findall(r"benchmarks/(\w+\.py)", r.stdout))
    benches = {p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_")} - {"run.py"}
    assert benches - ran == set(), f"bench files without a run.sh section: {sorted(benches - ran)}"
