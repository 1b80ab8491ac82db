"""``seamkit init [FILE] [--provider NAME]``: write a starter composition (default ``agent.yaml``)
whose comments explain each key, for one provider:

- ``llamacpp`` (default): the bundled Gemma 3 270M, in this process, no key, no network. A tiny base
  model writes free prose badly, so this starter asks for typed output (a JSON answer the grammar
  constrains), which it writes well;
- ``openai``, ``anthropic``: the hosted APIs, the key referenced as ``${OPENAI_API_KEY}`` /
  ``${ANTHROPIC_API_KEY}`` (read from the environment when the file is loaded, never written);
- ``openai-compatible``: any server speaking OpenAI's chat completions API (``llama-server``,
  vLLM, Ollama, LM Studio...), at ``base_url``.

An existing file is never replaced without ``--force``. The written file passes
``seamkit validate`` (with the key's variable set, for the hosted APIs). Exit codes: 0 written,
2 usage error (file exists, unknown provider, cannot write).
A missing directory of the file is created (and said); a dangling symbolic link is refused.

This module is imported to build the parser, so it imports nothing heavy at module level.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["STARTERS", "add_init_parser", "cmd_init", "starter"]

_HEADER = """\
# A seamkit composition: one agent, described in YAML. Check it with
#   seamkit validate {file}
# and use it with
{usage}#
# Every key is described in docs/yaml-reference.md; `seamkit plugins` lists the components
# (models, tools, stores, middlewares) installed here.
"""

_USAGE_FREE = """\
#   seamkit run {file} "What can you help me with?"
#   seamkit chat {file}                 (a conversation; -c ID continues one)
"""

_USAGE_TYPED = """\
#   seamkit run {file} "What is the capital of France?"
#   seamkit chat {file}                 (a conversation; -c ID continues one)
"""

_OVERRIDES = """\
#
# Try another model or setting without editing this file:
#   seamkit run {file} "..." -m openai:gpt-4.1-mini -o temperature=0.2 -o agent.max_steps=3
"""

_AGENT_COMMON = """\
  # The agent's instructions (its system prompt). {{{{name}}}} placeholders are filled with --var name=...
  prompt: |-
    {prompt}
  # Tools the model may call (names from `seamkit plugins`), e.g. [calculator, clock].
  tools: []
  # At most this many model turns per run (each tool round is one).
  max_steps: 6
  # Model settings for every request: sampling temperature, output tokens per turn, seed.
  settings: {settings}
  # Runs are checkpointed in a store, default .seamkit/seamkit.db (SQLite) next to where you run:
  # `seamkit runs list` shows them, `seamkit resume RUN` continues one. Uncomment to choose another:
  # checkpoints: {{use: sqlite, path: .seamkit/seamkit.db}}
"""

_TYPED_OUTPUT = """\
  # Typed output: the answer must validate against this JSON Schema (stdout gets it as JSON).
  # The bundled model is a tiny base model: it writes grammar-constrained JSON well and free prose
  # badly, so this starter asks for a short JSON answer. With a larger model you may delete this
  # block for free-text answers.
  output:
    json_schema:
      type: object
      properties:
        answer: {type: string, maxLength: 200, description: The answer in one short sentence}
      required: [answer]
"""


def _llamacpp(file: str) -> str:
    return (
        _HEADER.format(file=file, usage=_USAGE_TYPED.format(file=file))
        + _OVERRIDES.format(file=file)
        + """\
seamkit: 1            # the format version of this file
agent:                # the agent `seamkit run` and `seamkit chat` use
  name: assistant     # shown in summaries and stored with each run (default: the file name)
  # The model: llama.cpp in this process (CPU), the bundled Gemma 3 270M GGUF (~250 MB, no API key,
  # no network). For a larger model point model_path at a GGUF file, and raise n_ctx for longer
  # conversations, e.g.:
  #   model: {use: llamacpp, model_path: ~/models/gemma-3-4b-it-Q4_K_M.gguf, n_ctx: 8192}
  model: {use: llamacpp}
"""
        + _AGENT_COMMON.format(
            prompt='Answer the question in one short sentence, as JSON.\n    Example:\n    Question: What is the '
                   'capital of Spain?\n    Answer: {"answer": "The capital of Spain is Madrid."}',
            settings="{temperature: 0, max_tokens: 96, seed: 42}",
        )
        + _TYPED_OUTPUT
    )


def _hosted(file: str, use: str, model: str, key_var: str, extra: str = "") -> str:
    return (
        _HEADER.format(file=file, usage=_USAGE_FREE.format(file=file))
        + _OVERRIDES.format(file=file)
        + f"""\
seamkit: 1            # the format version of this file
agent:                # the agent `seamkit run` and `seamkit chat` use
  name: assistant     # shown in summaries and stored with each run (default: the file name)
  # The model: the provider component ({use}) and its parameters (see `seamkit plugins`).
  model:
    use: {use}
    model: {model}
    # The key is read from the environment when the file is loaded (export {key_var}=...);
    # never write the key itself in this file. Values from ${{...}} are masked in all output.
    api_key: ${{{key_var}}}
{extra}"""
        + _AGENT_COMMON.format(prompt="You are a helpful, concise assistant.",
                               settings="{temperature: 0.2, max_tokens: 1024}")
        + """\
  # Retry transient provider errors (rate limits, timeouts) with backoff; add a cost ceiling with
  #   - {use: budget, max_cost_usd: "0.05"}
  middlewares:
    - {use: retry, max_attempts: 3}
"""
    )


def _openai(file: str) -> str:
    return _hosted(file, "openai", "gpt-4.1-mini", "OPENAI_API_KEY")


def _anthropic(file: str) -> str:
    return _hosted(file, "anthropic", "claude-haiku-4-5", "ANTHROPIC_API_KEY")


def _openai_compatible(file: str) -> str:
    return (
        _HEADER.format(file=file, usage=_USAGE_FREE.format(file=file))
        + _OVERRIDES.format(file=file)
        + """\
seamkit: 1            # the format version of this file
agent:                # the agent `seamkit run` and `seamkit chat` use
  name: assistant     # shown in summaries and stored with each run (default: the file name)
  # The model: any server speaking OpenAI's chat completions API (llama-server, vLLM, Ollama,
  # LM Studio...), at base_url; `model` is the name the server knows the model by. Default ports:
  # llama-server 8080; python -m seamkit_llamacpp.server, llama_cpp.server and vLLM 8000;
  # Ollama 11434; LM Studio 1234.
  model:
    use: openai_chat
    model: local-model
    base_url: http://127.0.0.1:8080/v1
    # A server that needs a key: name the environment variable holding it (never the key itself).
    # api_key_env: MY_SERVER_API_KEY
    # A server that cannot take a JSON Schema for typed output, say so:
    # capabilities: {json_schema: false, json_object_schema: true}
"""
        + _AGENT_COMMON.format(prompt="You are a helpful, concise assistant.",
                               settings="{temperature: 0.2, max_tokens: 1024}")
    )


#: provider name -> (the component it uses, the starter's text for a file name)
STARTERS: dict[str, tuple[str, Callable[[str], str]]] = {
    "llamacpp": ("llamacpp", _llamacpp),
    "openai": ("openai", _openai),
    "anthropic": ("anthropic", _anthropic),
    "openai-compatible": ("openai_chat", _openai_compatible),
}


def starter(provider: str, file: str) -> str:
    """The starter composition for ``provider`` (a key of :data:`STARTERS`), naming ``file`` in
    its comments (as :func:`_shell_word` writes it). Raises ``KeyError`` for another provider."""
    return STARTERS[provider][1](_shell_word(file))


def add_init_parser(sub: Any) -> None:
    """Add the ``init`` sub-command to ``sub`` (the ``add_subparsers`` action of ``seamkit``)."""
    p = sub.add_parser(
        "init",
        help="write a starter composition (agent.yaml) for a provider",
        description="Write FILE (default agent.yaml): a starter composition with comments explaining each key, "
        "for the chosen provider. API keys are referenced as ${NAME} (read from the environment), never written. "
        "An existing file is kept unless --force.",
    )
    p.add_argument("file", metavar="FILE", nargs="?", default="agent.yaml", help="where to write (default agent.yaml)")
    p.add_argument("--provider", "-p", metavar="NAME", default="llamacpp", choices=list(STARTERS),
                   help=f"one of: {', '.join(STARTERS)} (default llamacpp: the bundled local model, no key)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    p.set_defaults(func=cmd_init)


def _shell_word(file: str) -> str:
    """``file`` as one word of a command a person can paste: shell-quoted, ``./`` before a name
    that starts with ``-`` (an option otherwise); ``FILE`` for a name with control characters,
    which no pasted line carries."""
    import shlex

    if not file.isprintable():
        return "FILE"
    return shlex.quote(f"./{file}" if file.startswith("-") else file)


def _where_problem(path: Any) -> str | None:
    """Why ``init`` must not write ``path`` (a :class:`~pathlib.Path`), else ``None``: it is a
    directory, a symbolic link to nothing (writing would create its target elsewhere), or one of
    its parents is a file or such a link."""
    from seamkit._cli.render import visible

    if path.is_symlink() and not path.exists():
        return f"{visible(str(path))} is a symbolic link to {visible(str(path.readlink()))}, which does not exist"
    if path.is_dir():
        return f"{visible(str(path))} is a directory: name the file to write, e.g. {visible(str(path / 'agent.yaml'))}"
    for parent in reversed(path.parents):
        if parent.is_symlink() and not parent.exists():
            target = visible(str(parent.readlink()))
            return f"{visible(str(parent))} is a symbolic link to {target}, which does not exist"
        if parent.exists() and not parent.is_dir():
            return f"{visible(str(parent))} is a file, not a directory: it cannot hold {visible(str(path))}"
    return None


def cmd_init(args: argparse.Namespace) -> int:
    """``seamkit init [FILE] [--provider NAME] [--force]``: 0 written, 2 when FILE exists (without
    ``--force``), is empty, a directory, a dangling symbolic link, under a file, or cannot be
    written. A missing directory of FILE is created, and said."""
    from pathlib import Path

    from seamkit._cli.outcomes import EXIT_OK, UsageError
    from seamkit._cli.render import visible

    if not args.file.strip():
        raise UsageError("the file name is empty: name the file to write (default agent.yaml)")
    if args.file.endswith(("/", os.sep)):  # a directory named as one (`init proj/`): the file goes in it
        args.file += "agent.yaml"
    path = Path(args.file)
    shown = visible(args.file)
    why = _where_problem(path)
    if why is not None:
        raise UsageError(why)
    if path.exists() and not args.force:
        raise UsageError(f"{shown} exists: not replaced (pass --force to replace it, or name another file)")
    text = starter(args.provider, args.file)
    created = None
    try:
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
            created = path.parent
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {shown}: {exc.strerror or exc}") from None
    use = STARTERS[args.provider][0]
    if created is not None:
        sys.stderr.write(f"seamkit: created directory {visible(str(created))}\n")
    named = use if use == args.provider else f"{args.provider}: the {use} component"
    sys.stderr.write(f"seamkit: wrote {shown} (provider {named})\n")
    note = _not_installed(use)
    if note:
        sys.stderr.write(f"seamkit: note: {note}\n")
    word = _shell_word(args.file)
    if word == "FILE":
        sys.stderr.write("seamkit: note: the file name holds control characters; FILE below stands for it\n")
    run = f'seamkit run {word} "What is the capital of France?"'
    if args.provider in ("openai", "anthropic"):
        var = "OPENAI_API_KEY" if args.provider == "openai" else "ANTHROPIC_API_KEY"
        sys.stderr.write(f"next: export {var}=... (the key stays out of the file), then: seamkit validate "
                         f"{word} && {run}\n")
    elif args.provider == "openai-compatible":
        sys.stderr.write(f"next: set base_url and model in {shown} for your server, then: seamkit validate "
                         f"{word} && {run}\n")
    else:
        sys.stderr.write(f"next: seamkit validate {word} && {run}\n")
    return EXIT_OK


def _not_installed(use: str) -> str | None:
    """A note when the provider component ``use`` is not installed here."""
    from seamkit._plugins.registry import get_registry

    try:
        get_registry().resolve("provider", use)
    except Exception:
        dist = {"openai_chat": "openai"}.get(use, use)
        return f"the provider {use!r} is not installed here: pip install seamkit-{dist}"
    return None
