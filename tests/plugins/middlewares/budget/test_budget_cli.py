"""``seamkit budget show|release``: a process killed while holding a reservation on a shared ledger
is listed, and ``release --dead`` gives its reservation back; bad calls exit 2 without a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

HOLDER = textwrap.dedent("""\
    import asyncio, sys
    from seamkit.values import Scope
    from seamkit_sqlite.store import SqliteStore
    from seamkit_budget.shared import SharedLedger

    async def main():
        ledger = SharedLedger(SqliteStore(sys.argv[1]))
        assert await ledger.reserve(Scope(), "batch-7", 1_250_000, 10**9) is None  # $0.00125
        print(ledger.owner, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """)


def agent(db: Path, ledger: str = "ledger: batch-7") -> str:
    return textwrap.dedent(f"""\
        seamkit: 1
        agent:
          name: budgeted
          model: {{use: scripted, turns: [hello]}}
          checkpoints: null
          middlewares:
            - {{use: budget, max_cost_usd: "1", store: {{use: sqlite, path: "{db}"}}, {ledger}}}
        """)


def seamkit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_show_lists_a_killed_holder_and_release_dead_gives_its_reservation_back(tmp_path: Path) -> None:
    db = tmp_path / "budget.db"
    (tmp_path / "a.yaml").write_text(agent(db))
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        owner = proc.stdout.readline().strip()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    shown = seamkit(tmp_path, "budget", "show", "--agent", "a.yaml")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["ledger batch-7 (tenant default): spent $0 and reserved $0.00125 of $1",
                                         f"  {owner} holds $0.00125"]
    released = seamkit(tmp_path, "budget", "release", "--agent", "a.yaml", "--dead")
    assert released.returncode == 0, released.stderr
    assert released.stdout == f"released $0.00125 held by {owner}\n"
    data = json.loads(seamkit(tmp_path, "budget", "show", "batch-7", "--agent", "a.yaml", "--json").stdout)
    assert (data["spent"], data["reserved"], data["ceiling"]) == ("0", "0", "1")
    assert [(h["owner"], h["pid"], h["reserved"]) for h in data["holders"]] == [(owner, proc.pid, "0")]
    again = seamkit(tmp_path, "budget", "release", "--agent", "a.yaml", "--owner", owner)
    assert again.returncode == 0 and again.stdout == "nothing to release\n"


def test_bad_calls_exit_2_with_a_message(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(agent(tmp_path / "b.db", ledger="namespace: budget"))
    no_ledger = seamkit(tmp_path, "budget", "show", "--agent", "a.yaml")
    assert no_ledger.returncode == 2 and "name the LEDGER" in no_ledger.stderr
    assert "Traceback" not in no_ledger.stderr
    bad_key = seamkit(tmp_path, "budget", "show", "has space", "--agent", "a.yaml")
    assert bad_key.returncode == 2 and "ledger key" in bad_key.stderr
    (tmp_path / "plain.yaml").write_text(textwrap.dedent("""\
        seamkit: 1
        agent: {name: plain, model: {use: scripted, turns: [hi]}, checkpoints: null,
                middlewares: [{use: budget, max_cost_usd: "1"}]}
        """))
    in_process = seamkit(tmp_path, "budget", "show", "x", "--agent", "plain.yaml")
    assert in_process.returncode == 2 and "no budget middleware with a 'store:'" in in_process.stderr
    assert "Traceback" not in in_process.stderr + bad_key.stderr
    neither = seamkit(tmp_path, "budget", "release", "x", "--agent", "plain.yaml")
    assert neither.returncode == 2 and "--dead" in neither.stderr


def test_show_of_a_ledger_never_used_says_there_is_none(tmp_path: Path) -> None:
    db = tmp_path / "budget.db"
    (tmp_path / "a.yaml").write_text(agent(db))
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # batch-7 holds a reservation now
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    for args in (("batch-8",), ("batch-8", "--json"), ("batch-7", "--tenant", "acme")):
        r = seamkit(tmp_path, "budget", "show", *args, "--agent", "a.yaml")
        assert r.returncode == 2, r
        assert "no ledger" in r.stderr and "$0" not in r.stdout and "Traceback" not in r.stderr, r.stderr
    assert "the composition names 'batch-7'" in seamkit(tmp_path, "budget", "show", "batch-8", "--agent",
                                                         "a.yaml").stderr
    assert seamkit(tmp_path, "budget", "show", "batch-7", "--agent", "a.yaml").returncode == 0
