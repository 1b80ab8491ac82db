"""``seamkit chat FILE``: a conversation on a real terminal (pexpect drives a pseudo-terminal) and
over a pipe, its history in the composition's real SQLite store, continued with ``-c ID`` and
``--continue``; Ctrl-C during an answer and at the prompt; typed output; bad use.

The scripted model plays turn N for a request holding N-1 assistant messages
(``follow_transcript``), so the second answer only appears when the second request carried the
first exchange; the stored transcripts are checked as well."""

from __future__ import annotations

import asyncio
import re
import shlex
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
    child, _ = chat_with_a_waiting_tool(cli, write, tmp_path)  # the answer is under way
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


# -- what a chat leaves in the store is true (the tester's findings H2-H4, M2-M7, M10, LOW5, LOW10) ------


def stored_runs(cli: CLI) -> list[dict[str, Any]]:
    """The runs of the default store, newest first, as ``seamkit runs list --json`` gives them."""
    import json

    r = cli("runs", "list", "--json")
    assert r.returncode == 0, r
    data = json.loads(r.stdout)
    return list(data["runs"] if isinstance(data, dict) else data)


def waiting_agent(cli: CLI, write: Callable[[str, str], Path], tmp_path: Path) -> None:
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


def chat_with_a_waiting_tool(cli: CLI, write: Callable[[str, str], Path], tmp_path: Path) -> tuple[Any, str]:
    """A chat on a pty whose second answer is still running (its tool waits): the child and the
    conversation id."""
    waiting_agent(cli, write, tmp_path)
    child = spawn(cli, "slow.yaml")
    child.expect(CONVERSATION)
    cid = child.match.group(1)
    child.expect("> ")
    child.sendline("hello")
    child.expect("first answer")
    child.expect("> ")
    child.sendline("take your time")
    child.expect("TOOL IS WAITING")
    return child, cid


def test_an_interrupted_answer_is_a_failed_run_never_offered_to_resume_nor_continued(
    cli: CLI, write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    child, cid = chat_with_a_waiting_tool(cli, write, tmp_path)
    child.sendintr()
    child.expect("answer interrupted")
    child.expect("> ")
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    failed = [r for r in stored_runs(cli) if r["status"] == "failed"]
    assert len(failed) == 1, failed
    dropped = failed[0]["run_id"]
    shown = cli("runs", "show", dropped)
    assert "interrupted in chat; not part of the conversation" in shown.stdout
    assert "seamkit resume" not in shown.stdout and "it cannot be resumed" in shown.stdout
    r = cli("resume", dropped)
    assert r.returncode != 0 and "cannot be resumed" in r.stderr, r
    r = cli("resume", dropped, "--allow-finished")
    assert r.returncode != 0 and "not part of the conversation" in r.stderr, r
    # continuing takes the last kept turn, not the interrupted one
    r = cli("chat", "slow.yaml", "-c", cid, input="")
    assert f"continuing conversation {cid} (2 messages so far)" in r.stderr, r


def test_sigterm_during_an_answer_says_the_conversation_and_drops_the_turn(
    cli: CLI, write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    import signal

    child, cid = chat_with_a_waiting_tool(cli, write, tmp_path)
    child.kill(signal.SIGTERM)
    child.expect(f"conversation {cid}; continue it with: seamkit chat slow.yaml -c {cid}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 143
    assert [r["status"] for r in stored_runs(cli)] == ["failed", "done"]


def test_a_chat_continued_elsewhere_meanwhile_goes_on_from_its_latest_turn(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    write("echo.yaml", SCRIPTED)
    r = cli("chat", "echo.yaml", input="hello\n")
    cid = CONVERSATION.search(r.stderr).group(1)  # type: ignore[union-attr]
    child = spawn(cli, "echo.yaml", "-c", cid)  # this chat has seen turn 1
    child.expect("> ")
    r = cli("chat", "echo.yaml", "-c", cid, input="from elsewhere\n")  # turn 2, in another chat
    assert r.stdout == "second answer\n", r
    child.sendline("here")
    child.expect("the conversation was continued elsewhere")
    child.expect("third answer")  # the request carried both earlier exchanges
    child.expect(RUN_LINE)
    mine = child.match.group(1)
    child.expect("> ")
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert [t for _, t in transcript(cli.cwd, mine)][1:] == [
        "hello", "first answer", "from elsewhere", "second answer", "here", "third answer"]


def test_a_forked_conversation_is_said_when_continued(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("echo.yaml", SCRIPTED)
    r = cli("chat", "echo.yaml", input="hello\n")
    cid = CONVERSATION.search(r.stderr).group(1)  # type: ignore[union-attr]
    r = cli("chat", "echo.yaml", "-c", cid, input="branch a\n")
    a = RUN_LINE.search(r.stderr).group(1)  # type: ignore[union-attr]
    # a second turn 2 (what two chats answering at the same moment leave): a copy of branch a's run
    import os

    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.composition import build_store

    async def copy() -> None:
        store = build_store(None)
        assert store is not None
        cp = Checkpointer(store)
        try:
            await cp.fork(a, 1, "run_branch_b")
            snap = await cp.latest(a)
            assert snap is not None
            h, _ = await cp.claim("run_branch_b", steal=True)
            await h.save("done", snap.state, snap.transcript)
        finally:
            await cp.aclose()

    here = os.getcwd()
    os.chdir(cli.cwd)
    try:
        asyncio.run(copy())
    finally:
        os.chdir(here)
    r = cli("chat", "echo.yaml", "-c", cid, input="")
    assert "forked" in r.stderr and a in r.stderr and "run_branch_b" in r.stderr, r


def test_an_answer_whose_checkpoint_holds_a_secret_is_not_kept(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    write("e.yaml", """
        seamkit: 1
        agent:
          name: e
          prompt: You help.
          model: {use: scripted, turns: ["the code is s3cr3t-value-42"]}
          middlewares:  # (the key is an environment value of the composition: a secret)
            - {use: fallback, to: [{use: openai_chat, model: x, base_url: "http://127.0.0.1:9/v1",
                                    api_key: "${CODE}"}]}
    """)
    r = cli("chat", "e.yaml", input="what is the code?\n", env={"CODE": "s3cr3t-value-42"})
    assert r.returncode == 1, r
    assert "this answer is not kept" in r.stderr and "cannot be continued from it" in r.stderr
    assert "continue it with" not in r.stderr and "no message was kept" in r.stderr
    cid = CONVERSATION.search(r.stderr).group(1)  # type: ignore[union-attr]
    r = cli("chat", "e.yaml", "-c", cid, input="", env={"CODE": "s3cr3t-value-42"})
    assert "no turn of conversation" in r.stderr and "it starts empty" in r.stderr, r


def test_continuing_applies_the_conversations_overrides_again(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("echo.yaml", SCRIPTED)
    r = cli("chat", "echo.yaml", "-o", 'turns=["o one", "o two", "o three"]', input="hi\n")
    assert r.stdout == "o one\n", r
    cid = CONVERSATION.search(r.stderr).group(1)  # type: ignore[union-attr]
    r = cli("chat", "echo.yaml", "-c", cid, input="again\n")
    assert r.stdout == "o two\n", r  # not the file's "second answer"
    assert "the conversation's overrides apply again: -o turns=" in r.stderr
    r = cli("chat", "echo.yaml", "-c", cid, "-o", 'turns=["x", "y", "given now"]', input="more\n")
    assert r.stdout == "given now\n", r
    assert "those given here win (-o turns)" in r.stderr


def test_chat_refuses_a_store_that_ends_with_the_process(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("mem.yaml", SCRIPTED + "  checkpoints: {use: memory}\n")
    r = cli("chat", "mem.yaml", input="hi\n")
    assert r.returncode == 2, r
    assert "in-memory store" in r.stderr and "-c" not in r.stderr


def test_a_turn_stopped_at_max_steps_is_not_in_the_continued_history(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    write("steps.yaml", """
        seamkit: 1
        agent:
          name: steps
          prompt: You help.
          max_steps: 1
          tools: [clock]
          model:
            use: scripted
            turns:
              - fine
              - tool_calls: [{name: clock, arguments: {}}]
    """)
    r = cli("chat", "steps.yaml", input="hi\nwhat time is it\n")
    assert r.returncode == 1, r
    assert "max_steps" in r.stderr and "not part of the conversation" in r.stderr
    cid = CONVERSATION.search(r.stderr).group(1)  # type: ignore[union-attr]
    r = cli("chat", "steps.yaml", "-c", cid, input="")
    assert f"continuing conversation {cid} (2 messages so far)" in r.stderr, r


def test_each_chat_turn_lists_its_own_message_as_its_task(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("echo.yaml", SCRIPTED)
    assert cli("chat", "echo.yaml", input="hello\nand again\n").returncode == 0
    assert [r["task"] for r in stored_runs(cli)] == ["and again", "hello"]


def test_continue_keeps_to_the_file_and_c_warns_of_another(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("echo.yaml", SCRIPTED)
    write("other.yaml", SCRIPTED.replace("You are terse.", "You are verbose."))  # the same agent name
    r = cli("chat", "echo.yaml", input="hello\n")
    cid = CONVERSATION.search(r.stderr).group(1)  # type: ignore[union-attr]
    r = cli("chat", "other.yaml", "--continue", input="hi\n")
    assert r.returncode == 2 and "no conversation of other.yaml to continue" in r.stderr, r
    r = cli("chat", "other.yaml", "-c", cid, input="")
    assert "warning: conversation" in r.stderr and str((cli.cwd / "echo.yaml").resolve()) in r.stderr, r
    assert str((cli.cwd / "other.yaml").resolve()) in r.stderr


def test_the_prompt_goes_to_the_terminal_not_into_redirected_answers(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    write("echo.yaml", SCRIPTED)
    child = pexpect.spawn("/bin/sh", ["-c", f"{sys.executable} -m seamkit chat echo.yaml > out.txt"],
                          cwd=str(cli.cwd), env=cli.env(), encoding="utf-8", timeout=60)
    child.expect("> ")  # on stderr: the terminal
    child.sendline("hello")
    child.expect("> ")
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (cli.cwd / "out.txt").read_text() == "first answer\n"


def test_a_piped_message_interrupted_mid_answer_fails_the_exit_code(
    cli: CLI, write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    waiting_agent(cli, write, tmp_path)
    (cli.cwd / "in.txt").write_text("hello\ntake your time\n")
    child = pexpect.spawn("/bin/sh", ["-c", f"exec {sys.executable} -m seamkit chat slow.yaml < in.txt"],
                          cwd=str(cli.cwd), env=cli.env(), encoding="utf-8", timeout=60)
    child.expect("TOOL IS WAITING")
    child.sendintr()
    child.expect("answer interrupted")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1  # a message got no answer (docs/cli.md: exit 1 for a pipe)


def test_a_chat_whose_only_message_failed_prints_no_continue_hint(
    cli: CLI, write: Callable[[str, str], Path]
) -> None:
    write("none.yaml", """
        seamkit: 1
        agent:
          name: gr
          model: {use: scripted, turns: ["the forbidden word"]}
          guardrails: [{use: deny, patterns: [forbidden]}]
    """)
    r = cli("chat", "none.yaml", input="hi\n")
    assert r.returncode == 1, r
    assert "continue it with" not in r.stderr and "no message was kept, nothing to continue" in r.stderr


def test_the_continue_hint_names_an_override_that_was_not_stored(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("k.yaml", SCRIPTED + '  middlewares:\n    - {use: fallback, to: [{use: openai_chat, model: x, '
                               'base_url: "http://127.0.0.1:9/v1", api_key: "x"}]}\n')
    r = cli("chat", "k.yaml", "-o", "agent.middlewares.0.to.0.api_key=hush-hush-value", input="hi\n")
    assert r.returncode == 0, r
    assert "hush-hush-value" not in r.stderr
    # the command pastes as printed; what to add again is said on the next line
    hint = next(line for line in r.stderr.splitlines() if "continue it with: " in line)
    command = shlex.split(hint.split("continue it with: ")[1])
    assert command[:2] == ["seamkit", "chat"] and command[-2] == "-c", command
    assert "(add -o agent.middlewares.0.to.0.api_key again, with its value: not stored" in r.stderr
