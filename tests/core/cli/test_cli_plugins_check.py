"""``seamkit plugins --check``: each way a component can be broken is found and said precisely,
with exit 1; a healthy component passes; listing alone imports no component."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testlib import BROKEN_IMPORT, CLI, make_dist

PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("good", "checkme_impl:make_good", config="checkme_impl:GoodConfig")
    register("noimport", "checkme_gone:make")
    register("typo", "checkme_impl:make_godo")
    register("notpydantic", "checkme_impl:make_good", config="checkme_impl:NotAModel")
    register("baddefault", "checkme_impl:make_good", config="checkme_impl:BadDefault")
    register("needsconfig", "checkme_impl:make_good", config="checkme_impl:Required")
    register("raises", "checkme_impl:make_raising")
    register("notatool", "checkme_impl:make_not_a_tool")


@hookimpl
def seamkit_register_providers(register):
    register("good", "checkme_impl:BadModel")
'''

IMPL = '''
from pydantic import BaseModel, ConfigDict, Field
from seamkit import tool


class GoodConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefix: str = ""


class NotAModel:
    prefix = ""


class BadDefault(BaseModel):
    model_config = ConfigDict(validate_default=True)
    size: int = Field(default=-1, ge=0)


class Required(BaseModel):
    model: str


def make_good(config=None):
    @tool(side_effecting=False)
    def good(text: str) -> str:
        """Echo.

        Args:
            text: what
        """
        return text

    return good


def make_raising():
    raise RuntimeError("no credentials in the environment")


def make_not_a_tool():
    return object()


class BadModel:
    provider = "bad"
    model = "bad-1"

    async def stream(self, request):  # no yield: a coroutine, not an async iterator
        return None
'''


@pytest.fixture
def check_cli(tmp_path: Path) -> CLI:
    root = make_dist(tmp_path / "site-check", "checkme", "checkme_plugin", PLUGIN, extra={"checkme_impl": IMPL},
                     version="1.2")
    make_dist(root, "broken-import", "broken_import_plugin", BROKEN_IMPORT)
    return CLI([root], tmp_path)


def _check(cli: CLI, target: str) -> tuple[int, str]:
    r = cli("plugins", "--check", target)
    assert "Traceback" not in r.stderr + r.stdout, r
    return r.returncode, r.stdout


def test_a_healthy_component_passes(check_cli: CLI) -> None:
    code, out = _check(check_cli, "tool/good")
    assert code == 0, out
    assert out.splitlines()[0] == "tool 'good' (checkme 1.2, plugin 'checkme_plugin'): ok"


@pytest.mark.parametrize(("name", "expected"), [
    ("noimport", "factory 'checkme_gone:make' does not import: ModuleNotFoundError: No module named 'checkme_gone'"),
    ("typo", "has no attribute 'make_godo'; did you mean 'make_good'?"),
    ("notpydantic", "config 'checkme_impl:NotAModel' is type <class 'checkme_impl.NotAModel'>, not a pydantic model"),
    ("baddefault", "the default config does not validate: size: Input should be greater than or equal to 0"),
    ("raises", "factory 'checkme_impl:make_raising' raised RuntimeError: no credentials in the environment"),
    ("notatool", "the factory built object, which does not satisfy the tool port (ToolPort): missing schema; "
                 "missing validate(); missing invoke()"),
])
def test_each_broken_component_is_said_precisely(check_cli: CLI, name: str, expected: str) -> None:
    code, out = _check(check_cli, name)
    assert code == 1, out
    assert out.startswith(f"tool '{name}' (checkme 1.2, plugin 'checkme_plugin'): 1 problem\n"), out
    assert expected in out


def test_a_config_with_required_fields_is_a_note_not_a_problem(check_cli: CLI) -> None:
    code, out = _check(check_cli, "needsconfig")
    assert code == 0, out
    assert "note: not built: the config requires 'model' (no default)" in out
    # not called, and no return annotation to check instead: not "ok", which would claim a checked port
    assert out.startswith("tool 'needsconfig' (checkme 1.2, plugin 'checkme_plugin'): unchecked\n"), out
    assert "note: not checked: the factory has no return annotation" in out
    r = check_cli("plugins", "--check", "--json")
    row = next(x for x in json.loads(r.stdout) if x["name"] == "needsconfig")
    assert row["check"] == "unchecked", row
    (one,) = json.loads(check_cli("plugins", "--check", "tool/needsconfig", "--json").stdout)
    assert one["ok"] is True and one["checked"] is False


def test_a_name_under_two_kinds_checks_both_and_kind_slash_name_picks_one(check_cli: CLI) -> None:
    code, out = _check(check_cli, "good")
    assert code == 1
    assert "tool 'good' (checkme 1.2, plugin 'checkme_plugin'): ok" in out
    assert ("provider 'good' (checkme 1.2, plugin 'checkme_plugin'): 1 problem\n"
            "  - class BadModel does not satisfy the model port (LLMPort): stream() is an 'async def' without "
            "'yield'") in out
    assert out.index("missing chat()") < out.index("tool 'good'")
    code, out = _check(check_cli, "provider/good")
    assert code == 1 and "tool 'good'" not in out


def test_a_plugin_whose_module_fails_to_import(check_cli: CLI) -> None:
    code, out = _check(check_cli, "broken_import_plugin")
    assert code == 1
    assert out.startswith("plugin 'broken_import_plugin' (broken-import 0.1): failed to load: import failed: "
                          "ImportError:")
    assert "libfrobnicate" in out


def test_unknown_names_and_kinds_are_usage_errors(check_cli: CLI) -> None:
    r = check_cli("plugins", "--check", "god")
    assert r.returncode == 2, r
    assert "no component, command plugin or failed plugin named 'god' is installed; did you mean 'good'?" in r.stderr
    r = check_cli("plugins", "--check", "widget/good")
    assert r.returncode == 2, r
    assert "no component of kind 'widget' is installed (kinds: " in r.stderr
    assert "Traceback" not in r.stderr


def test_check_json(check_cli: CLI) -> None:
    r = check_cli("plugins", "--check", "typo", "--json")
    assert r.returncode == 1, r
    (row,) = json.loads(r.stdout)
    assert row["kind"] == "tool" and row["name"] == "typo" and row["ok"] is False
    assert row["distribution"] == "checkme" and row["version"] == "1.2"
    assert "did you mean 'make_good'" in row["problems"][0]


def test_check_all_adds_a_column_and_fails_on_any_problem(check_cli: CLI) -> None:
    r = check_cli("plugins", "--check", "--json")
    assert r.returncode == 1, r
    rows = {(x["kind"], x["name"]): x for x in json.loads(r.stdout)}
    assert rows[("tool", "good")]["check"] == "ok" and rows[("tool", "good")]["problems"] == []
    assert rows[("tool", "typo")]["check"] == "failed"
    assert rows[("plugin", "broken_import_plugin")]["check"] == "failed"
    table = check_cli("plugins", "--check")
    assert table.returncode == 1
    line = next(x for x in table.stdout.splitlines() if " typo " in x)
    assert "failed" in line and "make_godo" in line
    header = table.stdout.splitlines()[0].split()
    assert header == ["distribution", "version", "kind", "name", "status", "check", "problems"]


def test_listing_without_check_imports_no_component(check_cli: CLI) -> None:
    r = check_cli("plugins", "--json")
    assert r.returncode == 1, r  # broken-import failed to load
    rows = json.loads(r.stdout)
    assert all("check" not in x for x in rows)
    assert {x["name"] for x in rows if x["distribution"] == "checkme"} >= {"typo", "noimport"}
    assert all(x["status"] == "ok" for x in rows if x["distribution"] == "checkme")


# -- a plugin cannot take the CLI down ---------------------------------------------------------------

EXITING_PLUGIN = "raise SystemExit(7)\n"

HOSTILE_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("exits", "hostile_impl:exiting")
    register("prints", "hostile_impl:printing")


@hookimpl
def seamkit_register_commands(cli):
    cli.add_parser("greet-me", help="a plugin command")
'''

HOSTILE_IMPL = '''
import sys

from seamkit import tool


@tool(side_effecting=False)
def echo(text: str) -> str:
    """Echo.

    Args:
        text: what
    """
    return text


def exiting():
    sys.exit(5)


def printing():
    print('{"oops": "factory chatter"}')
    return echo
'''

CLASHING_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_commands(cli):
    cli.add_parser("plugins", help="takes over a built-in")
'''


@pytest.fixture
def hostile_cli(tmp_path: Path) -> CLI:
    root = make_dist(tmp_path / "site-hostile", "exits-at-import", "exits_plugin", EXITING_PLUGIN)
    make_dist(root, "hostile", "hostile_plugin", HOSTILE_PLUGIN, extra={"hostile_impl": HOSTILE_IMPL})
    make_dist(root, "clashing", "clashing_plugin", CLASHING_PLUGIN)
    return CLI([root], tmp_path)


def test_a_plugin_raising_system_exit_at_import_is_a_failed_row(hostile_cli: CLI) -> None:
    r = hostile_cli("--help")
    assert r.returncode == 0 and "plugins" in r.stdout, r
    rows = {x["name"]: x for x in json.loads(hostile_cli("plugins", "--json").stdout)}
    assert rows["exits_plugin"]["status"] == "failed"
    assert rows["exits_plugin"]["error"] == "import failed: SystemExit: 7"


def test_check_all_survives_a_factory_calling_sys_exit(hostile_cli: CLI) -> None:
    r = hostile_cli("plugins", "--check", "--json")
    assert r.returncode == 1, r
    rows = {(x["kind"], x["name"]): x for x in json.loads(r.stdout)}  # what the factory printed is not in it
    assert rows[("tool", "exits")]["problems"] == ["factory 'hostile_impl:exiting' raised SystemExit: 5"]
    assert rows[("tool", "prints")]["check"] == "ok"
    assert "factory chatter" not in r.stdout + r.stderr  # the check's child wrote it to its own log


def test_a_command_named_like_a_built_in_is_that_plugins_failure(hostile_cli: CLI) -> None:
    r = hostile_cli("plugins", "--json")
    assert r.returncode == 1, r  # the built-in `plugins` still runs, exit 1: a plugin failed
    rows = {x["name"]: x for x in json.loads(r.stdout)}
    assert rows["clashing_plugin"]["status"] == "failed"
    assert "conflicting subparser: plugins" in rows["clashing_plugin"]["error"]
    assert "could not add its commands" in r.stderr
    check = hostile_cli("plugins", "--check", "clashing_plugin")
    assert check.returncode == 1, check
    assert check.stdout.startswith("command 'clashing_plugin' (clashing 0.1, plugin 'clashing_plugin'): 1 problem")


def test_check_finds_a_command_plugin(hostile_cli: CLI) -> None:
    for target in ("hostile_plugin", "command/hostile_plugin", "plugin/hostile_plugin"):
        r = hostile_cli("plugins", "--check", target)
        assert r.returncode == 0, r
        assert "command 'hostile_plugin' (hostile 0.1, plugin 'hostile_plugin'): ok" in r.stdout
        assert "note: commands added: greet-me" in r.stdout


TWIN_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_guardrails(register):
    register("twin", "builtins:dict")
'''


def test_two_distributions_registering_one_name_are_reported_ambiguous(tmp_path: Path) -> None:
    root = make_dist(tmp_path / "site-twins", "twin-a", "twin_a_plugin", TWIN_PLUGIN)
    make_dist(root, "twin-b", "twin_b_plugin", TWIN_PLUGIN)
    cli = CLI([root], tmp_path)
    rows = [x for x in json.loads(cli("plugins", "--json").stdout) if x["name"] == "twin"]
    assert [(x["distribution"], x["status"]) for x in rows] == [("twin-a", "ok"), ("twin-b", "ok")]
    assert rows[0]["error"].startswith("ambiguous: twin-b also registers guardrail 'twin'; 'use: twin' is refused")
    r = cli("plugins", "--check", "guardrail/twin")
    assert r.returncode == 1, r
    assert "  - ambiguous: guardrail 'twin' is also registered by twin-b (plugin 'twin_b_plugin')" in r.stdout
