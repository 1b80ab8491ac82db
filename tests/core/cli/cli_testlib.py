"""Helpers for the CLI tests (imported by conftest and the tests): run ``python -m seamkit`` in a
subprocess, and fake installed plugin distributions (a ``<name>-<version>.dist-info`` with
``METADATA`` and ``entry_points.txt`` next to the plugin module, on ``PYTHONPATH``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TOOLS_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("add", "cli_test_tools_impl:make_add", description="Add two integers")
    register("boom", "cli_test_tools_impl:make_boom", description="Always fails")
    register("unbuildable", "cli_test_tools_impl:make_unbuildable", description="Factory raises")


@hookimpl
def seamkit_register_commands(cli):
    p = cli.add_parser("hello", help="say hello (a plugin command)")
    p.add_argument("who")
    p.set_defaults(func=lambda args: print(f"hello {args.who}") or 0)
'''

TOOLS_IMPL = '''
from seamkit import tool


@tool(side_effecting=False)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    return a + b


@tool(side_effecting=False)
def boom(reason: str) -> str:
    """Always fails.

    Args:
        reason: why
    """
    raise RuntimeError(f"boom: {reason}")


def make_add():
    return add


def make_boom():
    return boom


def make_unbuildable():
    raise RuntimeError("the unbuildable tool cannot be built")
'''

BROKEN_IMPORT = '''
raise ImportError("needs libfrobnicate, which is not installed")
'''

BROKEN_HOOK = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_providers(register):
    raise RuntimeError("the hook exploded")
'''

MISSPELLED_HOOK = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_provider(register):
    register("never", "x:y")
'''

BROKEN_COMMANDS = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_commands(cli):
    raise RuntimeError("cannot add my commands")
'''


def make_dist(root: Path, dist: str, module: str, source: str, *, extra: Mapping[str, str] | None = None,
              entry_point: str | None = None, version: str = "0.1") -> Path:
    """Write a fake installed distribution ``dist`` whose ``seamkit`` entry point names ``module``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    for name, text in (extra or {}).items():
        (root / f"{name}.py").write_text(textwrap.dedent(text))
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[seamkit]\n{entry_point or module} = {module}\n")
    return root


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"Result(rc={self.returncode}, stdout={self.stdout!r}, stderr={self.stderr!r})"


@dataclass
class CLI:
    """Runs ``python -m seamkit`` with the given plugin directories on ``PYTHONPATH``."""

    paths: list[Path]
    cwd: Path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
        env["PYTHONPATH"] = os.pathsep.join([*map(str, self.paths), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["PYTHONIOENCODING"] = "utf-8"
        env.pop("COLUMNS", None)
        env.update(extra or {})
        return env

    def __call__(self, *args: str, env: Mapping[str, str] | None = None, input: str | None = None,
                 timeout: float = 60) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "seamkit", *args],
            cwd=self.cwd, env=self.env(env), input=input, capture_output=True, text=True, timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def popen(self, *args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "seamkit", *args],
            cwd=self.cwd, env=self.env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )



__all__: Sequence[str] = ["CLI", "Result", "make_dist"]
