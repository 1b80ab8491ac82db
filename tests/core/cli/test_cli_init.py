"""``seamkit init [FILE] [--provider NAME]``: a starter composition with comments for each key,
valid for each provider, its API key referenced as ``${NAME}`` and never written, an existing file
kept without ``--force``; the bundled model's starter runs (slow: loads the model)."""

from __future__ import annotations

import json
import re

import pytest
from cli_testlib import CLI
from seamkit._cli.init_cmd import STARTERS

KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@pytest.mark.parametrize("provider", list(STARTERS))
def test_each_starter_validates_and_never_holds_a_key(cli: CLI, provider: str) -> None:
    secret = "sk-test-must-not-be-written-0123456789"
    env = {var: secret for var in KEYS.values()}
    r = cli("init", f"{provider}.yaml", "--provider", provider, env=env)
    assert r.returncode == 0, r
    # the provider asked for is named (openai-compatible is the openai_chat component)
    assert f"(provider {provider}" in r.stderr, r.stderr
    text = (cli.cwd / f"{provider}.yaml").read_text()
    assert secret not in text
    if provider in KEYS:
        assert f"api_key: ${{{KEYS[provider]}}}" in text
    r = cli("validate", f"{provider}.yaml", env=env)
    assert r.returncode == 0, r
    assert f"model {STARTERS[provider][0]}" in r.stdout


@pytest.mark.parametrize("provider", list(STARTERS))
def test_every_key_of_the_agent_is_explained(cli: CLI, provider: str) -> None:
    assert cli("init", "--provider", provider).returncode == 0
    lines = (cli.cwd / "agent.yaml").read_text().splitlines()  # the default file name
    for i, line in enumerate(lines):
        if re.match(r"^ {0,2}[a-z_]+:", line):  # a key of the top level or of the agent
            assert "#" in line or lines[i - 1].lstrip().startswith("#"), f"no comment for {line!r}"


def test_the_bundled_models_starter_constrains_the_output(cli: CLI) -> None:
    assert cli("init").returncode == 0
    r = cli("validate", "agent.yaml")
    assert r.returncode == 0, r
    assert "model llamacpp" in r.stdout and "output: typed" in r.stdout


def test_an_existing_file_is_kept_without_force(cli: CLI) -> None:
    (cli.cwd / "agent.yaml").write_text("mine\n")
    r = cli("init")
    assert r.returncode == 2, r
    assert "agent.yaml exists: not replaced (pass --force" in r.stderr
    assert (cli.cwd / "agent.yaml").read_text() == "mine\n"
    r = cli("init", "--force", "--provider", "openai")
    assert r.returncode == 0, r
    assert "use: openai" in (cli.cwd / "agent.yaml").read_text()


@pytest.mark.parametrize(("args", "expected"), [
    (["--provider", "nosuch"], "argument --provider/-p: invalid choice: 'nosuch'"),
    (["."], ". is a directory"),
])
def test_bad_use_is_a_usage_error(cli: CLI, args: list[str], expected: str) -> None:
    r = cli("init", *args)
    assert r.returncode == 2, r
    assert expected in r.stderr and "Traceback" not in r.stderr


def test_a_file_name_with_spaces_is_quoted_in_the_comments(cli: CLI) -> None:
    r = cli("init", "my agent.yaml")
    assert r.returncode == 0, r
    assert "seamkit run 'my agent.yaml'" in (cli.cwd / "my agent.yaml").read_text()
    assert cli("validate", "my agent.yaml").returncode == 0


@pytest.mark.slow
def test_the_bundled_models_starter_runs(cli: CLI) -> None:
    assert cli("init", "-o", "x").returncode == 2  # (init takes no overrides)
    assert cli("init").returncode == 0
    r = cli("run", "agent.yaml", "What is the capital of France?", "-o", "threads=2", timeout=300)
    assert r.returncode == 0, r
    assert isinstance(json.loads(r.stdout)["answer"], str)


@pytest.mark.parametrize(("name", "word"), [
    ("sp ace.yaml", "'sp ace.yaml'"),
    ("-dash.yaml", "./-dash.yaml"),  # not an option
    ("nl\nname.yaml", "FILE"),  # no pasted line carries a newline
    ("esc\x1b[31m.yaml", "FILE"),
])
def test_the_next_commands_work_as_printed_and_names_are_shown_visibly(cli: CLI, name: str, word: str) -> None:
    r = cli("init", "--", name)
    assert r.returncode == 0, r
    assert f"next: seamkit validate {word} && seamkit run {word} " in r.stderr
    assert "\x1b" not in r.stderr and "\nname.yaml" not in r.stderr  # control characters shown as \uXXXX
    assert f"seamkit run {word} " in (cli.cwd / name).read_text()


def test_where_init_cannot_write_is_said_clearly(cli: CLI) -> None:
    r = cli("init", "")
    assert r.returncode == 2 and "the file name is empty" in r.stderr, r
    (cli.cwd / "agent.yaml").write_text("mine\n")
    r = cli("init", "agent.yaml/x.yaml")
    assert r.returncode == 2 and "agent.yaml is a file, not a directory" in r.stderr, r
    (cli.cwd / "dangling.yaml").symlink_to(cli.cwd / "nowhere" / "target.yaml")
    r = cli("init", "dangling.yaml")
    assert r.returncode == 2 and "is a symbolic link to" in r.stderr and "does not exist" in r.stderr, r
    assert not (cli.cwd / "nowhere").exists()


def test_a_missing_directory_is_created_and_said(cli: CLI) -> None:
    r = cli("init", "new/dir/agent.yaml")
    assert r.returncode == 0, r
    assert "created directory new/dir" in r.stderr
    assert (cli.cwd / "new" / "dir" / "agent.yaml").is_file()


@pytest.mark.parametrize("name", ["nodir/", "existing/"])
def test_a_name_ending_in_a_slash_is_a_directory_to_write_agent_yaml_in(cli: CLI, name: str) -> None:
    # regression: `init nodir/` wrote a file named nodir, while `init existing/` was refused
    (cli.cwd / "existing").mkdir()
    r = cli("init", name)
    assert r.returncode == 0, r
    assert (cli.cwd / name / "agent.yaml").is_file()
    assert f"wrote {name}agent.yaml" in r.stderr, r.stderr
