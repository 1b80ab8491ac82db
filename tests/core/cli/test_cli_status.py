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
from typing import Any

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


class _Terminal:
    """stdout and stderr of one terminal: both streams write into ``text``, both are TTYs."""

    def __init__(self) -> None:
        self.text = ""

    def stream(self) -> Any:  # a tiny file-like object
        terminal = self

        class Stream:
            encoding = "utf-8"

            def write(self, s: str) -> int:
                terminal.text += s
                return len(s)

            def flush(self) -> None:
                pass

            def isatty(self) -> bool:
                return True

        return Stream()


def test_a_log_record_while_text_streams_starts_on_its_own_line(monkeypatch) -> None:
    """``checkpoint of run ... skipped`` is logged while the answer's last line is open on the
    same terminal: it starts on a new line, and the text's own line end is not doubled."""
    import logging

    from seamkit._cli.render import HumanRenderer, LineSafeHandler
    from seamkit.values import StreamEvent

    term = _Terminal()
    err = term.stream()
    monkeypatch.setattr(sys, "stderr", err)
    renderer = HumanRenderer(out=term.stream(), err=err)
    log = logging.getLogger("seamkit.test_status_line_safe")
    handler = LineSafeHandler()
    log.addHandler(handler)
    log.propagate = False
    try:
        renderer.event(StreamEvent("text", "run_1", 1, text="the tail end"))
        log.warning("checkpoint of run run_1 skipped: it held a secret")
        renderer.close()
    finally:
        log.removeHandler(handler)
    assert term.text == "the tail end\ncheckpoint of run run_1 skipped: it held a secret\n", repr(term.text)


def test_the_status_line_is_not_drawn_after_the_answer() -> None:
    """After a model answer (no tool calls) the line waits before it comes back, and once the run's
    output or end is shown it never does: a timer firing after that draws nothing."""
    import io

    from rich.console import Console
    from seamkit._cli.status import StatusSink
    from seamkit.values import FrozenDict, LLMResult, Message, StreamEvent, TextBlock, ToolCall

    class Quiet:
        def event(self, event: StreamEvent) -> None:
            pass

        def close(self) -> None:
            pass

    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    sink = StatusSink(Quiet(), console)
    try:
        sink.event(StreamEvent("run_started", "run_1", 0, data=FrozenDict(agent="a")))
        assert sink.line.shown
        sink.event(StreamEvent("text", "run_1", 1, text="the answer"))
        assert not sink.line.shown
        asked = LLMResult(Message("assistant", (TextBlock("x"), ToolCall("c1", "calculator", {}))))
        sink.event(StreamEvent("model_result", "run_1", 1, result=asked))
        assert sink.line.shown  # a tool call comes next: the line is back at once
        answer = LLMResult(Message("assistant", (TextBlock("the answer"),)))
        sink.event(StreamEvent("model_result", "run_1", 2, result=answer))
        assert not sink.line.shown  # not at once after an answer
        timer = sink.line._timer
        assert timer is not None
        sink.event(StreamEvent("run_finished", "run_1", 2, data=FrozenDict(stop_reason="completed")))
        assert sink.line._timer is None
        timer.function()  # the timer thread, had it fired just now
        assert not sink.line.shown
        sink.line.show()
        assert not sink.line.shown  # closed for good
    finally:
        sink.line.close()


@pytest.mark.parametrize(("command", "installed"), [("run", True), ("validate", False), ("plugins", False)])
def test_the_line_safe_log_handler_is_only_for_commands_that_stream_a_run(
        monkeypatch: pytest.MonkeyPatch, command: str, installed: bool) -> None:
    # regression: installed for every command, it kept a plugin's command (celery's `seamkit
    # worker`) from setting up its own logging: the worker logged no task at all
    import logging

    from seamkit._cli import commands, plugins_cmd
    from seamkit._cli.main import main
    from seamkit._cli.render import LineSafeHandler

    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # as in a plain process (pytest adds its own)
    seen: list[bool] = []

    def record(args: object) -> int:
        seen.append(any(isinstance(h, LineSafeHandler) for h in logging.getLogger().handlers))
        return 0

    monkeypatch.setattr(plugins_cmd if command == "plugins" else commands, f"cmd_{command}", record)
    args = {"run": ["run", "x.yaml", "task"], "validate": ["validate", "x.yaml"], "plugins": ["plugins"]}[command]
    assert main(args) == 0
    assert seen == [installed]
    assert not any(isinstance(h, LineSafeHandler) for h in logging.getLogger().handlers)  # removed at the end
