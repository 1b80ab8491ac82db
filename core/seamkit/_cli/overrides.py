"""``-m PROVIDER[:MODEL]`` and ``-o KEY=VALUE`` on ``run`` and ``chat``: change a composition
without editing its YAML (see :mod:`seamkit.composition._overrides` for the addressing). Imported
to build the parser, so nothing heavy at module level."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit.composition._overrides import Override

__all__ = ["OVERRIDES_HELP", "add_override_args", "overrides_of", "unstored_note"]

OVERRIDES_HELP = (
    "-m PROVIDER[:MODEL] replaces the agent's model (e.g. -m openai:gpt-4.1-mini, -m llamacpp); -o KEY=VALUE "
    "sets a parameter: a bare temperature, max_tokens or seed is the agent's setting, another bare key a parameter "
    "of its model (-o n_ctx=4096), a dotted path is from the agent (model.n_ctx, settings.seed) or from the top "
    "(agent.max_steps, agents.NAME.model.model); values are YAML scalars. Problems are reported like the file's, "
    "naming the override."
)


def _model(text: str) -> Any:
    from seamkit.composition._overrides import model_override

    try:
        return model_override(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _option(text: str) -> Any:
    from seamkit.composition._overrides import option_override

    try:
        return option_override(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_override_args(p: argparse.ArgumentParser) -> None:
    """Add ``-m/--model`` and ``-o/--option`` (repeatable) to ``p``."""
    p.add_argument("--model", "-m", metavar="PROVIDER[:MODEL]", type=_model, default=None,
                   help="use this model instead of the agent's (e.g. openai:gpt-4.1-mini, or llamacpp for the "
                   "bundled model)")
    p.add_argument("--option", "-o", metavar="KEY=VALUE", type=_option, action="append", default=[],
                   help="set a parameter without editing the file, e.g. temperature=0.2, model.n_ctx=4096, "
                   "agent.max_steps=3 (repeatable)")


def overrides_of(args: argparse.Namespace) -> tuple[Override, ...]:
    """The overrides ``args`` holds: ``-m`` first, then each ``-o`` in order."""
    model = getattr(args, "model", None)
    return ((model,) if model is not None else ()) + tuple(getattr(args, "option", None) or ())


def unstored_note(labels: Sequence[str]) -> str:
    """The line that follows a continue or resume command when overrides were not stored with the
    run (their values may be secrets): which ones to give again. On a line of its own, so that the
    command above it pastes as printed."""
    return (f"(add {', '.join(labels)} again, with its value: not stored with the run, the value may be "
            "a secret)")
