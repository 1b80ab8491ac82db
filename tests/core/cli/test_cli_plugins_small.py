"""Small things of ``seamkit plugins`` and ``seamkit new plugin`` a newcomer tripped over:
``--json`` errors are JSON, ``--check`` and ``--check NAME`` rows have one shape, unclear
targets get clear messages, ``plugin/NAME`` is said to mean a command plugin, ``--help`` warns
about plugins that failed to load, a missing ``--dir`` is created and said so, and a note
quotes the field names it lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testlib import CLI, make_dist
from test_cli_plugins_check import BROKEN_IMPORT, IMPL, PLUGIN

ONLY = {"SEAMKIT_LOAD_PLUGINS": "checkme,broken-import"}  # these two, not every installed plugin


@pytest.fixture
def small_cli(tmp_path: Path) -> CLI:
    root = make_dist(tmp_path / "site-check", "checkme", "checkme_plugin", PLUGIN, extra={"checkme_impl": IMPL},
                     version="1.2")
    make_dist(root, "broken-import", "broken_import_plugin", BROKEN_IMPORT)
    return CLI([root], tmp_path)


@pytest.mark.parametrize("args", [("--check", "god"), ("--check", "a/b/c"), ("show", "god")])
def test_a_usage_error_under_json_is_json_on_stdout(small_cli: CLI, args: tuple[str, ...]) -> None:
    r = small_cli("plugins", *args, "--json", env=ONLY)
    assert r.returncode == 2, r
    data = json.loads(r.stdout)
    assert data["exit_code"] == 2 and data["error"]["type"] == "UsageError"
    assert data["error"]["message"] in r.stderr  # the message on stderr too, for people


def test_check_all_and_check_name_rows_have_one_shape(small_cli: CLI) -> None:
    every = json.loads(small_cli("plugins", "--check", "--json", env=ONLY).stdout)
    one = json.loads(small_cli("plugins", "--check", "good", "--json", env=ONLY).stdout)
    failed = json.loads(small_cli("plugins", "--check", "broken_import_plugin", "--json", env=ONLY).stdout)
    keys = {frozenset(row) for row in every}
    assert len(keys) == 1
    assert {frozenset(one[0]), frozenset(failed[0])} == keys
    row = next(r for r in every if r["name"] == "good")
    assert one[0] == row  # the very same row
    assert failed[0]["ok"] is False and failed[0]["check"] == "failed"


@pytest.mark.parametrize("target", ["a/b/c", "/x", "x/", "tool/"])
def test_unclear_targets_get_a_clear_message(small_cli: CLI, target: str) -> None:
    r = small_cli("plugins", "--check", target, env=ONLY)
    assert r.returncode == 2, r
    assert f"expected NAME or KIND/NAME (e.g. 'calculator' or 'tool/calculator'), got {target!r}" in r.stderr


def test_plugin_kind_is_said_to_mean_a_command_plugin(small_cli: CLI) -> None:
    r = small_cli("plugins", "--check", "widget/good", env=ONLY)
    assert r.returncode == 2 and "command/NAME or plugin/NAME: a plugin that adds commands" in r.stderr, r
    assert "plugin/NAME: a plugin that adds commands" in " ".join(small_cli("plugins", "--help").stdout.split())


def test_plugins_help_lists_exit_codes(small_cli: CLI) -> None:
    text = " ".join(small_cli("plugins", "--help").stdout.split())
    assert "Exit codes: 0 ok; 1 a plugin failed to load, or --check found a problem; 2 usage error" in text


def test_help_warns_about_plugins_that_failed_to_load(small_cli: CLI) -> None:
    r = small_cli("--help", env=ONLY)
    assert r.returncode == 0 and "usage: seamkit" in r.stdout
    assert "warning: plugin 'broken_import_plugin' (broken-import" in r.stderr and "failed to load" in r.stderr
    assert "warning" not in small_cli("--help", env={"SEAMKIT_LOAD_PLUGINS": "checkme"}).stderr


def test_a_missing_dir_is_created_and_said_so(tmp_path: Path) -> None:
    cli = CLI([], tmp_path)
    r = cli("new", "plugin", "tool", "greet", "--dir", "made/here")
    assert r.returncode == 0, r
    assert (tmp_path / "made" / "here" / "seamkit-greet").is_dir()
    assert "note: --dir made/here: made did not exist; created it" in r.stderr
    r = cli("new", "plugin", "tool", "other", "--dir", "made")
    assert r.returncode == 0 and "did not exist" not in r.stderr, r


def test_a_required_field_note_quotes_the_names(small_cli: CLI) -> None:
    r = small_cli("plugins", "--check", "needsconfig", env=ONLY)
    assert "the config requires 'model' (no default)" in r.stdout, r


def test_show_of_a_component_whose_config_is_broken_says_so(small_cli: CLI) -> None:
    r = small_cli("plugins", "show", "notpydantic", env=ONLY)
    assert r.returncode == 1, r
    assert "PluginError: the config of tool 'notpydantic' (checkme) cannot be loaded" in r.stderr
    assert "seamkit plugins --check tool/notpydantic" in r.stderr and "Traceback" not in r.stderr
