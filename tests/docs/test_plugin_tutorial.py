"""docs/plugins/index.md works as written.

The tutorial's files (fenced blocks with ``title="path"``) are extracted into a temporary
directory; the plugin is installed with the tutorial's own ``pip install`` command into a fresh
virtual environment that sees the shared environment (seamkit, pytest, hatchling) through a
``site.addsitedir`` ``.pth`` file, so nothing is installed into the shared environment and no
network is needed (``PIP_NO_INDEX``, no build isolation). Then every ``$`` command of the
tutorial's ``console`` blocks runs exactly as shown, and its shown output must appear in what it
prints.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from docs_testlib import Command, console_commands, fenced_blocks, file_blocks, missing_lines

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "plugins" / "index.md"
TIMEOUT = 180.0

@dataclass
class Env:
    """A virtual environment layered on the shared one, and a working directory holding the
    tutorial's files."""

    work: Path
    venv: Path
    python: Path
    environ: dict[str, str] = field(default_factory=dict)

    def shell(self, line: str, *, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Run a shell command line in the working directory, with the venv first on PATH."""
        return subprocess.run(
            ["bash", "-c", line], cwd=self.work, env=self.environ, capture_output=True, text=True,
            timeout=timeout, check=False,
        )

    def run(self, *args: str | Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args], cwd=self.work, env=self.environ, capture_output=True, text=True,
            timeout=timeout, check=False,
        )


def _console_script(name: str, bin_dir: Path, python: Path) -> None:
    """Copy the shared environment's console script ``name`` into ``bin_dir``, pointing its shebang
    at ``python`` (what pip writes when it installs the script into that environment)."""
    source = Path(sys.executable).parent / name
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines and lines[0].startswith("#!"), f"{source} is not a script"
    target = bin_dir / name
    target.write_text(f"#!{python}\n" + "".join(lines[1:]), encoding="utf-8")
    target.chmod(0o755)


def make_env(work: Path) -> Env:
    """A venv (no pip of its own) seeing the shared site-packages, with ``pip``, ``seamkit`` and
    ``pytest`` on its PATH; pip runs offline without build isolation."""
    venv = work.parent / f"{work.name}-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=TIMEOUT,
    ).stdout.strip()
    shared = sysconfig.get_paths()["purelib"]
    # addsitedir (not a bare path line) so the shared env's own .pth files (editable installs) apply.
    Path(purelib, "_seamkit_shared_env.pth").write_text(
        f"import site; site.addsitedir({shared!r})\n", encoding="utf-8"
    )
    bin_dir = venv / "bin"
    pip = bin_dir / "pip"
    pip.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pip --python {shlex.quote(str(python))} "$@"\n',
        encoding="utf-8",
    )
    pip.chmod(0o755)
    for script in ("seamkit", "pytest"):
        _console_script(script, bin_dir, python)
    environ = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("SEAMKIT_", "PYTEST_", "PIP_")) and k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    environ.update(
        PATH=f"{bin_dir}{os.pathsep}{environ.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",  # pip's spelling of "no build isolation"
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PYTHONDONTWRITEBYTECODE="1",
        NO_COLOR="1",
    )
    return Env(work, venv, python, environ)


BLOCKS = fenced_blocks(DOC)
FILES = file_blocks(DOC, BLOCKS)
COMMANDS = console_commands(DOC, BLOCKS)
INSTALL = [c for c in COMMANDS if c.line.startswith("pip install")]


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory: pytest.TempPathFactory) -> Env:
    """The tutorial's files written out and the plugin installed with the tutorial's command."""
    work = tmp_path_factory.mktemp("tutorial")
    for rel, body in FILES.items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    env = make_env(work)
    assert len(INSTALL) == 1, [c.line for c in INSTALL]
    done = env.shell(INSTALL[0].line)
    assert done.returncode == 0, done.stdout + done.stderr
    return env


def test_the_tutorial_holds_every_file_of_the_plugin() -> None:
    assert set(FILES) == {
        "seamkit-hello/pyproject.toml",
        "seamkit-hello/seamkit_hello/__init__.py",
        "seamkit-hello/seamkit_hello/plugin.py",
        "seamkit-hello/seamkit_hello/config.py",
        "seamkit-hello/seamkit_hello/components.py",
        "seamkit-hello/tests/test_hello.py",
        "hello.yaml",
        "typo.yaml",
    }
    assert INSTALL and INSTALL[0].line.split()[-1].strip("'\"").startswith("./seamkit-hello")


def test_plugin_module_registers_lazily() -> None:
    plugin = FILES["seamkit-hello/seamkit_hello/plugin.py"]
    imports = [ln for ln in plugin.splitlines() if ln.startswith(("import ", "from "))]
    assert imports == ["from seamkit.plugin import hookimpl"]
    assert '"seamkit_hello.components:make_greet"' in plugin
    assert 'config="seamkit_hello.config:GreetConfig"' in plugin


def test_plugins_json_lists_greet_and_shout_from_seamkit_hello(tutorial: Env) -> None:
    done = tutorial.run(tutorial.python, "-m", "seamkit._cli.main", "plugins", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    mine = {(r["kind"], r["name"]): r for r in rows if r["distribution"] == "seamkit-hello"}
    assert set(mine) == {("tool", "greet"), ("middleware", "shout")}
    for row in mine.values():
        assert row["status"] == "ok" and row["error"] is None
        assert row["version"] == "0.1.0" and row["plugin"] == "hello"
    assert mine[("tool", "greet")]["description"] == "Greet someone by name"


def test_the_shared_environment_is_untouched(tutorial: Env) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "seamkit._cli.main", "plugins", "--json"],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")},
    )
    assert done.returncode == 0, done.stderr
    assert all(r["distribution"] != "seamkit-hello" for r in json.loads(done.stdout))


def test_listing_plugins_does_not_import_the_factories(tutorial: Env) -> None:
    code = (
        "import contextlib, io, sys\n"
        "from seamkit._cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['plugins']) == 0\n"
        "assert 'seamkit_hello.plugin' in sys.modules\n"
        "print(sorted(m for m in sys.modules if m.startswith('seamkit_hello')))\n"
    )
    done = tutorial.run(tutorial.python, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['seamkit_hello', 'seamkit_hello.plugin']"


def test_the_tutorials_own_tests_pass(tutorial: Env) -> None:
    done = tutorial.run(tutorial.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "seamkit-hello")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b3 passed\b", done.stdout), done.stdout


def test_hello_yaml_runs_greet_through_the_scripted_model(tutorial: Env) -> None:
    done = tutorial.run("seamkit", "run", "hello.yaml", "Greet Ada", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    calls = [e["tool_call"] for e in events if e["kind"] == "tool_call"]
    results = [e["tool_result"] for e in events if e["kind"] == "tool_result"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("greet", {"name": "Ada"})]
    assert [(r["name"], r["content"], r["is_error"]) for r in results] == [("greet", "Howdy, Ada!", False)]
    finished = events[-1]
    assert finished["kind"] == "run_finished"
    assert finished["stop_reason"] == "completed"
    assert finished["output"] == "ADA HAS BEEN GREETED."
    text = "".join(e["text"] for e in events if e["kind"] == "text")
    assert text == "ADA HAS BEEN GREETED."


@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in INSTALL], ids=lambda c: c.line)
def test_console_command_prints_what_the_tutorial_shows(tutorial: Env, command: Command) -> None:
    done = tutorial.shell(command.line)
    fails = any(line.startswith("seamkit: error") for line in command.expected)
    if fails:
        assert done.returncode == 2, done.stdout + done.stderr
    else:
        assert done.returncode == 0, done.stdout + done.stderr
    missing = missing_lines(command.expected, done.stdout + "\n" + done.stderr)
    assert not missing, f"{missing} not in the output of {command.line!r}:\n{done.stdout}{done.stderr}"


def test_the_plugins_listing_shown_matches(tutorial: Env) -> None:
    listing = next(b for b in BLOCKS if b.info == "text" and "seamkit-hello" in b.body and "distribution" in b.body)
    done = tutorial.shell("seamkit plugins")
    assert done.returncode == 0, done.stderr
    missing = missing_lines([ln for ln in listing.body.splitlines() if ln.strip()], done.stdout)
    assert not missing, f"{missing} not in:\n{done.stdout}"


def test_seamkit_run_stdout_is_only_the_shouted_text(tutorial: Env) -> None:
    done = tutorial.shell('seamkit run hello.yaml "Greet Ada"')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ADA HAS BEEN GREETED.\n"
    assert "<- greet: Howdy, Ada!" in done.stderr
    assert re.search(r"run run_[0-9a-f]+: completed in \d+\.\ds, 2 steps", done.stderr), done.stderr


# -- isolation and duplicate names, as the tutorial describes them --------------------------------

TWIN_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"

[project]
name = "seamkit-hello-twin"
version = "0.2.0"
dependencies = ["seamkit"]

[project.entry-points.seamkit]
twin = "seamkit_hello_twin.plugin"
broken = "seamkit_hello_twin.broken"

[tool.hatch.build.targets.wheel]
packages = ["seamkit_hello_twin"]
"""

TWIN_PLUGIN = """\
from seamkit._hookspecs import hookimpl


def make_greet():
    from seamkit import tool

    @tool(side_effecting=False)
    def greet(name: str) -> str:
        \"\"\"Greet, the twin's way.\"\"\"
        return f"Twin says hi to {name}"

    return greet


@hookimpl
def seamkit_register_tools(register):
    register("greet", "seamkit_hello_twin.plugin:make_greet", description="The other greet")
"""

TWIN_BROKEN = 'raise ImportError("this plugin is broken on purpose")\n'


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Env:
    """The tutorial's plugin plus a second distribution that registers ``greet`` too and holds a
    plugin that fails to import."""
    work = tmp_path_factory.mktemp("crowded")
    for rel, body in FILES.items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    twin = work / "seamkit-hello-twin"
    (twin / "seamkit_hello_twin").mkdir(parents=True)
    (twin / "pyproject.toml").write_text(TWIN_PYPROJECT, encoding="utf-8")
    (twin / "seamkit_hello_twin" / "__init__.py").write_text("", encoding="utf-8")
    (twin / "seamkit_hello_twin" / "plugin.py").write_text(TWIN_PLUGIN, encoding="utf-8")
    (twin / "seamkit_hello_twin" / "broken.py").write_text(TWIN_BROKEN, encoding="utf-8")
    env = make_env(work)
    done = env.shell("pip install ./seamkit-hello ./seamkit-hello-twin")
    assert done.returncode == 0, done.stdout + done.stderr
    return env


def test_a_broken_plugin_is_reported_and_the_rest_works(crowded: Env) -> None:
    done = crowded.shell("seamkit plugins --json")
    assert done.returncode == 1, done.stderr  # a plugin failed to load (docs/plugins/tooling.md)
    rows = json.loads(done.stdout)
    broken = [r for r in rows if r["plugin"] == "broken"]
    assert len(broken) == 1
    assert broken[0]["status"] == "failed" and broken[0]["kind"] == "plugin"
    assert "this plugin is broken on purpose" in broken[0]["error"]
    greets = sorted(r["distribution"] for r in rows if (r["kind"], r["name"]) == ("tool", "greet"))
    assert greets == ["seamkit-hello", "seamkit-hello-twin"]

    shown = next(b for b in BLOCKS if b.info == "text" and "failed" in b.body)
    row = shown.body.splitlines()[1]
    done = crowded.shell("seamkit plugins")
    assert done.returncode == 1, done.stderr
    assert not missing_lines([row], done.stdout), done.stdout

    warning = re.search(r"`(seamkit: warning: plugin [^`]+)`", DOC.read_text(encoding="utf-8"))
    assert warning is not None
    done = crowded.shell("seamkit validate typo.yaml")   # any other command: a warning, then its work
    assert warning.group(1) in done.stderr.splitlines(), done.stderr
    assert done.returncode == 2 and "is registered by both" in done.stderr


def test_strict_plugins_turns_a_broken_plugin_into_an_error(crowded: Env) -> None:
    done = crowded.shell("SEAMKIT_STRICT_PLUGINS=1 seamkit plugins")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "broken" in done.stderr and "Traceback" not in done.stderr


def test_a_name_two_distributions_register_needs_from(crowded: Env) -> None:
    done = crowded.shell("SEAMKIT_LOAD_PLUGINS=hello,twin,testkit seamkit validate hello.yaml")
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.search(r"tool 'greet' is registered by both seamkit-hello(-twin)? and seamkit-hello", done.stderr)
    assert "add 'from: <distribution>' to pick one" in done.stderr

    snippet = next(b.body for b in BLOCKS if b.info == "yaml" and "from:" in b.body)
    item = next(line.strip() for line in snippet.splitlines() if "from:" in line)
    hello = FILES["hello.yaml"]
    assert "    - {use: greet, greeting: Howdy}\n" in hello
    (crowded.work / "picked.yaml").write_text(
        hello.replace("- {use: greet, greeting: Howdy}", item), encoding="utf-8"
    )
    done = crowded.shell('SEAMKIT_LOAD_PLUGINS=hello,twin,testkit seamkit run picked.yaml "Greet Ada"')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ADA HAS BEEN GREETED.\n"
    assert "<- greet: Howdy, Ada!" in done.stderr


def test_load_plugins_allow_list(crowded: Env) -> None:
    done = crowded.shell("SEAMKIT_LOAD_PLUGINS=hello seamkit plugins --json")
    assert done.returncode == 0, done.stderr
    assert {r["distribution"] for r in json.loads(done.stdout)} == {"seamkit-hello"}
    done = crowded.shell("SEAMKIT_LOAD_PLUGINS= seamkit plugins --json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    done = crowded.shell('SEAMKIT_LOAD_PLUGINS=seamkit-hello,seamkit seamkit run hello.yaml "Greet Ada"')
    assert done.returncode == 0, done.stderr
    assert "<- greet: Howdy, Ada!" in done.stderr
