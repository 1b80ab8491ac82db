"""seamkit's W1-W3, measured the way the peer harness (``../shared/bench``, ``harness.py`` and
``peer_seamkit.py``) measures them. Run: ``bash benchmarks/run.sh`` (prints numbers; never asserts
on speed). Options: ``--peers`` (also run the peer harness for seamkit and simonw/llm, interleaved,
and print the ratios the issue's targets are stated in), ``--json`` (one JSON line at the end).

Like the harness:

- The model is scripted and builds seamkit's native stream (``Delta`` objects) on every call, as
  every peer driver's fake model builds its framework's native response; the tool is an
  ``async def``; every run is checked (output ``"5"``, the tool ran ``n`` times, the model was
  called ``n + 1`` times) so a shortcut cannot pass as speed.
- W1: one complete run (the model asks for ``add(2, 3)``, the tool runs, the model answers ``5``);
  200 unmeasured warm-up runs, then 2,000 runs: median and p90 microseconds per run.
- W2: one 200-turn run (199 tool turns, then the answer), 20 warm-up runs and one unmeasured long
  run, then 5 long runs: median microseconds per turn over the whole run, and per turn over turns
  1-20 and 181-200 (each model call time-stamped; a turn is the time between two model calls).
- W3: wall time of fresh interpreters, one unmeasured start to fill the file cache, then the median
  of 10: a bare ``python -c pass``, ``python -c "import seamkit"`` and ``seamkit --help``.

Where this differs from the harness (say so when quoting a number): it runs every plugin of this
repository as installed in ``.venv`` (the harness's seamkit venv has the host and the stores only),
so ``seamkit --help`` here includes every plugin's registration; and it reports seamkit alone unless
``--peers`` is given: the issue's targets are ratios to simonw/llm, which only the harness measures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _scripted import Runner

W1_WARMUP, W1_RUNS = 200, 2000
W2_TURNS, W2_REPEATS, W2_WINDOW = 200, 5, 20
W3_RUNS = 10
ROOT = Path(__file__).resolve().parents[1]

async def w1() -> dict[str, float]:
    """Median and p90 microseconds per run over W1_RUNS runs after W1_WARMUP."""
    r = Runner(max_steps=W2_TURNS + 5)
    times = []
    for i in range(W1_WARMUP + W1_RUNS):
        ns, _ = await r.one(1)
        if i >= W1_WARMUP:
            times.append(ns)
    return {"us_per_run": statistics.median(times) / 1e3,
            "us_p90": statistics.quantiles(times, n=10)[-1] / 1e3}


async def w2() -> dict[str, float]:
    """Per-turn microseconds of a W2_TURNS-turn run: over all turns, turns 1-20 and the last 20."""
    r = Runner(max_steps=W2_TURNS + 5)
    for _ in range(20):
        await r.one(1)
    await r.one(W2_TURNS)
    total, early, late = [], [], []
    for _ in range(W2_REPEATS):
        ns, s = await r.one(W2_TURNS)
        st, w = s.stamps, W2_WINDOW  # st[k] = start of model call k; turn k = st[k] - st[k - 1]
        total.append(ns)
        early.append((st[w] - st[0]) / w)
        late.append((st[W2_TURNS] - st[W2_TURNS - w]) / w)
    e, late_ = statistics.median(early), statistics.median(late)
    return {"us_per_turn": statistics.median(total) / W2_TURNS / 1e3,
            "early_us_per_turn": e / 1e3, "late_us_per_turn": late_ / 1e3, "late_over_early": late_ / e}


def _wall_ms(cmd: list[str]) -> float:
    t0 = time.perf_counter_ns()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter_ns() - t0) / 1e6


def w3() -> dict[str, float]:
    """Median wall ms of fresh processes (one unmeasured run first: file cache, .pyc files)."""
    py = sys.executable
    exe = shutil.which("seamkit", path=os.path.dirname(py)) or os.path.join(os.path.dirname(py), "seamkit")
    cmds = {"start_ms": [py, "-c", "pass"], "import_ms": [py, "-c", "import seamkit"],
            "cli_help_ms": [exe, "--help"]}
    out = {}
    for key, cmd in cmds.items():
        _wall_ms(cmd)
        out[key] = statistics.median(_wall_ms(cmd) for _ in range(W3_RUNS))
    return out


# ------------------------------------------------------------------------------------ peer harness

def _harness_dir() -> Path:
    return Path(os.environ.get("SEAMKIT_PEER_BENCH", ROOT.parent / "shared" / "bench"))


def peers(reps: int) -> dict[str, float] | str:
    """W1 and W2 of the peer harness for seamkit (this interpreter, so this checkout) and simonw/llm
    (its venv ``$BENCH_VENVS/llm``, default ``/tmp/benchvenvs``), alternated ``reps`` times;
    medians and the seamkit/llm ratios. A string says why it could not run."""
    bench = _harness_dir()
    llm_py = Path(os.environ.get("BENCH_VENVS", "/tmp/benchvenvs")) / "llm" / "bin" / "python"
    if not (bench / "harness.py").is_file():
        return f"no peer harness at {bench} (set SEAMKIT_PEER_BENCH)"
    if not llm_py.is_file():
        return f"no simonw/llm venv at {llm_py.parent.parent} (run {bench}/setup_venvs.sh; set BENCH_VENVS)"
    # a copy: the harness may sit on a read-only share, and its seamkit driver may predate a rename
    work = Path(tempfile.mkdtemp(prefix="seamkit-peers-"))
    shutil.copytree(bench, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns("results", "__pycache__"))
    drv = work / "peer_seamkit.py"
    old = "from seamkit.accumulate import collect_result"
    if old in drv.read_text():  # seamkit.accumulate became private; the public name is seamkit.collect_result
        drv.write_text(drv.read_text().replace(old, "from seamkit import collect_result"))
        print(f"peers: {bench}/peer_seamkit.py imports seamkit.accumulate (now private): "
              "run with `from seamkit import collect_result` instead")
    bench, env = work, dict(os.environ)
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(reps):
        for peer, py in (("seamkit", sys.executable), ("llm", str(llm_py))):
            for w in ("w1", "w2"):
                proc = subprocess.run([py, str(bench / f"peer_{peer}.py"), w], env=env,
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    shutil.rmtree(work, ignore_errors=True)
                    tail = proc.stderr.strip().splitlines()[-3:]
                    return f"peer_{peer}.py {w} failed (exit {proc.returncode}): " + " | ".join(tail)
                out = proc.stdout
                rows.setdefault((peer, w), []).append(json.loads(out.strip().splitlines()[-1])["metrics"])

    def med(peer: str, w: str, key: str) -> float:
        return statistics.median(m[key] for m in rows[(peer, w)])

    res = {f"{p}_{w}_{k}": med(p, w, k) for p in ("seamkit", "llm")
           for w, k in (("w1", "us_per_run"), ("w2", "us_per_turn"))}
    res["w1_ratio"] = res["seamkit_w1_us_per_run"] / res["llm_w1_us_per_run"]
    res["w2_ratio"] = res["seamkit_w2_us_per_turn"] / res["llm_w2_us_per_turn"]
    res["reps"] = reps
    shutil.rmtree(work, ignore_errors=True)
    return res


def figure(name: str, value: float, unit: str, target: str) -> None:
    """One line per figure, in the form every benchmark of ``run.sh all`` prints."""
    print(f"{name}: {value:.1f} {unit}  (target: {target})" if unit else f"{name}: {value:.2f}  (target: {target})",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--peers", action="store_true",
                    help="also run the peer harness (seamkit and simonw/llm, interleaved) for the W1/W2 ratios")
    ap.add_argument("--reps", type=int, default=3, help="--peers: repetitions per peer (default 3)")
    ap.add_argument("--json", action="store_true", help="print one JSON line at the end")
    a = ap.parse_args()
    if a.reps < 1:
        ap.error("--reps must be at least 1")
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    gc.collect()
    out: dict[str, Any] = {"load_1m": os.getloadavg()[0]}
    out["w1"] = m1 = asyncio.run(w1())
    ratio_note = "ratio from the peer harness: --peers"
    figure("W1 median per run", m1["us_per_run"], "µs", f"<= 0.3x simonw/llm; {ratio_note}")
    figure("W1 p90 per run", m1["us_p90"], "µs", "none")
    out["w2"] = m2 = asyncio.run(w2())
    figure("W2 per turn (200 turns)", m2["us_per_turn"], "µs", f"<= 0.3x simonw/llm; {ratio_note}")
    figure("W2 turns 1-20", m2["early_us_per_turn"], "µs/turn", "none")
    figure("W2 turns 181-200", m2["late_us_per_turn"], "µs/turn", "none")
    figure("W2 turns 181-200 / 1-20", m2["late_over_early"], "",
           "<= 1.1 at 2,000 turns: benchmarks/long_run_bench.py")
    out["w3"] = m3 = w3()
    figure("W3 python start", m3["start_ms"], "ms", "none (the floor)")
    figure("W3 import seamkit", m3["import_ms"], "ms",
           "none; a usable agent <= 100 ms: benchmarks/startup_tools_bench.py")
    figure("W3 seamkit --help", m3["cli_help_ms"], "ms", "none")
    if a.peers:
        p = peers(a.reps)
        out["peers"] = p
        if isinstance(p, str):
            print(f"peers: no ratios: {p}")
        else:
            print(f"peer harness ({_harness_dir()}), seamkit and simonw/llm alternated {a.reps} times, medians:")
            figure("harness W1 seamkit", p["seamkit_w1_us_per_run"], "µs", "none")
            figure("harness W1 simonw/llm", p["llm_w1_us_per_run"], "µs", "none")
            figure("harness W1 seamkit / llm", p["w1_ratio"], "", "<= 0.3")
            figure("harness W2 seamkit", p["seamkit_w2_us_per_turn"], "µs/turn", "none")
            figure("harness W2 simonw/llm", p["llm_w2_us_per_turn"], "µs/turn", "none")
            figure("harness W2 seamkit / llm", p["w2_ratio"], "", "<= 0.3")
    from importlib.metadata import entry_points

    out["plugins_installed"] = sorted({ep.dist.metadata["Name"] for ep in entry_points(group="seamkit") if ep.dist})
    print(f"plugins installed: {len(out['plugins_installed'])}")
    if a.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
