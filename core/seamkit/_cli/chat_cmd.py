"""``seamkit chat FILE``: a conversation with a composed agent on the terminal (or over a pipe).

Each line read is the person's next message; the agent runs with the conversation so far and its
answer is shown as ``seamkit run`` shows one (the same renderer: streamed text on stdout, or for an
agent with a typed output the JSON on stdout and its text dimmed on stderr; tool calls and a summary
line on stderr). The conversation ends at end of input (Ctrl-D), ``exit`` or ``quit`` (exit 0), or
Ctrl-C at the prompt (exit 130); Ctrl-C during an answer stops that answer only (that message is
not kept in the history: its run is marked failed, :data:`INTERRUPTED_TURN`, never resumable) and
the chat goes on; SIGTERM does the same and ends the chat (143). A turn is kept only when its run
completed with an answer and its final checkpoint was saved (:func:`_not_kept`); the ``-c`` hint
is printed only when something was kept. The prompt goes to stderr unless stdout is the terminal.

Where the history lives: in the composition's checkpoint store (default ``.seamkit/seamkit.db``),
as runs, nothing besides:

- an agent without capabilities: each message is one run whose transcript is the conversation up
  to its answer (the earlier messages are passed as the run's ``history``). Every run of a
  conversation carries ``chat`` (the conversation id: the first run's id) and ``chat_turn`` (1, 2,
  ...) in its metadata and runs in the thread of that id (``once_per_thread`` approvals hold for the
  conversation). Continuing takes the transcript of the conversation's latest kept run; before
  each message the chat catches up with turns another chat stored meanwhile (no lock exists
  across runs: two answers at the same moment fork the conversation, and ``-c`` says so).
- an agent with capabilities: the conversation is one run, whose turns are taken as
  ``seamkit resume RUN --answer`` takes them.

``-c ID`` / ``--cid ID`` continues a conversation: ID is its id or the id of any of its runs (also a
run started by ``seamkit run``, whose transcript becomes the start of a new conversation);
``--continue`` continues the latest conversation of this composition file (its resolved path, which
every run records); ``-c`` of one started with another file warns. The ``-m``/``-o`` overrides
stored with the conversation apply again, before those given now. The conversation id is
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
    #: the run whose transcript is the history (the latest kept turn), ``None`` when none
    source: str | None = None
    #: the resolved agent file and agent name that run recorded (``None``: not recorded)
    agent_file: str | None = None
    agent_name: str | None = None
    #: the ``-m``/``-o`` overrides the conversation's latest run recorded (the JSON of
    #: :func:`~seamkit.composition._overrides.record_overrides`), ``None`` when none
    overrides: str | None = None
    #: what finding it noticed, said when the chat starts (a fork, turns that were not kept)
    notes: list[str] = field(default_factory=list)


#: the ``error`` of a chat turn's run that was interrupted (Ctrl-C, SIGTERM): such a run is marked
#: failed and never resumable (``not_resumable`` in its state), so no command offers to resume it
#: and no ``-c`` takes it for the conversation's latest turn
INTERRUPTED_TURN = "interrupted in chat; not part of the conversation"


def _without_system(transcript: Sequence[Message]) -> list[Message]:
    return [m for m in transcript if m.role != "system"]


def _turn_of(metadata: Any) -> int:
    n = metadata.get("chat_turn") if metadata is not None else None
    return n if isinstance(n, int) and not isinstance(n, bool) else 0


def _not_kept(snap: Any) -> str | None:
    """Why the stored run ``snap`` is not a turn of its conversation (``None``: it is one): it did not
    complete with an answer, or its final checkpoint was not saved (it held a secret)."""
    if snap is None:
        return "it has no checkpoints"
    if snap.status != "done":
        return f"it is {snap.status}"
    if snap.state.get("redacted"):
        return f"its final checkpoint was not saved ({snap.state['redacted']})"
    reason = snap.state.get("stop_reason") or "completed"
    if reason != "completed":
        return f"it stopped without an answer ({reason})"
    return None


async def _find(cp: Checkpointer, ref: str | None, agent: Agent, agent_file: str | None = None) -> _Conversation | None:
    """The conversation ``ref`` names (its id or a run's id), or with ``ref=None`` the latest one
    of ``agent_file`` (the resolved path of the composition; runs that recorded none are matched on
    ``agent``'s name); ``None`` when there is none. Its history is the transcript of its latest
    kept turn (:func:`_not_kept`); two kept turns with the same number (two chats at once) are a
    fork, said in :attr:`_Conversation.notes`."""
    runs = await cp.list_runs(limit=SEARCH_LIMIT)
    chats = [r for r in runs if isinstance(r.metadata.get("chat"), str)]
    if ref is None:
        def mine(r: Any) -> bool:
            recorded = r.metadata.get("agent_file")
            if isinstance(recorded, str) and agent_file is not None:
                return recorded == agent_file
            return bool(r.metadata.get("agent") == agent.name)

        ours = [r for r in chats if mine(r)]
        if not ours:
            return None
        ref = str(ours[0].metadata["chat"])  # newest first
    cid = ref
    members = [r for r in chats if r.metadata.get("chat") == cid]
    if not members:
        snap = await cp.latest(ref)
        if snap is None:
            return None
        named = snap.metadata.get("chat")
        cid = named if isinstance(named, str) else ref
        members = [r for r in chats if r.metadata.get("chat") == cid] or [r for r in runs if r.run_id == ref]
    newest = max(members, key=lambda r: r.created_at) if members else None

    def recorded(conv: _Conversation, r: Any) -> _Conversation:
        meta = r.metadata if r is not None else {}
        file, name, over = meta.get("agent_file"), meta.get("agent"), meta.get("overrides")
        conv.agent_file = file if isinstance(file, str) else None
        conv.agent_name = name if isinstance(name, str) else None
        conv.overrides = over if isinstance(over, str) else None
        return conv

    if agent.capabilities is not None:  # one run holds the whole conversation
        return recorded(_Conversation(cid, turns=0, started=True, id_taken=True, source=cid), newest)
    done = sorted((r for r in members if r.status == "done"), key=lambda r: (_turn_of(r.metadata), r.created_at),
                  reverse=True)
    per_turn: dict[int, int] = {}
    for r in done:
        per_turn[_turn_of(r.metadata)] = per_turn.get(_turn_of(r.metadata), 0) + 1
    kept: list[tuple[Any, Any]] = []  # (listing, snapshot), best first
    for r in done:
        # decoded: runs down to the latest kept one, and those sharing a turn number (a fork?);
        # not every turn of a long conversation at every message
        if kept and per_turn[_turn_of(r.metadata)] < 2:
            continue
        snap = await cp.latest(r.run_id)
        if _not_kept(snap) is None:
            kept.append((r, snap))
    if not kept:
        conv = recorded(_Conversation(cid, id_taken=True), newest)
        conv.notes.append(f"no turn of conversation {cid} was kept ({len(members)} run(s), none completed with "
                          "a saved answer): it starts empty")
        return conv
    best, snap = kept[0]
    history = _without_system(snap.transcript)
    conv = recorded(_Conversation(cid, history, max(_turn_of(best.metadata), sum(m.role == "user" for m in history)),
                                  id_taken=True, source=best.run_id), best)
    by_turn: dict[int, list[str]] = {}
    for r, _ in kept:
        by_turn.setdefault(_turn_of(r.metadata), []).append(r.run_id)
    for n, ids in sorted(by_turn.items()):
        if len(ids) > 1 and n > 0:
            conv.notes.append(f"warning: conversation {cid} forked (two chats at once?): turn {n} was answered "
                              f"by runs {', '.join(sorted(ids))}; continuing from run {best.run_id} (turn "
                              f"{_turn_of(best.metadata)}); the other branch is left out (see it with seamkit runs "
                              "show RUN)")
    later = [r.run_id for r in members if r.created_at > best.created_at]
    if later:  # said, so that a person who sent more messages knows why they are not in the history
        conv.notes.append(f"not part of it, and left out: {len(later)} later run(s) (interrupted, failed, stopped "
                          f"without an answer, not saved, still running, or another branch): {', '.join(later[:5])}"
                          + (", ..." if len(later) > 5 else ""))
    return conv


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
    from seamkit._cli.outcomes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Terminated, UsageError
    from seamkit._cli.overrides import overrides_of
    from seamkit._cli.scrub import scrub_output
    from seamkit.composition import load_composition
    from seamkit.composition._build import secret_texts
    from seamkit.composition._overrides import may_hold_secret, recorded_overrides

    variables = dict(args.var)
    path = existing_file(args.file)
    registry = _registry()
    given = overrides_of(args)
    composition = load_composition(path, registry=registry, overrides=given)
    scrub_output(composition.secret_values())
    if composition.workflow is not None:
        raise UsageError(f"{args.file} is a workflow: chat talks to an agent (run a workflow with seamkit run)")
    agent = built_agent(composition, registry)
    _check_variables(agent, variables)
    cp = agent.checkpointer
    if cp is None:
        raise UsageError("chat keeps the conversation in the composition's store, and this one has "
                         "'checkpoints: null': remove that line (default: .seamkit/seamkit.db) or name a store")
    if not getattr(cp.port, "persistent", True):
        # the store ends with the process (StorePort's ``persistent``): a -c hint could never work
        raise UsageError("chat keeps the conversation in the composition's store, and this one keeps nothing "
                         "after the chat ends (an in-memory store): name a lasting store, or remove the "
                         "'checkpoints:' line (default: .seamkit/seamkit.db)")
    agent_file = _resume_agent_file(composition, args.file)
    resolved = str(path.resolve())
    applied = given
    if args.cid is not None or args.continue_latest:
        async def find() -> _Conversation | None:
            try:
                return await _find(cp, args.cid, agent, resolved)
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
            raise UsageError(f"no conversation of {args.file} to continue in {where}; start one with: "
                             f"{_chat_command(args.file)}")
        stored = recorded_overrides({"overrides": conv.overrides})
        if stored:
            # the conversation goes on with the model and settings it had: its overrides apply again,
            # before those given now (which win)
            applied = (*stored, *given)
            composition = load_composition(path, registry=registry, overrides=applied)
            scrub_output(composition.secret_values())
            agent = built_agent(composition, registry)
            _check_variables(agent, variables)
            assert agent.checkpointer is not None
            shown = " ".join(f"{'-m' if o.provider is not None else '-o'} {o.spec}" for o in stored)
            also = f"; those given here win ({' '.join(o.label for o in given)})" if given else ""
            conv.notes.insert(0, f"the conversation's overrides apply again: {shown}{also}")
    else:
        from seamkit._runtime.context import RunContext

        conv = _Conversation(RunContext().run_id)
    metadata = run_metadata(path, args, composition, overrides=applied)
    chat = _Chat(agent, conv, variables, composition.secret_values(), agent_file, metadata, args.file)
    chat.resolved = resolved
    secrets = secret_texts(composition) if applied else ()
    chat.unstored = [o.label for o in applied if may_hold_secret(o, secrets)]
    chat.report_error = args.report_error
    chat.hello(continued=args.cid is not None or args.continue_latest)
    try:
        code = chat.loop()
    except Terminated:
        chat.goodbye()  # SIGTERM: the conversation id is said as at any end
        raise
    chat.goodbye()
    if code != EXIT_INTERRUPTED:
        # read from a pipe, a message that got no answer (an error, an interrupted answer) is a
        # failure a script must see; on a terminal the person saw it and went on
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

    # a name with control characters cannot be pasted as one line: FILE stands for it
    return _command_line(["seamkit", "chat"], [file if file.isprintable() else "FILE"],
                         [("-c", cid)] if cid is not None else [])


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
        #: the composition file, resolved (what the conversation's runs record as ``agent_file``)
        self.resolved: str | None = None
        #: labels of the overrides in use that no run stores (their value may be a secret)
        self.unstored: list[str] = []
        #: the run of the turn being answered (plain agents), to close it when it is interrupted
        self.current: str | None = None

    def _say(self, text: str) -> None:
        from seamkit._cli.render import visible

        sys.stderr.write(visible(text) + "\n")
        sys.stderr.flush()

    def hello(self, *, continued: bool) -> None:
        model = getattr(self.agent.model, "model", None) or type(self.agent.model).__name__
        if continued:
            plain = self.agent.capabilities is None
            src = f"; its latest turn is run {self.conv.source}" if self.conv.source and plain else ""
            what = f"continuing conversation {self.conv.cid} ({len(self.conv.history)} messages so far){src}"
        else:
            what = f"conversation {self.conv.cid}"
        self._say(f"Chatting with {self.agent.name} ({model}); {what}")
        if continued:
            started_with = self.conv.agent_file
            if started_with is not None and self.resolved is not None and started_with != self.resolved:
                self._say(f"warning: conversation {self.conv.cid} was started with {started_with}"
                          f"{f' (agent {self.conv.agent_name})' if self.conv.agent_name else ''}; it goes on with "
                          f"{self.resolved} (agent {self.agent.name}): this file's prompt, model and tools answer")
            elif self.conv.agent_name is not None and self.conv.agent_name != self.agent.name:
                self._say(f"warning: conversation {self.conv.cid} was with agent {self.conv.agent_name}; it goes on "
                          f"with agent {self.agent.name}")
            for note in self.conv.notes:
                self._say(note)
        if self.tty:
            self._say("Type 'exit' or 'quit' (or Ctrl-D) to end; Ctrl-C stops an answer.")

    def _kept_anything(self) -> bool:
        return bool(self.conv.history) if self.agent.capabilities is None else bool(self.conv.started)

    def goodbye(self) -> None:
        if self._kept_anything():
            self._say(f"conversation {self.conv.cid}; continue it with: {_chat_command(self.file, self.conv.cid)}")
            if self.unstored:  # not stored with the runs: the command must give them again
                from seamkit._cli.overrides import unstored_note

                self._say(unstored_note(self.unstored))
        elif self.conv.id_taken:
            self._say(f"conversation {self.conv.cid}: no message was kept, nothing to continue")
        else:
            self._say(f"conversation {self.conv.cid}: nothing was said, nothing was saved")

    def _prompt(self) -> str:
        """The prompt for :func:`input`: ``"> "`` when stdout is the terminal (line editing redraws
        it); else it goes to stderr here, never into the answers written to stdout."""
        if sys.stdout is not None and sys.stdout.isatty():
            return "> "
        sys.stderr.write("> ")
        sys.stderr.flush()
        return ""

    def _newline(self) -> None:
        """End the prompt's line (Ctrl-D, Ctrl-C at the prompt) where the prompt was written."""
        out = sys.stdout if sys.stdout is not None and sys.stdout.isatty() else sys.stderr
        out.write("\n")
        out.flush()

    def _read(self) -> str | None:
        """The next message; ``None`` at the end of input. Ctrl-C propagates."""
        if self.tty:
            try:
                import readline  # noqa: F401  (line editing and history for input())
            except ImportError:  # not on every platform
                pass
            try:
                return input(self._prompt())
            except EOFError:
                self._newline()
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
                if self.tty:
                    self._newline()
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
        """Answer ``text``; the history grows only when the answer completes and is stored."""
        from seamkit._cli._loop import run_interruptible
        from seamkit._cli.outcomes import Terminated
        from seamkit._cli.render import HumanRenderer
        from seamkit._cli.status import with_status

        self.current = None
        try:
            sink = with_status(HumanRenderer(typed=self.agent.output is not None, secrets=self.secrets,
                                             agent_file=self.agent_file), json_output=False)
            if self.agent.capabilities is not None:
                result = run_interruptible(self._capability_turn(text, sink))
            else:
                result = run_interruptible(self._plain_turn(text, sink))
        except KeyboardInterrupt as exc:
            # a message with no answer: a piped chat fails (exit 1), as for an error
            self.failed = True
            sys.stdout.flush()
            self._drop_interrupted()
            if isinstance(exc, Terminated):
                raise
            self._say("(answer interrupted: that message is not part of the conversation; the chat goes on)")
            return
        except Exception as exc:  # the answer failed: say why, and go on with the history as it was
            self.failed = True
            sys.stdout.flush()
            self.report_error(exc)
            self._say("(that message is not part of the conversation; the chat goes on)")
            return
        self._after(result)

    def _drop_interrupted(self) -> None:
        """Mark the interrupted turn's run failed, never resumable: it is no turn of the
        conversation (``seamkit runs show`` says so, and ``-c`` does not take it)."""
        import asyncio

        from seamkit._cli.common import close_stores

        run_id, cp = self.current, self.agent.checkpointer
        if run_id is None or cp is None or self.agent.capabilities is not None:
            return  # (with capabilities the conversation's one run stays as it is: its next turn continues it)

        async def drop() -> None:
            try:
                await _close_run(cp, run_id, INTERRUPTED_TURN)
            finally:
                await close_stores(self.agent)

        try:
            asyncio.run(drop())
        except Exception as exc:  # say it, the chat goes on
            self._say(f"seamkit: warning: run {run_id} could not be marked as not part of the conversation "
                      f"({type(exc).__name__}: {exc})")

    def _stored(self, run_id: str) -> Any:
        import asyncio

        from seamkit._cli.common import close_stores

        cp = self.agent.checkpointer
        assert cp is not None

        async def read() -> Any:
            try:
                return await cp.latest(run_id)
            finally:
                await close_stores(self.agent)

        return asyncio.run(read())

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
            why = _not_kept(self._stored(result.run_id))
            if why is not None:  # the answer was shown, but its run is not stored as a turn
                self.failed = True
                self._say(f"(this answer is not kept: run {result.run_id}: {why}; that message is not part of "
                          "the conversation, and the chat cannot be continued from it)")
                return
            self.conv.history = _without_system(result.transcript)
            self.conv.turns += 1
            self.conv.source = result.run_id
            return
        self.failed = True
        if result.stop_reason == "suspended":
            self._say(f"(run {result.run_id} waits for a person: it is not part of the conversation; "
                      "decide it with the command above, then continue the chat)")
            return
        self._say(f"seamkit: error: the run stopped without an answer ({result.stop_reason}); "
                  "that message is not part of the conversation")

    async def _catch_up(self) -> None:
        """Before a turn: when another chat continued this conversation meanwhile (a kept turn
        past this one's), go on from its latest turn, saying so; the store offers no lock across
        runs, so two chats answering at the very same moment still fork (the next ``-c`` says so)."""
        if not self.conv.id_taken:
            return
        cp = self.agent.checkpointer
        assert cp is not None
        found = await _find(cp, self.conv.cid, self.agent, self.resolved)
        if found is None or found.source is None or found.source == self.conv.source:
            return
        if found.turns > self.conv.turns:
            self._say(f"warning: the conversation was continued elsewhere (run {found.source}, turn {found.turns}); "
                      "continuing from its latest turn")
            self.conv.history, self.conv.turns, self.conv.source = found.history, found.turns, found.source
        elif found.turns == self.conv.turns and self.conv.source is not None:
            self._say(f"warning: the conversation forked: turn {found.turns} was also answered elsewhere (run "
                      f"{found.source}); this chat goes on from its own (run {self.conv.source})")

    async def _plain_turn(self, text: str, sink: Any) -> AgentResult | None:
        from seamkit._cli.commands import _drive
        from seamkit._runtime.context import RunContext
        from seamkit.values import Scope

        try:
            await self._catch_up()
        except BaseException:
            sink.close()
            raise
        # the first message's run has the conversation's id, so that -c with it finds the conversation
        # also in a store that keeps no metadata; later runs (and a retry of an interrupted first) get new ids
        if self.conv.id_taken:
            ctx = RunContext(scope=Scope(thread=self.conv.cid))
        else:
            ctx = RunContext(run_id=self.conv.cid, scope=Scope(thread=self.conv.cid))
            self.conv.id_taken = True
        self.current = ctx.run_id
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


async def _close_run(cp: Checkpointer, run_id: str, reason: str) -> None:
    """Write ``run_id``'s last version: ``failed`` with ``reason`` as its error and
    ``not_resumable`` (no ``seamkit resume`` takes it up again); nothing when it has no checkpoint
    or is already finished."""
    from seamkit._durability.checkpointer import RunHandle
    from seamkit._durability.records import FINISHED_STATUSES

    snap = await cp.latest(run_id)
    if snap is None or snap.status in FINISHED_STATUSES:
        return
    handle = RunHandle(cp, run_id, snap.parent_run_id, snap.version, snap.metadata)
    handle._logged = len(snap.transcript)
    state = {**snap.state, "error": reason, "not_resumable": reason}
    await handle.save("failed", state, snap.transcript, lease=False)
