"""A plugin author is told when their code imports a private host module: ``plugins --check``
notes the private (or moved) ``seamkit`` modules the component's distribution imports, read from
its source; and importing an old module path says where the module went."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from seamkit._plugins.check import check_component
from seamkit._plugins.private_imports import private_imports, private_names
from seamkit._plugins.registry import ComponentSpec

TOOL = '''
from seamkit import tool


@tool(side_effecting=False)
def noop() -> str:
    """Nothing."""
    return ""


def build():
    return noop
'''


def _package(root: Path, name: str, helper: str) -> Path:
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "comp.py").write_text(TOOL)
    (pkg / "helper.py").write_text(helper)
    return pkg


def test_check_notes_the_private_modules_a_plugin_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _package(tmp_path, "privy_pkg", "import seamkit._agent.loop\nfrom seamkit import _ports\n"
                                    "from seamkit.durability import approvals\nfrom seamkit.plugin import hookimpl\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = ComponentSpec("tool", "privy", "privy_pkg.comp:build", None, "", "privy", "seamkit-privy-absent", "0.1")
    check = check_component(spec)
    assert check.ok, check.problems
    note = next(n for n in check.notes if "private host modules" in n)
    assert "(seamkit._agent.loop, seamkit._ports, seamkit.durability)" in note and "public-api.md" in note


def test_a_plugin_importing_only_public_names_gets_no_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _package(tmp_path, "clean_pkg", "from seamkit.plugin import hookimpl\nimport seamkit.values\nfrom . import _mine\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert private_imports("seamkit-clean-absent", ("clean_pkg.comp",)) == ()


def test_private_names_are_those_with_an_underscore_or_an_old_path() -> None:
    assert private_names({"seamkit", "seamkit.plugin", "seamkit.values", "seamkit.testing", "seamkit._cli.main",
                          "seamkit.composition._build", "seamkit.agent", "seamkit_openai._x", "os"}) == [
        "seamkit._cli.main", "seamkit.agent", "seamkit.composition._build"]


@pytest.mark.parametrize("statement", ["import seamkit.agent.loop", "from seamkit.durability import approvals",
                                       "import seamkit.testing.models"])
def test_an_old_module_path_says_it_became_private(statement: str) -> None:
    done = subprocess.run([sys.executable, "-c", statement], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: No module named 'seamkit.") and "became private (seamkit." in last
    assert "docs/plugins/public-api.md" in last


def test_a_module_that_never_existed_is_a_plain_module_not_found() -> None:
    with pytest.raises(ModuleNotFoundError) as info:
        __import__("seamkit.no_such_module_ever")
    assert "became private" not in str(info.value)
