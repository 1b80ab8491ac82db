"""Plugin isolation as the CLI shows it: broken plugins are listed as failed and do not stop
``seamkit run``; ``SEAMKIT_STRICT_PLUGINS`` and ``SEAMKIT_LOAD_PLUGINS``."""

from __future__ import annotations

import json

import pytest
from cli_testlib import BROKEN_COMMANDS, BROKEN_HOOK, CLI, make_dist

SCRIPTED = """
seamkit: 1
agent:
  name: plain
  model: {use: scripted, turns: [{tool_calls: [{name: add, arguments: {a: 1, b: 2}}]}, "three"]}
  tools: [add]
"""


@pytest.fixture
def broken_cli(tmp_path, tools_dist, broken_dists) -> CLI:
    return CLI([tools_dist, broken_dists], tmp_path)


def _by_dist(rows):
    return {r["distribution"]: r for r in rows}


def test_plugins_lists_failed_plugins_with_errors(broken_cli):
    r = broken_cli("plugins", "--json")
    assert r.returncode == 1, r  # a plugin failed to load: listing says so in its exit status too
    rows = _by_dist(json.loads(r.stdout))
    imp = rows["broken-import"]
    assert imp["status"] == "failed" and imp["version"] == "0.1"
    assert "ImportError" in imp["error"] and "libfrobnicate" in imp["error"]
    hook = rows["broken-hook"]
    assert hook["status"] == "failed" and "the hook exploded" in hook["error"]
    miss = rows["misspelled-hook"]
    assert miss["status"] == "failed"
    assert "seamkit_register_provider" in miss["error"]
    assert "did you mean 'seamkit_register_providers'" in miss["error"]
    assert rows["cli-test-tools"]["status"] == "ok"


def test_plugins_table_shows_failures(broken_cli):
    r = broken_cli("plugins")
    assert r.returncode == 1, r
    line = next(x for x in r.stdout.splitlines() if x.startswith("broken-import"))
    assert "failed" in line
    # the errors, whole, under the table
    line = next(x for x in r.stdout.splitlines() if x.startswith("error: plugin") and "(broken-import " in x)
    assert "libfrobnicate" in line
    line = next(x for x in r.stdout.splitlines() if x.startswith("error: plugin") and "(misspelled-hook " in x)
    assert "did you mean" in line
    assert "Traceback" not in r.stderr
    assert "warning" not in r.stderr  # `plugins` itself shows them; no warning needed


def test_run_works_despite_broken_plugins(broken_cli, write):
    path = write("plain.yaml", SCRIPTED)
    r = broken_cli("run", str(path), "1 + 2?")
    assert r.returncode == 0, r
    assert r.stdout == "three\n"
    assert "<- add: 3" in r.stderr
    # a short warning per failed plugin, pointing at `seamkit plugins`
    assert "broken_import_plugin" in r.stderr and "seamkit plugins" in r.stderr
    assert "Traceback" not in r.stderr


def test_strict_plugins_exit_2_naming_the_plugin(tmp_path, tools_dist, write):
    root = make_dist(tmp_path / "site-strict", "broken-hook", "broken_hook_plugin", BROKEN_HOOK)
    strict = CLI([tools_dist, root], tmp_path)
    path = write("plain.yaml", SCRIPTED)
    for args in (("run", str(path), "go"), ("plugins",)):
        r = strict(*args, env={"SEAMKIT_STRICT_PLUGINS": "1"})
        assert r.returncode == 2, r
        assert "broken_hook_plugin" in r.stderr and "broken-hook" in r.stderr
        assert "the hook exploded" in r.stderr
        assert "SEAMKIT_STRICT_PLUGINS" in r.stderr
        assert "Traceback" not in r.stderr
    assert strict("run", str(path), "go").returncode == 0  # not strict: skipped, run works


def test_strict_plugins_broken_import(tmp_path, tools_dist, broken_dists, write):
    strict = CLI([tools_dist, broken_dists], tmp_path)
    r = strict("plugins", env={"SEAMKIT_STRICT_PLUGINS": "1"})
    assert r.returncode == 2, r
    assert any(n in r.stderr for n in ("broken_import_plugin", "broken_hook_plugin", "misspelled_hook_plugin"))


def test_empty_allow_list_loads_nothing(cli, write):
    path = write("plain.yaml", SCRIPTED)
    r = cli("run", str(path), "go", env={"SEAMKIT_LOAD_PLUGINS": ""})
    assert r.returncode == 2, r
    assert "scripted" in r.stderr
    assert "SEAMKIT_LOAD_PLUGINS" in r.stderr
    assert "Traceback" not in r.stderr
    listed = cli("plugins", "--json", env={"SEAMKIT_LOAD_PLUGINS": ""})
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    # regression: the table said "no plugins installed" when a list kept every plugin out
    table = cli("plugins", env={"SEAMKIT_LOAD_PLUGINS": "nosuch"})
    assert table.returncode == 0
    assert "installed" not in table.stdout
    assert "no plugins loaded (SEAMKIT_LOAD_PLUGINS='nosuch' in force)" in table.stdout


def test_allow_list_selects_plugins(broken_cli, write):
    env = {"SEAMKIT_LOAD_PLUGINS": "testkit, cli-test-tools"}
    rows = json.loads(broken_cli("plugins", "--json", env=env).stdout)
    assert {r["distribution"] for r in rows} == {"seamkit", "cli-test-tools"}
    path = write("plain.yaml", SCRIPTED)
    r = broken_cli("run", str(path), "go", env=env)
    assert r.returncode == 0, r
    assert "warning" not in r.stderr  # the broken plugins were not even loaded


def test_plugin_whose_command_hook_raises_is_a_warning(tmp_path, tools_dist, write):
    root = make_dist(tmp_path / "site-cmd", "broken-commands", "broken_commands_plugin", BROKEN_COMMANDS)
    c = CLI([tools_dist, root], tmp_path)
    r = c("hello", "you")
    assert r.returncode == 0, r
    assert r.stdout == "hello you\n"
    assert "warning" in r.stderr and "broken_commands_plugin" in r.stderr
    assert "cannot add my commands" in r.stderr
    strict = c("hello", "you", env={"SEAMKIT_STRICT_PLUGINS": "1"})
    assert strict.returncode == 2 and "cannot add my commands" in strict.stderr


# -- one plugin module under two entry points; the deny list (issue 10, item 19) ---------------------


def _also_listed(root, dist: str, module: str, *entry_points: str) -> None:
    """Add entry points naming ``module`` to the fake distribution ``dist`` under ``root``."""
    (info,) = root.glob(f"{dist.replace('-', '_')}-*.dist-info")
    with (info / "entry_points.txt").open("a") as f:
        f.writelines(f"{name} = {module}\n" for name in entry_points)


def test_one_module_under_two_entry_points_and_two_distributions_loads_once(tmp_path, tools_dist, write):
    _also_listed(tools_dist, "cli-test-tools", "cli_test_tools", "cli_test_tools_alias")
    twin = tmp_path / "site-twin"  # a second distribution whose entry points name the same module
    (twin / "cli_test_tools_twin-0.2.dist-info").mkdir(parents=True)
    (twin / "cli_test_tools_twin-0.2.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cli-test-tools-twin\nVersion: 0.2\n")
    (twin / "cli_test_tools_twin-0.2.dist-info" / "entry_points.txt").write_text(
        "[seamkit]\ntwin = cli_test_tools\ntwin_again = cli_test_tools\n")
    c = CLI([tools_dist, twin], tmp_path)
    rows = json.loads(c("plugins", "--json").stdout)
    assert [r for r in rows if r["status"] != "ok"] == []
    assert sorted(r["name"] for r in rows if r["distribution"].startswith("cli-test-tools")) == [
        "add", "boom", "unbuildable"]  # registered once, not once per entry point
    r = c("run", str(write("plain.yaml", SCRIPTED)), "go", env={"SEAMKIT_STRICT_PLUGINS": "1"})
    assert r.returncode == 0 and r.stdout == "three\n", r
    assert "warning" not in r.stderr


@pytest.mark.parametrize("deny", ["cli_test_tools", "cli-test-tools", "cli_test_tools_alias", " x, cli-test-tools "])
def test_deny_list_keeps_a_plugin_out_under_any_of_its_names(tmp_path, tools_dist, broken_dists, deny):
    _also_listed(tools_dist, "cli-test-tools", "cli_test_tools", "cli_test_tools_alias")
    c = CLI([tools_dist, broken_dists], tmp_path)
    rows = json.loads(c("plugins", "--json", env={"SEAMKIT_DISABLE_PLUGINS": deny}).stdout)
    dists = {r["distribution"] for r in rows}
    assert "cli-test-tools" not in dists and {"seamkit", "broken-import"} <= dists


def test_deny_list_wins_over_the_allow_list_and_is_named_when_a_component_is_missing(broken_cli, write):
    env = {"SEAMKIT_LOAD_PLUGINS": "testkit,cli-test-tools,broken-hook",
           "SEAMKIT_DISABLE_PLUGINS": "broken-hook,testkit"}
    rows = json.loads(broken_cli("plugins", "--json", env=env).stdout)
    assert {r["distribution"] for r in rows} == {"cli-test-tools"}
    assert json.loads(broken_cli("plugins", "--json", env={"SEAMKIT_DISABLE_PLUGINS": ""}).stdout) != []
    r = broken_cli("run", str(write("plain.yaml", SCRIPTED)), "go", env=env)
    assert r.returncode == 2 and "scripted" in r.stderr, r
    assert "SEAMKIT_DISABLE_PLUGINS='broken-hook,testkit'" in r.stderr and "Traceback" not in r.stderr
