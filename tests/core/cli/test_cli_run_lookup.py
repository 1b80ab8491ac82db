"""Finding a run (issue 18): a run in a composition's own store is found with ``--agent FILE``; a
command that looks in the default store and finds nothing says where else it is, with a command
that works as printed (paths with spaces quoted); ``seamkit validate`` says where checkpoints go;
the exit codes are listed the same in ``--help``, the docs and ``main.py``."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

from cli_testlib import CLI

ROOT = Path(__file__).resolve().parents[3]

OWN_STORE = """
seamkit: 1
agent:
  name: own
  model: {use: scripted, turns: ["hello from own"]}
  checkpoints: {use: sqlite, path: "the runs/own.db"}
"""

DEFAULT_STORE = """
seamkit: 1
agent:
  name: plain
  model: {use: scripted, turns: ["hello"]}
"""


def _hint(stderr: str) -> list[str]:
    """The command of the 'it is in the store of FILE: COMMAND' line, as the shell splits it."""
    (line,) = [x for x in stderr.splitlines() if x.startswith("it is in the store of ")]
    return shlex.split(line.split(": ", 1)[1])


def test_a_run_in_a_compositions_own_store_is_found_and_the_printed_commands_work(
        cli: CLI, write: Callable[[str, str], Path], tmp_path: Path) -> None:
    write("own store.yaml", OWN_STORE)
    write("plain.yaml", DEFAULT_STORE)
    assert cli("run", "plain.yaml", "hi").returncode == 0  # the default store exists and lacks the run
    assert cli("run", "own store.yaml", "hi").returncode == 0
    (row,) = json.loads(cli("runs", "list", "--json", "--agent", "own store.yaml").stdout)
    run_id = row["run_id"]
    assert run_id not in cli("runs", "list").stdout

    shown = cli("runs", "show", run_id)
    assert shown.returncode == 2, shown
    assert f"no run {run_id!r} in the default store (.seamkit/seamkit.db in this directory)" in shown.stderr
    assert f"it is in the store of own store.yaml: seamkit runs show {run_id} --agent 'own store.yaml'" in shown.stderr
    again = cli(*_hint(shown.stderr)[1:])  # the printed command, as a shell would run it
    assert again.returncode == 0 and again.stdout.startswith(f"run {run_id}: done"), again

    resumed = cli("resume", run_id)
    assert resumed.returncode == 2, resumed
    hint = _hint(resumed.stderr)
    assert hint == ["seamkit", "resume", run_id, "--agent", "own store.yaml"]
    finished = cli(*hint[1:])  # found: a finished run, so it says what works next, and that works too
    assert finished.returncode == 2 and "cannot be resumed: it is done" in finished.stderr, finished
    then = shlex.split(finished.stderr.rsplit("to print its result: ", 1)[1])
    assert then == ["seamkit", "resume", run_id, "--allow-finished", "--agent", "own store.yaml"]
    printed = cli(*then[1:])
    assert printed.returncode == 0 and printed.stdout == "hello from own\n", printed

    settle = cli("runs", "settle", run_id, "call_1", "applied")
    assert settle.returncode == 2 and _hint(settle.stderr) == [
        "seamkit", "runs", "settle", run_id, "call_1", "applied", "--agent", "own store.yaml"], settle
    deleted = cli("runs", "delete", run_id)
    assert deleted.returncode == 2, deleted
    gone = cli(*_hint(deleted.stderr)[1:])
    assert gone.returncode == 0 and f"deleted run {run_id}" in gone.stderr, gone

    # now no store has it: the default store's answer names no other file
    missing = cli("runs", "show", run_id)
    assert missing.returncode == 2 and "it is in the store of" not in missing.stderr, missing


def test_looking_for_a_run_creates_no_store_file(cli: CLI, write: Callable[[str, str], Path], tmp_path: Path) -> None:
    write("own store.yaml", OWN_STORE)
    write("plain.yaml", DEFAULT_STORE)
    assert cli("run", "plain.yaml", "hi").returncode == 0
    r = cli("runs", "show", "run_nope")
    assert r.returncode == 2 and "it is in the store of" not in r.stderr, r
    assert not (tmp_path / "the runs").exists()


def test_validate_says_where_checkpoints_go(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("own store.yaml", OWN_STORE)
    write("plain.yaml", DEFAULT_STORE)
    write("none.yaml", DEFAULT_STORE.replace("name: plain", "name: none\n  checkpoints: null"))
    own = cli("validate", "own store.yaml")
    assert own.returncode == 0, own
    assert own.stdout.splitlines()[1] == (
        "checkpoints: this composition's own store (sqlite at the runs/own.db); commands that take a run id "
        "need --agent 'own store.yaml', e.g. seamkit runs list --agent 'own store.yaml'")
    plain = cli("validate", "plain.yaml")
    assert plain.stdout.splitlines()[1].startswith("checkpoints: the embedded default store .seamkit/seamkit.db")
    assert cli("validate", "none.yaml").stdout.splitlines()[1].startswith("checkpoints: none ('checkpoints: null')")
    # the command it prints works as printed
    assert cli("run", "own store.yaml", "hi").returncode == 0
    listed = cli(*shlex.split(own.stdout.splitlines()[1].split("e.g. ", 1)[1])[1:])
    assert listed.returncode == 0 and "own" in listed.stdout, listed


def test_help_the_docs_and_main_list_the_same_exit_codes(cli: CLI) -> None:
    from seamkit._cli import outcomes

    codes = {v for k, v in vars(outcomes).items() if k.startswith("EXIT_")}
    assert codes == {0, 1, 2, 3, 4, 130, 143}
    table = (ROOT / "docs" / "durable-runs.md").read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    assert {int(c) for c in re.findall(r"^\| `(\d+)` \|", table, re.M)} == codes
    helped = " ".join(cli("--help").stdout.split())
    epilog = helped.split("Exit codes:", 1)[1].strip()
    assert {int(c) for c in re.findall(r"(?:^|, )(\d+) [a-z]", epilog)} == codes, epilog
    from seamkit._cli import main

    doc = " ".join((main.__doc__ or "").split())
    assert {int(c) for c in re.findall(r"``(\d+)``", doc.split("Exit codes:", 1)[1])} == codes
    for page in ("getting-started.md", "layers.md"):
        text = (ROOT / "docs" / page).read_text()
        assert "durable-runs.md#exit-codes" in text, page
        line = " ".join(text.split("Exit codes:", 1)[1].split(".")[0].split())
        assert {int(c) for c in re.findall(r"`(\d+)`", line)} == codes, (page, line)


def test_the_wait_command_for_a_queued_run_quotes_the_agent_file() -> None:
    from seamkit._cli.commands import _wait_command

    printed = _wait_command("run_1", "my agents/-a.yaml")
    assert shlex.split(printed) == ["seamkit", "runs", "wait", "run_1", "--agent", "my agents/-a.yaml"]
    assert _wait_command("run_1", "-a.yaml") == "seamkit runs wait run_1 --agent=-a.yaml"  # argparse reads it back


def test_runs_list_where_nothing_was_stored_yet_says_so_and_creates_no_store(cli: CLI) -> None:
    listed = cli("runs", "list")
    assert (listed.returncode, listed.stdout) == (0, ""), listed
    assert listed.stderr == "no runs (no store yet at .seamkit/seamkit.db)\n"
    as_json = cli("runs", "list", "--json")
    assert (as_json.returncode, json.loads(as_json.stdout)) == (0, []), as_json
    assert not (cli.cwd / ".seamkit").exists()


def test_a_run_in_a_compositions_own_store_is_named_when_the_default_store_does_not_exist(
        cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("own store.yaml", OWN_STORE)
    assert cli("run", "own store.yaml", "hi").returncode == 0
    assert not (cli.cwd / ".seamkit").exists()
    (row,) = json.loads(cli("runs", "list", "--json", "--agent", "own store.yaml").stdout)
    run_id = row["run_id"]
    for command in (["runs", "show", run_id], ["resume", run_id], ["runs", "delete", run_id]):
        r = cli(*command)
        assert r.returncode == 2 and "does not exist" in r.stderr, r
        assert _hint(r.stderr) == ["seamkit", *command, "--agent", "own store.yaml"], r.stderr
    assert not (cli.cwd / ".seamkit").exists()
