"""``seamkit ask "PROMPT" --model PROVIDER[:MODEL]``: one model-neutral call from the command line
(``-m llamacpp``: the provider's default model, here the bundled one).

stdout gets the answer: the model's text as it streams, or with ``--schema`` only the validated
value as pretty JSON; ``--json`` prints the whole :class:`~seamkit._calls.answer.Answer` as one
JSON object instead (also when the call failed). Warnings (degradations), a summary line and
errors go to stderr. Credentials come from the environment, as each provider reads them
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``...); values of secret-looking ``--option`` keys
(``api_key``, ``headers``...) are masked (``***``) in everything written.

Exit codes, as for ``seamkit run``: ``0`` outcome ``ok``; ``1`` the call failed (outcome
``failed``, ``budget_exceeded``, ``timeout`` or ``invalid_output``: one classified line on
stderr, no traceback); ``2`` usage or configuration error (bad ``--model``, unknown provider,
options the provider refuses, a missing or invalid schema file, ``--max-cost`` without
``seamkit-budget``, a request the model cannot take: ``UnsupportedFeature``, such as a temperature
for a reasoning model or a schema construct its dialect cannot express); ``130`` interrupted.

This module is imported to build the parser, so it imports nothing heavy at module level.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from decimal import Decimal

    from seamkit._agent.output import OutputSpec
    from seamkit._calls.answer import Answer

__all__ = ["add_ask_parser", "answer_to_json", "cmd_ask"]


# -- argument types --------------------------------------------------------------------------------


def _usd(text: str) -> Decimal:
    from decimal import Decimal, InvalidOperation

    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"expected a USD amount such as 0.05, got {text!r}") from None
    if not d.is_finite() or d <= 0:
        raise argparse.ArgumentTypeError(f"must be an amount greater than 0, got {text!r}")
    return d


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds such as 30 or 2.5, got {text!r}") from None
    if not (0 < v < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return v


def _temperature(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 0.2, got {text!r}") from None
    if not (0 <= v < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return v


def _option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE``; VALUE is read as ``run -o`` reads it
    (:func:`seamkit.composition._overrides.parse_value`: YAML scalars, flow lists and mappings,
    JSON), but a secret-looking key's plain value is kept as written (a numeric API key stays text)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    from seamkit._calls.binding import is_secret_key
    from seamkit.composition._overrides import parse_value

    if is_secret_key(key) and raw.lstrip()[:1] not in ("{", "["):
        return key, raw
    try:
        return key, parse_value(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{key}: {exc}") from None


def add_ask_parser(sub: Any) -> None:
    """Add the ``ask`` sub-command to ``sub`` (the ``add_subparsers`` action of ``seamkit``)."""
    p = sub.add_parser(
        "ask",
        help="ask a model one question (any installed provider)",
        description="Send PROMPT to PROVIDER:MODEL and print the answer: the text as it streams, or with "
        "--schema only the validated value as JSON. --json prints the whole answer (outcome, usage, cost, "
        "settings, degradations, transcript) as one JSON object. Credentials come from the environment as "
        "each provider reads them (e.g. OPENAI_API_KEY).",
        epilog="Exit codes: 0 ok, 1 the call failed (provider error, budget, timeout, invalid output), "
        "2 usage or configuration error, 130 interrupted.",
    )
    p.add_argument("prompt", metavar="PROMPT", help="the prompt ('-' reads it from stdin)")
    p.add_argument("--model", "-m", metavar="PROVIDER[:MODEL]", required=True,
                   help="provider component and model, e.g. openai_chat:gpt-4o-mini (split on the first colon); "
                   "the provider alone uses its default model (e.g. llamacpp: the bundled model)")
    p.add_argument("--schema", metavar="FILE", help="a JSON Schema file the answer must satisfy")
    p.add_argument("--json", action="store_true", help="print the answer as one JSON object, nothing else")
    p.add_argument("--max-cost", metavar="USD", type=_usd,
                   help="USD ceiling for the call (needs seamkit-budget): a model request is admitted while spend "
                   "plus reservations is under it, so it can be overshot by at most one request's reservation "
                   "(a first request reserving more than the ceiling is still admitted)")
    p.add_argument("--timeout", metavar="S", type=_seconds, help="wall-clock seconds for the whole call")
    p.add_argument("--max-tokens", metavar="N", type=_positive_int, help="output tokens per model request")
    p.add_argument("--temperature", metavar="T", type=_temperature, help="sampling temperature")
    p.add_argument("--system", metavar="TEXT", help="a system prompt")
    p.add_argument("--option", "-o", metavar="KEY=VALUE", action="append", type=_option, default=[],
                   help="a provider config parameter, e.g. base_url=http://127.0.0.1:8080/v1 (repeatable; "
                   "values are read as in run -o: YAML scalars, [flow, lists], {flow: mappings}, JSON); "
                   "temperature and max_tokens are the call's settings, as the flags")
    p.set_defaults(func=cmd_ask)


# -- output ----------------------------------------------------------------------------------------


def answer_to_json(answer: Answer) -> dict[str, Any]:
    """An :class:`~seamkit._calls.answer.Answer` as JSON data: ``call_id``, ``outcome``, ``value``,
    ``text``, ``failure`` (``type``, ``message``, ``failure_class``; no traceback), ``usage``,
    ``unmetered_requests`` (requests counted whose tokens are unknown),
    ``cost`` (USD decimal string or ``null``), ``cost_source``, ``raw_usage``, ``settings``,
    ``degradations``, ``transcript`` and ``session`` (binding with the credential's label only,
    secret-looking options masked; message count)."""
    from seamkit._calls.binding import masked_options
    from seamkit._cli.render import jsonable, usage_to_json

    f = answer.failure
    b = answer.session.binding
    return {
        "call_id": answer.call_id,
        "outcome": answer.outcome,
        "value": jsonable(answer.value),
        "text": answer.text,
        "failure": None if f is None else {
            "type": f.type,
            "message": f.message,
            "failure_class": None if f.failure_class is None else f.failure_class.value,
        },
        "usage": usage_to_json(answer.usage),
        "unmetered_requests": answer.unmetered_requests,
        "cost": None if answer.cost is None else str(answer.cost),
        "cost_source": answer.cost_source,
        "raw_usage": jsonable(list(answer.raw_usage)),
        "settings": jsonable(answer.settings),
        "degradations": list(answer.degradations),
        "transcript": [{"role": m.role, "content": jsonable(list(m.content))} for m in answer.transcript],
        "session": {
            "binding": {
                "provider": b.provider,
                "model": b.model,
                "credential": None if b.credential is None else b.credential.label,
                "options": jsonable(masked_options(b.options)),
            },
            "messages": len(answer.session.transcript),
        },
    }


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _summary(answer: Answer) -> str:
    from seamkit._cli.render import format_cost

    u = answer.usage
    if answer.unmetered_requests and u.input_tokens == 0 and u.output_tokens == 0:
        tokens = "tokens unknown"
    elif answer.unmetered_requests:
        tokens = f"tokens {u.input_tokens} in / {u.output_tokens} out + unknown for the failed request"
    else:
        tokens = f"tokens {u.input_tokens} in / {u.output_tokens} out"
    return (f"ask {answer.call_id}: {answer.outcome}, {tokens}, "
            f"{u.requests} request{'s' if u.requests != 1 else ''}, cost {format_cost(u)}")


def _load_schema(name: str) -> OutputSpec:
    import json

    from seamkit._agent.output import OutputSpec
    from seamkit._cli.common import existing_file
    from seamkit._cli.outcomes import UsageError

    path = existing_file(name)  # UsageError: exit 2
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--schema {name}: cannot be read: {exc}") from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise UsageError(f"--schema {name}: not valid JSON: {exc.msg} ({where})") from None
    if not isinstance(schema, dict):
        raise UsageError(f"--schema {name}: a JSON Schema must be an object, got {type(schema).__name__}")
    try:
        return OutputSpec.from_json_schema(schema, name=path.stem)
    except ValueError as exc:
        raise UsageError(f"--schema {name}: {exc}") from None


def _binding(spec: str, options: dict[str, Any]) -> Any:
    """``PROVIDER:MODEL``, or ``PROVIDER`` alone for the provider's default model (as ``-m`` of
    ``run`` and ``chat``). Raises ``ValueError``."""
    from seamkit._calls.binding import Binding
    from seamkit._frozen import freeze

    if ":" in spec:
        return Binding.parse(spec, options=options)
    if not spec.strip():
        raise ValueError(f"expected PROVIDER or PROVIDER:MODEL (e.g. openai_chat:gpt-4o-mini or llamacpp), "
                         f"got {spec!r}")
    return Binding(spec.strip(), None, options=freeze(dict(options)))


def _settings_from_options(args: argparse.Namespace, options: dict[str, Any]) -> None:
    """``-o temperature=T`` and ``-o max_tokens=N`` are the call's settings, as ``--temperature``
    and ``--max-tokens`` (and as a bare ``-o temperature`` of ``seamkit run`` / ``chat`` is the
    agent's setting), so they work with every provider; moved from ``options`` to ``args``."""
    from seamkit._cli.outcomes import UsageError

    for key, flag, parse in (("temperature", "--temperature", _temperature), ("max_tokens", "--max-tokens",
                                                                             _positive_int)):
        if key not in options:
            continue
        if getattr(args, key) is not None:
            raise UsageError(f"-o {key} and {flag} both set it: give one")
        value = options.pop(key)
        try:
            setattr(args, key, parse(str(value)))
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"-o {key}: {exc}") from None


def cmd_ask(args: argparse.Namespace) -> int:
    """``seamkit ask PROMPT --model PROVIDER:MODEL [...]``; see the module doc for streams and exit
    codes. Configuration errors propagate to :func:`seamkit._cli.main.main` (exit 2)."""
    from seamkit._calls.binding import CallLimits
    from seamkit._cli.common import read_task
    from seamkit._cli.outcomes import EXIT_FAILED, EXIT_OK, UsageError

    options = dict(args.option)
    if "model" in options:
        raise UsageError("give the model with --model PROVIDER:MODEL, not --option model=...")
    _settings_from_options(args, options)
    try:
        binding = _binding(args.model, options)
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None
    from seamkit._calls.ask import secret_option_values

    secrets = secret_option_values(options)
    if secrets:
        from seamkit._cli.scrub import scrub_output

        scrub_output(secrets)
    spec = _load_schema(args.schema) if args.schema else None
    limits = CallLimits(max_cost_usd=args.max_cost, wall_clock_s=args.timeout, max_tokens=args.max_tokens)
    prompt = read_task(args.prompt, "prompt")

    import asyncio
    import json

    from seamkit._calls.ask import ask
    from seamkit._cli.status import WAITING, terminal_status

    streamed: list[str] = []
    status = terminal_status(json_output=args.json)  # a status line until the answer starts

    def on_text(piece: str) -> None:
        if status is not None:
            status.hide()
        streamed.append(piece)
        sys.stdout.write(piece)
        sys.stdout.flush()

    stream = not args.json and spec is None
    if status is not None:
        status.phase(WAITING)
        status.show()
    try:
        answer = asyncio.run(ask(
            binding, prompt, output=spec, limits=limits, system=args.system, temperature=args.temperature,
            on_text=on_text if stream else None,
        ))
    finally:
        if status is not None:
            status.hide()  # on errors and Ctrl-C too: the line erased, the cursor shown
    if args.json:
        sys.stdout.write(json.dumps(answer_to_json(answer), ensure_ascii=False) + "\n")
    elif answer.ok and spec is not None:
        from seamkit._cli.render import jsonable

        sys.stdout.write(json.dumps(jsonable(answer.value), indent=2, ensure_ascii=False) + "\n")
    elif streamed and not "".join(streamed).endswith("\n"):
        sys.stdout.write("\n")
    sys.stdout.flush()
    if not args.json:
        for d in answer.degradations:
            sys.stderr.write(f"seamkit: warning: {_one_line(d)}\n")
        sys.stderr.write(_summary(answer) + "\n")
    if not answer.ok:
        f = answer.failure
        what = f"{f.type}: {f.message}" if f is not None else "no details"
        cls = f" [{f.failure_class.value}]" if f is not None and f.failure_class is not None else ""
        sys.stderr.write(f"seamkit: error: {answer.outcome}{cls}: {_one_line(what)}\n")
        sys.stderr.flush()
        return EXIT_FAILED
    return EXIT_OK
