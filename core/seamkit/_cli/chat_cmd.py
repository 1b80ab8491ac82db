"""``seamkit chat FILE``: a conversation with a composed agent on the terminal (or over a pipe).

Each line read is the person's next message; the agent runs with the conversation so far and its
answer is shown as ``seamkit run`` shows one (the same renderer: streamed text on stdout, or for an
agent with a typed output the JSON on stdout and its text dimmed on stderr; tool calls and a summary
line on stderr). The conversation ends at end of input (Ctrl-D), ``exit`` or ``quit`` (exit 0), or
Ctrl-C at the prompt (exit 130); Ctrl-C during an answer stops that answer only (that message is
not kept in the history) and the chat goes on.

Where the history lives: in the composition's checkpoint store (default ``.seamkit/seamkit.db``),
as runs, nothing besides:

- an agent without capabilities: each message is one run whose transcript is the conversation up
  to its answer (the earlier messages are passed as the run's ``history``). Every run of a
  conversation carries ``chat`` (the conversation id: the first run's id) and ``chat_turn`` (1, 2,
  ...) in its metadata and runs in the thread of that id (``once_per_thread`` approvals hold for the
  conversation). Continuing takes the transcript of the conversation's latest completed run.
- an agent with capabilities: the conversation is one run, whose turns are taken as
  ``seamkit resume RUN --answer`` takes them.

``-c ID`` / ``--cid ID`` continues a conversation: ID is its id or the id of any of its runs (also a
run started by ``seamkit run``, whose transcript becomes the start of a new conversation);
``--continue`` continues the latest conversation of this composition's agent. The conversation id is
printed when the chat starts and when it ends, with the command that continues it.

Input read from a pipe (stdin not a terminal): one message per line, no prompt; blank lines are
skipped.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit._agent.agent import Agent
    from seamkit._agent.result import AgentResult
    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.values import Message

__all__ = ["add_chat_parser", "cmd_chat"]

EXIT_WORDS = frozenset({"exit", "quit"})
#: how many runs of the store are searched for a conversation's runs
SEARCH_LIMIT = 100_000


def add_chat_parser(sub: Any, var: Callable[[str], tuple[str, str]], report: Callable[[BaseException], int]) -> None:
    """Add the ``chat`` sub-command to ``sub`` (the ``add_subparsers`` action of ``seamkit``).
    ``var``: the argument type of ``--var``; ``report``: prints an error as the command line does
    (:func:`seamkit._cli.main.report_error`), for an answer that fails while the chat goes on.
    (Passed in: this module must not import the entry module, which imports it.)"""
    from seamkit._cli.overrides import OVERRIDES_HELP, add_override_args

    p = sub.add_parser(
        "chat",
        help="chat with a composed agent (history kept in its store)",
        description="An interactive conversation with FILE's agent: type a message, read the answer, repeat. "
        "End with Ctrl-D, 'exit' or 'quit'; Ctrl-C stops an answer (the chat goes on), or at the prompt ends the "
        "chat. The conversation is kept in the composition's store: its id is printed at the start and the end, "
        "and -c ID (or --continue for the latest) picks it up again. Piped input: one message per line.",
        epilog=OVERRIDES_HELP,
    )
    p.add_argument("file", metavar="FILE", help="composition YAML file")
    which = p.add_mutually_exclusive_group()
    which.add_argument("-c", "--cid", metavar="ID", dest="cid",
                       help="continue this conversation (its id, or the id of one of its runs)")
    which.add_argument("--continue", dest="continue_latest", action="store_true",
                       help="continue the latest conversation of this agent")
    p.add_argument("--var", metavar="KEY=VALUE", action="append", type=var, default=[],
                   help="a prompt template variable (repeatable)")
    add_override_args(p)
    p.set_defaults(func=cmd_chat, report_error=report)


# -- the conversation ------------------------------------------------------------------------------


@dataclass
class _Conversation:
    """Where a chat stands: its id, the messages so far (no system message: the agent adds its own),
    how many turns were completed, and (capabilities) whether its run exists yet."""

    cid: str
    history: list[Message] = field(default_factory=list)
    turns: int = 0
    started: bool = False
    #: whether a run with the conversation's id was started (the first message's, maybe interrupted)
    id_taken: bool = False


def _without_system(transcript: Sequence[Message]) -> list[Message]:
    return [m for m in transcript if m.role != "system"]


def _turn_of(metadata: Any) -> int:
    n = metadata.get("chat_turn") if metadata is not None else None
    return n if isinstance(n, int) and not isinstance(n, bool) else 0


async def _find(cp: Checkpointer, ref: str | None, agent: Agent) -> _Conversation | None:
    """The conversation ``ref`` names (its id or a run's id), or with ``ref=None`` the latest one
    of ``agent``; ``None`` when there is none."""
    runs = await cp.list_runs(limit=SEARCH_LIMIT)
    chats = [r for r in runs if isinstance(r.metadata.get("chat"), str)]
    if ref is None:
        mine = [r for r in chats if r.metadata.get("agent") == agent.name]
        if not mine:
            return None
        ref = str(mine[0].metadata["chat"])  # newest first
    cid = ref
    members = [r for r in chats if r.metadata.get("chat") == cid]
    if not members:
        snap = await cp.latest(ref)
        if snap is None:
            return None
        named = snap.metadata.get("chat")
        cid = named if isinstance(named, str) else ref
        members = [r for r in chats if r.metadata.get("chat") == cid] or [r for r in runs if r.run_id == ref]
    if agent.capabilities is not None:  # one run holds the whole conversation
        return _Conversation(cid, turns=0, started=True, id_taken=True)
    done = [r for r in members if r.status == "done"]
    if not done:
        return _Conversation(cid, id_taken=True)
    best = max(done, key=lambda r: (_turn_of(r.metadata), r.created_at))
    snap = await cp.latest(best.run_id)
    history = _without_system(snap.transcript) if snap is not None else []
    return _Conversation(cid, history, max(_turn_of(best.metadata), sum(m.role == "user" for m in history)),
                         id_taken=True)


# -- the command -----------------------------------------------------------------------------------


def cmd_chat(args: argparse.Namespace) -> int:
    """``seamkit chat FILE [-c ID | --continue] [-m PROVIDER[:MODEL]] [-o KEY=VALUE ...]``: exit 0
    at the end of input or ``exit``/``quit``, 130 for Ctrl-C at the prompt, 2 for a usage or
    configuration error (also a conversation that does not exist)."""
    import asyncio

    from seamkit._cli.commands import (
        DEFAULT_DB,
        _check_variables,
        _registry,
        _resume_agent_file,
        built_agent,
        run_metadata,
    )
    from seamkit._cli.common import close_stores, existing_file
    from seamkit._cli.outcomes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError
    from seamkit._cli.overrides import overrides_of
    from seamkit._cli.scrub import scrub_output
    from seamkit.composition import load_composition

    variables = dict(args.var)
    path = existing_file(args.file)
    registry = _registry()
    composition = load_composition(path, registry=registry, overrides=overrides_of(args))
    scrub_output(composition.secret_values())
    if composition.workflow is not None:
        raise UsageError(f"{args.file} is a workflow: chat talks to an agent (run a workflow with seamkit run)")
    agent = built_agent(composition, registry)
    _check_variables(agent, variables)
    cp = agent.checkpointer
    if cp is None:
        raise UsageError("chat keeps the conversation in the composition's store, and this one has "
                         "'checkpoints: null': remove that line (default: .seamkit/seamkit.db) or name a store")
    agent_file = _resume_agent_file(composition, args.file)
    if args.cid is not None or args.continue_latest:
        async def find() -> _Conversation | None:
            try:
                return await _find(cp, args.cid, agent)
            finally:
                await close_stores(agent)

        conv = asyncio.run(find())
        if conv is None:
            where = f"the store of {args.file}"
            if agent_file is None:  # the embedded default store
                where += f" ({DEFAULT_DB} in this directory)"
            if args.cid is not None:
                raise UsageError(f"no conversation or run {args.cid!r} in {where}; start a new one with: "
                                 f"{_chat_command(args.file)}")
            raise UsageError(f"no conversation of agent {agent.name!r} to continue in {where}; start one with: "
                             f"{_chat_command(args.file)}")
    else:
        from seamkit._runtime.context import RunContext

        conv = _Conversation(RunContext().run_id)
    chat = _Chat(agent, conv, variables, composition.secret_values(), agent_file, run_metadata(path, args, composition),
                 args.file)
    chat.report_error = args.report_error
    chat.hello(continued=args.cid is not None or args.continue_latest)
    code = chat.loop()
    chat.goodbye()
    if code != EXIT_INTERRUPTED:
        # read from a pipe, a message that got no answer is a failure a script must see; on a
        # terminal the person saw it and went on
        code = EXIT_FAILED if chat.failed and not chat.tty else EXIT_OK
    from seamkit._cli._loop import tool_threads_left_running

    if tool_threads_left_running():
        # a sync tool of an answer stopped with Ctrl-C still runs in its worker thread (it ignores
        # the cancellation token): the interpreter's exit would wait for it, so leave without
        # waiting; the stores are closed and everything is written
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _chat_command(file: str, cid: str | None = None) -> str:
    from seamkit._cli.render import _command_line

    return _command_line(["seamkit", "chat"], [file], [("-c", cid)] if cid is not None else [])


class _Chat:
    """The read-answer loop of one conversation."""

    def __init__(self, agent: Agent, conv: _Conversation, variables: dict[str, str], secrets: frozenset[str],
                 agent_file: str | None, metadata: dict[str, Any], file: str) -> None:
        self.agent = agent
        self.conv = conv
        self.variables = variables
        self.secrets = secrets
        self.agent_file = agent_file
        self.metadata = metadata  # stored with each run: the agent file, the overrides
        self.file = file
        self.tty = sys.stdin is not None and sys.stdin.isatty()
        self.report_error: Callable[[BaseException], int] = lambda exc: 1
        self.failed = False  # a message got no answer (an error, or the run stopped without one)

    def _say(self, text: str) -> None:
        from seamkit._cli.render import visible

        sys.stderr.write(visible(text) + "\n")
        sys.stderr.flush()

    def hello(self, *, continued: bool) -> None:
        model = getattr(self.agent.model, "model", None) or type(self.agent.model).__name__
        what = (f"continuing conversation {self.conv.cid} ({len(self.conv.history)} messages so far)" if continued
                else f"conversation {self.conv.cid}")
        self._say(f"Chatting with {self.agent.name} ({model}); {what}")
        if self.tty:
            self._say("Type 'exit' or 'quit' (or Ctrl-D) to end; Ctrl-C stops an answer.")

    def goodbye(self) -> None:
        if self.conv.turns or self.conv.history or self.conv.started or self.conv.id_taken:
            self._say(f"conversation {self.conv.cid}; continue it with: {_chat_command(self.file, self.conv.cid)}")
        else:
            self._say(f"conversation {self.conv.cid}: nothing was said, nothing was saved")

    def _read(self) -> str | None:
        """The next message; ``None`` at the end of input. Ctrl-C propagates."""
        if self.tty:
            try:
                import readline  # noqa: F401  (line editing and history for input())
            except ImportError:  # not on every platform
                pass
            try:
                return input("> ")
            except EOFError:
                sys.stdout.write("\n")
                return None
        if sys.stdin is None:
            return None
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:  # a text stream without bytes underneath (replaced stdin)
            line = sys.stdin.readline()
            return line.rstrip("\r\n") if line else None
        # bytes, decoded a line at a time: a line that is not UTF-8 costs only itself (a text
        # stream's decoder would fail on the whole chunk it read, the good lines with it)
        data = raw.readline()
        if not data:
            return None
        text: str = data.decode("utf-8").rstrip("\r\n")  # UnicodeDecodeError: the caller skips the line
        return text

    def loop(self) -> int:
        from seamkit._cli.outcomes import EXIT_INTERRUPTED, EXIT_OK, Terminated

        while True:
            try:
                text = self._read()
            except KeyboardInterrupt as exc:
                if isinstance(exc, Terminated):
                    raise
                sys.stdout.write("\n")
                sys.stdout.flush()
                return EXIT_INTERRUPTED
            except UnicodeDecodeError:
                self.failed = True
                self._say("seamkit: that line is not valid UTF-8; it was skipped")
                continue
            if text is None:
                return EXIT_OK
            if not text.strip():
                continue
            if text.strip().lower() in EXIT_WORDS:
                return EXIT_OK
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # bytes that were not UTF-8, decoded with "surrogateescape"
                self.failed = True
                self._say("seamkit: that line is not valid UTF-8; it was skipped")
                continue
            self.turn(text)

    def turn(self, text: str) -> None:
        """Answer ``text``; the history grows only when the answer completes."""
        from seamkit._cli._loop import run_interruptible
        from seamkit._cli.outcomes import Terminated
        from seamkit._cli.render import HumanRenderer
        from seamkit._cli.status import with_status

        try:
            sink = with_status(HumanRenderer(typed=self.agent.output is not None, secrets=self.secrets,
                                             agent_file=self.agent_file), json_output=False)
            if self.agent.capabilities is not None:
                result = run_interruptible(self._capability_turn(text, sink))
            else:
                result = run_interruptible(self._plain_turn(text, sink))
        except KeyboardInterrupt as exc:
            if isinstance(exc, Terminated):
                raise
            sys.stdout.flush()
            self._say("(answer interrupted: that message is not part of the conversation; the chat goes on)")
            return
        except Exception as exc:  # the answer failed: say why, and go on with the history as it was
            self.failed = True
            sys.stdout.flush()
            self.report_error(exc)
            self._say("(that message is not part of the conversation; the chat goes on)")
            return
        self._after(result)

    def _after(self, result: AgentResult | None) -> None:
        if result is None:
            self.failed = True
            self._say("seamkit: error: the run ended without a result")
            return
        if self.agent.capabilities is not None:
            self.conv.started = True
            self.conv.turns += 1
            if result.stop_reason == "suspended":
                self._say("(or answer here: your next message is the answer)")
            return
        if result.stop_reason == "completed":
            self.conv.history = _without_system(result.transcript)
            self.conv.turns += 1
            return
        self.failed = True
        if result.stop_reason == "suspended":
            self._say(f"(run {result.run_id} waits for a person: it is not part of the conversation; "
                      "decide it with the command above, then continue the chat)")
            return
        self._say(f"seamkit: error: the run stopped without an answer ({result.stop_reason}); "
                  "that message is not part of the conversation")

    async def _plain_turn(self, text: str, sink: Any) -> AgentResult | None:
        from seamkit._cli.commands import _drive
        from seamkit._runtime.context import RunContext
        from seamkit.values import Scope

        # the first message's run has the conversation's id, so that -c with it finds the conversation
        # also in a store that keeps no metadata; later runs (and a retry of an interrupted first) get new ids
        if self.conv.id_taken:
            ctx = RunContext(scope=Scope(thread=self.conv.cid))
        else:
            ctx = RunContext(run_id=self.conv.cid, scope=Scope(thread=self.conv.cid))
            self.conv.id_taken = True
        metadata = {**self.metadata, "chat": self.conv.cid, "chat_turn": self.conv.turns + 1}
        return await _drive(self.agent, text, self.variables, sink, metadata, ctx, history=tuple(self.conv.history))

    async def _capability_turn(self, text: str, sink: Any) -> AgentResult | None:
        import dataclasses

        from seamkit._cli.commands import _drive
        from seamkit._cli.common import close_stores
        from seamkit._runtime.context import RunContext

        if not self.conv.started:
            if self.conv.id_taken:  # the first message was interrupted: its run is the conversation
                self.conv.started = True
                return await self._capability_turn(text, sink)
            self.conv.id_taken = True
            ctx = RunContext(run_id=self.conv.cid)
            metadata = {**self.metadata, "chat": self.conv.cid, "chat_turn": 1}
            return await _drive(self.agent, text, self.variables, sink, metadata, ctx)

        class _Observer:
            def on_event(self, event: Any) -> None:
                sink.event(event)

        observed = dataclasses.replace(self.agent, observers=(*self.agent.observers, _Observer()))
        try:
            return await observed.resume(self.conv.cid, answer=text)
        finally:
            sink.close()
            await close_stores(observed)
