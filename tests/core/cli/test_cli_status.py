"""The status line of ``seamkit run``/``resume`` on a real terminal (pexpect): shown on a TTY's
stderr while the model works, erased before other output, never on stdout, never with ``--json``
or when stderr is not a terminal, gone (cursor shown again) after Ctrl-C; the summary line has
the run's duration."""

from __future__ import annotations

import json
import re
import shlex
import signal
import sys

import pexpect
import pytest
from cli_testlib import CLI

# a scripted model that takes 1.5 s before each turn: the first a forced tool call, then the answer
SLOW = """
seamkit: 1
agent:
  name: slow
  model:
    use: scripted
    delay: {delay}
    turns:
      - tool_calls: [{{name: calculator, arguments: {{expression: "2 + 3"}}}}]
      - text: '{{"answer": 5}}'
  prompt: "You add numbers."
  tools: [calculator]
  output: {{json_schema: {{type: object, properties: {{answer: {{type: integer}}}}, required: [answer]}}}}
"""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _spawn(cli: CLI, command: str) -> pexpect.spawn:
    """``command`` (a shell line) on a pseudo-terminal, in the CLI's environment."""
    env = cli.env({"TERM": "xterm-256color"})
    env.pop("NO_COLOR", None)
    return pexpect.spawn("/bin/sh", ["-c", command], cwd=str(cli.cwd), env=env, encoding="utf-8",
                         timeout=60, dimensions=(24, 120))


def _seamkit(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in [sys.executable, "-m", "seamkit", *args])


@pytest.fixture
def slow(write):
    return write("slow.yaml", SLOW.format(delay=1.5))


def test_status_line_on_a_terminal_stdout_stays_json(cli, slow, tmp_path):
    out = tmp_path / "out.json"
    child = _spawn(cli, _seamkit("run", str(slow), "2 + 3?") + f" > {shlex.quote(str(out))}")
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert child.exitstatus == 0, screen
    # the line says what the run waits for and counts seconds, redrawn in place (\r, erase line)
    assert re.search(r"waiting for the model… \d+s", screen), screen
    assert "running tool calculator… 0s" in screen
    assert "\r\x1b[2K" in screen
    # erased before the tool lines and the summary: each starts on a clean line
    plain = ANSI.sub("", screen)
    assert "-> calculator" in plain and "<- calculator: 5" in plain
    assert re.search(r"^run \S+: completed in \d+\.\ds, 2 steps", plain.splitlines()[-1].lstrip("\r")), plain
    # the cursor is shown again at the end (hidden while the line is drawn)
    assert screen.rfind("\x1b[?25h") > screen.rfind("\x1b[?25l")
    # stdout (a file) got only the answer, no spinner and no escape codes
    assert json.loads(out.read_text()) == {"answer": 5}
    assert "\x1b" not in out.read_text()


def test_no_status_line_with_json_on_a_terminal(cli, slow):
    child = _spawn(cli, _seamkit("run", str(slow), "2 + 3?", "--json"))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "waiting for the model" not in child.before
    assert "\x1b[?25l" not in child.before
    lines = [json.loads(line) for line in child.before.splitlines() if line.strip()]
    assert lines[-1]["kind"] == "run_finished"


def test_no_status_line_when_stderr_is_not_a_terminal(cli, slow):
    r = cli("run", str(slow), "2 + 3?")
    assert r.returncode == 0, r
    assert "waiting for the model" not in r.stderr and "\x1b" not in r.stderr
    assert json.loads(r.stdout) == {"answer": 5}
    # the summary has the run's duration: two turns of 1.5 s each
    summary = r.stderr.splitlines()[-1]
    m = re.match(r"run \S+: completed in (\d+\.\d)s, 2 steps", summary)
    assert m is not None, summary
    assert float(m.group(1)) >= 3.0


def test_ctrl_c_erases_the_line_and_shows_the_cursor(cli, write):
    path = write("slower.yaml", SLOW.format(delay=30))
    child = _spawn(cli, _seamkit("run", str(path), "2 + 3?"))
    child.expect("waiting for the model… 1s")
    child.sendintr()  # Ctrl-C on the terminal: SIGINT to the foreground process group
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert child.exitstatus == 130 or child.signalstatus is not None, screen
    # after the interrupt: the cursor is visible and the hint is on a line of its own
    assert screen.rfind("\x1b[?25h") > screen.rfind("\x1b[?25l"), repr(screen)
    plain = ANSI.sub("", screen)
    hint = r"^\r?seamkit: run \S+ was interrupted; continue it with: seamkit resume"
    assert re.search(hint, plain, re.M), repr(plain)
    assert "Traceback" not in plain


def test_sigterm_erases_the_line_and_shows_the_cursor(cli, write):
    path = write("slower.yaml", SLOW.format(delay=30))
    child = _spawn(cli, "exec " + _seamkit("run", str(path), "2 + 3?"))
    child.expect("waiting for the model… 1s")
    child.kill(signal.SIGTERM)
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert child.exitstatus == 143, repr(screen)
    assert screen.rfind("\x1b[?25h") > screen.rfind("\x1b[?25l"), repr(screen)
    assert "was terminated; continue it with: seamkit resume" in ANSI.sub("", screen)


def test_ask_shows_the_line_until_the_answer_streams(cli):
    turns = "turns=" + json.dumps(["Hello there."])
    child = _spawn(cli, _seamkit("ask", "hi", "--model", "scripted:demo", "--option", turns,
                                 "--option", "delay=1.5"))
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert child.exitstatus == 0, repr(screen)
    assert re.search(r"waiting for the model… 1s", screen), repr(screen)
    assert screen.rfind("\x1b[?25h") > screen.rfind("\x1b[?25l")
    # the answer follows the erased line, on its own
    assert "\x1b[2KHello there." in screen, repr(screen)
    # and never with --json
    child = _spawn(cli, _seamkit("ask", "hi", "--model", "scripted:demo", "--option", turns,
                                 "--option", "delay=1.5", "--json"))
    child.expect(pexpect.EOF)
    child.close()
    assert "waiting for the model" not in child.before
    assert json.loads(child.before)["text"] == "Hello there."


def test_an_ascii_terminal_gets_an_ascii_line(cli, slow):
    child = _spawn(cli, "PYTHONIOENCODING=ascii " + _seamkit("run", str(slow), "2 + 3?"))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, repr(child.before)
    plain = ANSI.sub("", child.before)
    assert re.search(r"[-\\|/] waiting for the model\.\.\. \d+s", plain), repr(plain)
    assert "…" not in child.before and "\\u28" not in child.before


def test_resume_shows_the_line_too(cli, write):
    # a run waiting for approval, resumed with --approve on a terminal: the tool runs, then the
    # slow answer turn shows the line; the approval's own commands are plain lines as before
    path = write("approve.yaml", """
        seamkit: 1
        agent:
          name: approve
          model:
            use: scripted
            follow_transcript: true
            turns: [{tool_calls: [{name: add, arguments: {a: 1, b: 1}}]}, {text: "two", delay: 1.5}]
          tools: [add]
          checkpoints: {use: sqlite, path: runs.db}
          approvals: {add: every_call}
        """)
    waiting = cli("run", str(path), "go")
    assert waiting.returncode == 3, waiting
    approve = next(line for line in waiting.stderr.splitlines() if "--approve" in line)
    words = shlex.split(approve[approve.index("seamkit resume"):])
    child = _spawn(cli, _seamkit(*words[1:]))
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert child.exitstatus == 0, repr(screen)
    assert re.search(r"waiting for the model… 1s", screen), repr(screen)
    assert screen.rfind("\x1b[?25h") > screen.rfind("\x1b[?25l")
    plain = ANSI.sub("", screen)
    assert "<- add: 2" in plain and re.search(r"^\r?two\r?$", plain, re.M), repr(plain)
    assert re.search(r"run \S+: completed in \d+\.\ds", plain), repr(plain)


def test_chat_shows_the_status_line_while_the_model_works_and_not_at_the_prompt(cli, write):
    chat = write("chat_slow.yaml", """
seamkit: 1
agent:
  name: chatty
  model:
    use: scripted
    delay: 1.5
    turns: ["first answer", "second answer"]
  prompt: "You chat."
""")
    child = _spawn(cli, _seamkit("chat", str(chat)))
    child.expect_exact(">")  # the prompt
    child.sendline("hello")
    child.expect(r"waiting for the model… \d+s")
    child.expect_exact("first answer")
    child.expect_exact(">")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    # the cursor is shown again before the chat ends
    assert (child.before or "").rfind("\x1b[?25l") <= (child.before or "").rfind("\x1b[?25h")
