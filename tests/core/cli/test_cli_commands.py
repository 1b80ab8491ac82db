"""``seamkit validate | schema | plugins``, usage errors, ``--help`` and ``python -m seamkit``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

VALID = """
seamkit: 1
agent:
  name: adder
  model: {use: scripted, turns: ["5"]}
  tools: [add, {use: boom}]
"""


def test_validate_ok(cli, write):
    path = write("ok.yaml", VALID)
    r = cli("validate", str(path))
    assert r.returncode == 0, r
    assert r.stdout.startswith("ok: ")
    assert "'adder'" in r.stdout and "scripted" in r.stdout and "add, boom" in r.stdout


def test_validate_lists_every_issue(cli, write):
    path = write("bad.yaml", """
        seamkit: 1
        agent:
          name: bad
          model: {use: scripted, turns: ["x"], temprature: 0.5}
          max_stepz: 3
        """)
    r = cli("validate", str(path))
    assert r.returncode == 2, r
    lines = [line for line in r.stderr.splitlines() if line.startswith(str(path))]
    assert len(lines) >= 2, r.stderr  # both problems, one line each, file:line:col first
    assert any("temprature" in line for line in lines)
    assert any("max_stepz" in line for line in lines)
    assert "ConfigError" in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_schema_stdout_and_file(cli, tmp_path):
    r = cli("schema")
    assert r.returncode == 0, r
    schema = json.loads(r.stdout)
    assert isinstance(schema, dict)
    text = json.dumps(schema)
    assert "scripted" in text  # installed components' configs are included
    assert "turns" in text
    out = tmp_path / "schema.json"
    r2 = cli("schema", "--output", str(out))
    assert r2.returncode == 0, r2
    assert json.loads(out.read_text()) == schema
    assert r2.stdout == ""
    r3 = cli("schema", "--output", str(tmp_path / "no" / "such" / "dir" / "s.json"))
    assert r3.returncode == 2 and "cannot write" in r3.stderr


def test_plugins_table_lists_components(cli):
    r = cli("plugins")
    assert r.returncode == 0, r
    header = r.stdout.splitlines()[0].split()
    assert header == ["distribution", "version", "kind", "name", "status", "description"]
    rows = [line.split()[:5] for line in r.stdout.splitlines()[1:]]
    assert ["seamkit", "0.1.0", "provider", "scripted", "ok"] in rows
    assert ["cli-test-tools", "0.1", "tool", "add", "ok"] in rows


def test_plugins_json(cli):
    r = cli("plugins", "--json")
    assert r.returncode == 0, r
    rows = json.loads(r.stdout)
    assert isinstance(rows, list)
    for row in rows:
        assert {"distribution", "version", "kind", "name", "status", "error"} <= set(row)
    scripted = [x for x in rows if x["name"] == "scripted"]
    assert scripted and scripted[0]["kind"] == "provider" and scripted[0]["status"] == "ok"
    assert scripted[0]["error"] is None and scripted[0]["distribution"] == "seamkit"


def test_unknown_command_exits_2(cli):
    r = cli("frobnicate")
    assert r.returncode == 2, r
    assert "invalid choice" in r.stderr and "frobnicate" in r.stderr
    assert "Traceback" not in r.stderr


def test_no_command_and_bad_option_exit_2(cli):
    r = cli()
    assert r.returncode == 2 and "command is required" in r.stderr
    r = cli("run", "--nope", "f.yaml", "t")
    assert r.returncode == 2 and "--nope" in r.stderr
    r = cli("run", "only-a-file.yaml")
    assert r.returncode == 2 and "TASK" in r.stderr


def test_help_lists_builtin_and_plugin_commands(cli):
    r = cli("--help")
    assert r.returncode == 0, r
    for name in ("run", "validate", "schema", "plugins", "hello"):
        assert name in r.stdout


def test_plugin_command_runs(cli):
    r = cli("hello", "world")
    assert r.returncode == 0, r
    assert r.stdout == "hello world\n"


def test_console_script_matches_python_m(cli):
    seamkit = str(Path(sys.executable).parent / "seamkit")
    for args in (["--version"], ["plugins", "--json"]):
        proc = subprocess.run([seamkit, *args], capture_output=True, text=True, env=cli.env(), timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert cli(*args).stdout == proc.stdout
    assert proc.stdout.count('"cli-test-tools"') == 3  # add, boom, unbuildable


def test_help_imports_nothing_heavy(cli):
    code = (
        "import sys\n"
        "from seamkit._cli.main import main\n"
        "rc = main(['--help'])\n"
        "heavy = [m for m in ('pydantic', 'rich', 'seamkit._agent', 'seamkit.composition', 'yaml') "
        "if m in sys.modules]\n"
        "print('HEAVY', heavy, rc, file=sys.stderr)\n"
    )
    # only the host's own plugins and the tools test plugin: third-party plugins may import what they like
    env = cli.env({"SEAMKIT_LOAD_PLUGINS": "testkit,cli-test-tools"})
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "HEAVY [] 0" in proc.stderr, proc.stderr


DESCRIPTION_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("terse", "desc_tools_impl:make_terse", description="A tool with a one-word description")
    register("blank", "desc_tools_impl:make_blank", description="A tool whose description is blank")
'''

DESCRIPTION_IMPL = '''
from seamkit import tool
from seamkit.values import ToolSchema


@tool(side_effecting=False)
def terse(x: int) -> int:
    """Increments."""
    return x + 1


class Blank:
    schema = ToolSchema("blank", "  ", {"type": "object", "properties": {}}, False)

    def validate(self, arguments):
        return dict(arguments)

    async def invoke(self, arguments, ctx):
        return "ok"


def make_terse():
    return terse


def make_blank():
    return Blank()
'''


def test_tool_descriptions_are_checked_by_validate_and_run(cli, write, tmp_path):
    # issue 10 item 17: a tool without a description reached the model; a very short one passed silently
    from cli_testlib import CLI, make_dist

    dist = make_dist(tmp_path / "site-desc", "desc-tools", "desc_tools", DESCRIPTION_PLUGIN,
                     extra={"desc_tools_impl": DESCRIPTION_IMPL})
    run = CLI([*cli.paths, dist], cli.cwd)
    terse = write("terse.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: ["5"]}
          tools:
            - add
            - terse
        """)
    r = run("validate", str(terse))
    assert r.returncode == 0, r
    warnings = [line for line in r.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2, r.stderr  # add ("Add two integers.") and terse ("Increments.")
    assert f"{terse}:6:" in warnings[1] and "agent.tools[1]" in warnings[1] and "'terse'" in warnings[1]
    assert "'Increments.'" in warnings[1] and "when to use it" in warnings[1]

    blank = write("blank.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: ["5"]}
          tools: [add, blank]
        """)
    for args in (("validate", str(blank)), ("run", str(blank), "hi")):
        r = run(*args)
        assert r.returncode == 2, r
        assert "agent.tools[1]" in r.stderr and "'blank' has no description" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


class _Chain:
    """A checkpointer stand-in holding runs ``r0 <- r1 <- ...``: ``r{i}``'s parent is ``r{i+1}``
    (``parents`` maps other links); only ``file_at`` records an agent file."""

    def __init__(self, file_at: str | None, parents: dict[str, str] | None = None) -> None:
        self.file_at, self.parents, self.closed = file_at, parents or {}, False

    async def latest(self, run_id: str) -> object:
        import types

        n = int(run_id[1:])
        meta = {"agent_file": "/x/f.yaml"} if run_id == self.file_at else {}
        return types.SimpleNamespace(metadata=meta, parent_run_id=self.parents.get(run_id, f"r{n + 1}"))

    async def aclose(self) -> None:
        self.closed = True


def test_resume_looks_for_the_agent_file_up_to_eight_parent_runs() -> None:
    import asyncio

    from seamkit._cli.commands import _recorded_agent_file

    for file_at, found in (("r0", "/x/f.yaml"), ("r8", "/x/f.yaml"), ("r9", None)):
        cp = _Chain(file_at)
        result = asyncio.run(_recorded_agent_file(cp, "r0"))
        assert result is not None and result[1] == found and cp.closed, file_at
    cycle = _Chain(None, {"r1": "r0"})  # a parent link back to the run itself ends the search
    result = asyncio.run(_recorded_agent_file(cycle, "r0"))
    assert result is not None and result[1] is None
