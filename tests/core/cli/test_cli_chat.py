"""``seamkit chat FILE``: a conversation on a real terminal (pexpect drives a pseudo-terminal) and
over a pipe, its history in the composition's real SQLite store, continued with ``-c ID`` and
``--continue``; Ctrl-C during an answer and at the prompt; typed output; bad use.

The scripted model plays turn N for a request holding N-1 assistant messages
(``follow_transcript``), so the second answer only appears when the second request carried the
first exchange; the stored transcripts are checked as well."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pytest
from cli_testlib import CLI, make_dist

SCRIPTED = """
seamkit: 1
agent:
  name: echo
  model:
    use: scripted
    follow_transcript: true
    turns: ["first answer", "second answer", "third answer"]
  prompt: You are terse.
"""

CONVERSATION = re.compile(r"conversation (run_[0-9a-f]+)")
RUN_LINE = re.compile(r"run (run_[0-9a-f]+): completed")


def transcript(cwd: Path, run_id: str) -> list[tuple[str, str]]:
    """``(role, text)`` of each message of ``run_id`` in the default store of ``cwd``
    (``.seamkit/seamkit.db``, SQLite), read back as ``seamkit runs show`` reads it."""
    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.composition import build_store

    async def read() -> Any:
        store = build_store(None)
        assert store is not None
        cp = Checkpointer(store)
        try:
            return await cp.latest(run_id)
        finally:
            await cp.aclose()

    import os

    here = os.getcwd()
    os.chdir(cwd)  # the default store is .seamkit/seamkit.db in the working directory
    try:
        snap = asyncio.run(read())
    finally:
        os.chdir(here)
    assert snap is not None, f"no run {run_id}"
    return [(m.role, m.text) for m in snap.transcript]


def spawn(cli: CLI, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(sys.executable, ["-m", "seamkit", "chat", *args], cwd=str(cli.cwd), env=cli.env(),
                          encoding="utf-8", timeout=60, dimensions=(40, 200))
    return child


def test_a_conversation_on_a_terminal_keeps_its_history_and_continues(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    write("echo.yaml", SCRIPTED)
    child = spawn(cli, "echo.yaml")
    child.expect(CONVERSATION)
    cid = child.match.group(1)
    child.expect("> ")
    child.sendline("hello")
    child.expect("first answer")
    child.expect(RUN_LINE)
    assert child.match.group(1) == cid  # the first message's run carries the conversation's id
    child.expect("> ")
    child.sendline("and again")
    child.expect("second answer")  # played only for a request that carried the first exchange
    child.expect(RUN_LINE)
    second = child.match.group(1)
    child.expect("> ")
    child.sendline("exit")
    child.expect(f"continue it with: seamkit chat echo.yaml -c {cid}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    assert transcript(cli.cwd, second) == [
        ("system", "You are terse."), ("user", "hello"), ("assistant", "first answer"),
        ("user", "and again"), ("assistant", "second answer"),
    ]

    child = spawn(cli, "echo.yaml", "-c", cid)
    child.expect(f"continuing conversation {cid} \\(4 messages so far\\)")
    child.expect("> ")
    child.sendline("once more")
    child.expect("third answer")  # two assistant messages in the request: the history came back
    child.expect(RUN_LINE)
    third = child.match.group(1)
    child.expect("> ")
    child.sendeof()  # Ctrl-D
    child.expect(f"-c {cid}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [t for _, t in transcript(cli.cwd, third)][1:] == [
        "hello", "first answer", "and again", "second answer", "once more", "third answer"]


WAIT_PLUGIN = """
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("wait", "chat_wait_impl:make_wait", description="Waits a minute")
    register("nap", "chat_wait_impl:make_nap", description="Sleeps a minute")
"""

WAIT_IMPL = """
import asyncio
import sys

from seamkit import tool


@tool(side_effecting=False)
async def wait(reason: str) -> str:
    \"\"\"Wait a minute.

    Args:
        reason: why
    \"\"\"
    sys.stderr.write("TOOL IS WAITING\\n")
    sys.stderr.flush()
    await asyncio.sleep(60)
    return "waited"


def make_wait():
    return wait


@tool(side_effecting=False)
def nap(reason: str) -> str:
    \"\"\"Sleep a minute, in a worker thread, deaf to cancellation.

    Args:
        reason: why
    \"\"\"
    import time

    sys.stderr.write("TOOL IS NAPPING\\n")
    sys.stderr.flush()
    time.sleep(60)
    return "napped"


def make_nap():
    return nap
"""


def test_ctrl_c_during_an_answer_stops_it_and_the_chat_goes_on(
    cli: CLI, write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    cli.paths.append(make_dist(tmp_path / "site-wait", "chat-wait", "chat_wait", WAIT_PLUGIN,
                               extra={"chat_wait_impl": WAIT_IMPL}))
    write("slow.yaml", """
        seamkit: 1
        agent:
          name: slow
          model:
            use: scripted
            turns:
              - first answer
              - tool_calls: [{name: wait, arguments: {reason: "a slow answer"}}]
              - after the interrupt
          tools: [wait]
    """)
    child = spawn(cli, "slow.yaml")
    child.expect(CONVERSATION)
    child.expect("> ")
    child.sendline("hello")
    child.expect("first answer")
    child.expect("> ")
    child.sendline("take your time")
    child.expect("TOOL IS WAITING")  # the answer is under way
    child.sendintr()  # Ctrl-C during the answer
    child.expect("answer interrupted")
    child.expect("> ")
    child.sendline("still there?")
    child.expect("after the interrupt")
    child.expect(RUN_LINE)
    last = child.match.group(1)
    child.expect("> ")
    child.sendintr()  # Ctrl-C at the prompt: the chat ends
    child.expect("continue it with")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "never shown" not in (child.before or "")
    # the interrupted message is not part of the conversation; the one before it is
    assert [t for _, t in transcript(cli.cwd, last)] == [
        "hello", "first answer", "still there?", "after the interrupt"]


def test_piped_input_is_one_message_a_line_and_continue_picks_the_latest(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    write("echo.yaml", SCRIPTED)
    r = cli("chat", "echo.yaml", input="hello\n\n   \nand again\n")
    assert r.returncode == 0, r
    assert r.stdout == "first answer\nsecond answer\n"  # blank lines skipped, no prompt on stdout
    cid = CONVERSATION.search(r.stderr).group(1)  # type: ignore[union-attr]
    assert f"continue it with: seamkit chat echo.yaml -c {cid}" in r.stderr

    r = cli("chat", "echo.yaml", "--continue", input="once more\n")
    assert r.returncode == 0, r
    assert r.stdout == "third answer\n"
    assert f"continuing conversation {cid} (4 messages so far)" in r.stderr
    third = RUN_LINE.search(r.stderr).group(1)  # type: ignore[union-attr]
    assert third != cid

    # the id of any run of the conversation names it too; the script is used up now, so the
    # answer fails: said on stderr, exit 1 for a pipe, and the history stays as it was
    r = cli("chat", "echo.yaml", "-c", third, input="one too many\n")
    assert r.returncode == 1, r
    assert f"continuing conversation {cid} (6 messages so far)" in r.stderr
    assert "the script has no turn left" in r.stderr and "not part of the conversation" in r.stderr


def test_an_empty_pipe_saves_nothing(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("echo.yaml", SCRIPTED)
    r = cli("chat", "echo.yaml", input="")
    assert r.returncode == 0, r
    assert r.stdout == "" and "nothing was said, nothing was saved" in r.stderr


def test_a_typed_agent_prints_its_json(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("typed.yaml", """
        seamkit: 1
        agent:
          name: typed
          model: {use: scripted, turns: ['{"answer": "yes"}', '{"answer": "no"}']}
          output: {json_schema: {type: object, properties: {answer: {type: string}}, required: [answer]}}
    """)
    r = cli("chat", "typed.yaml", input="one\ntwo\n")
    assert r.returncode == 0, r
    assert r.stdout == '{\n  "answer": "yes"\n}\n{\n  "answer": "no"\n}\n'


def test_overrides_apply_to_chat(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("echo.yaml", SCRIPTED)
    r = cli("chat", "echo.yaml", "-o", 'turns=["overridden"]', input="hi\n")
    assert r.returncode == 0, r
    assert r.stdout == "overridden\n"
    r = cli("chat", "echo.yaml", "-m", "nosuchprovider", input="hi\n")
    assert r.returncode == 2, r
    assert "-m nosuchprovider: agent.model.use: unknown provider 'nosuchprovider'" in r.stderr


@pytest.mark.parametrize(("args", "expected"), [
    (["-c", "run_0123"], "no conversation or run 'run_0123' in the store of echo.yaml"),
    (["--continue"], "no conversation of echo.yaml to continue"),
    (["-c", "x", "--continue"], "not allowed with argument"),
])
def test_nothing_to_continue_is_a_usage_error(cli: CLI, write: Callable[[str, str], Path], args: list[str],
                                              expected: str) -> None:
    write("echo.yaml", SCRIPTED)
    r = cli("chat", "echo.yaml", *args, input="hi\n")
    assert r.returncode == 2, r
    assert expected in r.stderr and "Traceback" not in r.stderr


def test_chat_needs_an_agent_with_a_store(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("nostore.yaml", SCRIPTED + "  checkpoints: null\n")
    r = cli("chat", "nostore.yaml", input="hi\n")
    assert r.returncode == 2, r
    assert "'checkpoints: null'" in r.stderr


def test_after_ctrl_c_in_a_sync_tool_the_chat_ends_without_waiting_for_it(
    cli: CLI, write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    cli.paths.append(make_dist(tmp_path / "site-wait", "chat-wait", "chat_wait", WAIT_PLUGIN,
                               extra={"chat_wait_impl": WAIT_IMPL}))
    write("nap.yaml", """
        seamkit: 1
        agent:
          name: nap
          model:
            use: scripted
            turns: [{tool_calls: [{name: nap, arguments: {reason: "a slow tool"}}]}]
          tools: [nap]
    """)
    child = spawn(cli, "nap.yaml")
    child.expect("> ")
    child.sendline("take a nap")
    child.expect("TOOL IS NAPPING")
    child.sendintr()
    child.expect("answer interrupted")
    child.expect("> ")
    child.sendline("quit")
    child.expect("no message was kept, nothing to continue")  # the one message was interrupted
    child.expect(pexpect.EOF, timeout=20)  # the tool sleeps for 60 s more
    child.close()
    assert child.exitstatus == 0


CAPABILITIES = """
seamkit: 1
agent:
  name: desk
  model:
    use: scripted
    follow_transcript: true
    turns:
      - '{"intentions": [{"capability": "search_services", "input": {"query": "printer"}},
          {"capability": "submit_request", "input": {"summary": "printer jammed"}}], "reply": "shall I?"}'
      - '{"intentions": [], "reply": "done"}'
  capabilities: [search_services, submit_request]
"""


def test_an_agent_with_capabilities_keeps_its_conversation_in_one_run(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    write("desk.yaml", CAPABILITIES)
    r = cli("chat", "desk.yaml", input="my printer is jammed\nyes\n")
    assert r.returncode == 0, r
    cid = CONVERSATION.search(r.stderr).group(1)  # type: ignore[union-attr]
    assert "waiting for the person" in r.stderr and "your next message is the answer" in r.stderr
    assert '"ticket": "SD-1"' in r.stderr  # the confirmation was taken from the second line
    texts = [t for _, t in transcript(cli.cwd, cid)]
    assert "my printer is jammed" in texts and "yes" in texts


def test_a_piped_line_that_is_not_utf8_is_skipped_and_fails_the_exit_code(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    import subprocess

    write("echo.yaml", SCRIPTED)
    proc = subprocess.run([sys.executable, "-m", "seamkit", "chat", "echo.yaml"], cwd=cli.cwd, env=cli.env(),
                          input="héllo 日本\n".encode() + b"\xff\xfe bad\n" + b"again\n", capture_output=True,
                          timeout=60)
    assert proc.returncode == 1, proc
    assert proc.stdout.decode() == "first answer\nsecond answer\n"
    assert "that line is not valid UTF-8; it was skipped" in proc.stderr.decode()
    assert "Traceback" not in proc.stderr.decode()
