"""scripts/privatize.py on a small tree: what moves, which references change, which names that only
look like module paths stay, and that a second run changes nothing.

The fixture's host name is spelled ``PKG`` so that running the script on this repository does not
rewrite the old paths written here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = "seam" + "kit"

FILES = {
    f"core/{PKG}/__init__.py": "",
    f"core/{PKG}/_moved.py": "MOVED: dict[str, str] = {\n}\n",
    f"core/{PKG}/values.py": "class Scope:\n    pass\n",
    f"core/{PKG}/ports.py": "class LLMPort:\n    pass\n",
    f"core/{PKG}/agent/__init__.py": "",
    f"core/{PKG}/agent/loop.py": (
        "import logging\n\nfrom ..ports import LLMPort\nfrom . import helpers\n\n"
        f'log = logging.getLogger("{PKG}.agent")\nNOTES_KEY = "{PKG}.agent.notes"\n\n\n'
        "def run() -> LLMPort:\n    return helpers.make()\n"
    ),
    f"core/{PKG}/agent/helpers.py": "def make():\n    return None\n",
    f"core/{PKG}/workflows/__init__.py": (
        "from .validate import validate\n\n__all__ = ['validate']\n"
    ),
    f"core/{PKG}/workflows/validate.py": "def validate():\n    return []\n",
    "tests/test_x.py": (
        f"import {PKG}.agent.loop\nfrom {PKG}.workflows import validate\nfrom {PKG} import ports\n\n\n"
        "def test_x(monkeypatch):\n"
        f'    monkeypatch.setattr("{PKG}.agent.loop.run", None)\n'
        f'    key = "{PKG}.agent:r1:1"\n'
        f'    assert "{PKG}.agent.notes" != key\n'
        f'    assert {PKG}.workflows.validate() == []\n'
    ),
    "docs/x.md": f"See `core/{PKG}/agent/loop.py` and `{PKG}.ports`; the `{PKG}.agent` logger.\n",
    "pyproject.toml": f'[project.scripts]\n{PKG} = "{PKG}.agent.loop:run"\n',
}


def _tree(tmp_path: Path) -> Path:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    for cmd in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *cmd], cwd=tmp_path, check=True)
    return tmp_path


def _run(root: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "privatize.py"), str(root)], check=True,
                   capture_output=True, text=True)


def _snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def test_privatize_moves_rewrites_and_leaves_names(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    _run(root)
    core = root / "core" / PKG
    assert sorted(p.name for p in core.iterdir()) == [
        "__init__.py", "_agent", "_moved.py", "_ports.py", "values.py", "workflows"]
    assert sorted(p.name for p in (core / "workflows").iterdir()) == ["__init__.py", "_validate.py"]

    loop = (core / "_agent" / "loop.py").read_text()
    assert "from .._ports import LLMPort" in loop
    assert f'getLogger("{PKG}.agent")' in loop  # a logger name, not a path
    assert f'NOTES_KEY = "{PKG}.agent.notes"' in loop  # a constant's value: a name
    assert "from .validate import validate" not in (core / "workflows" / "__init__.py").read_text()

    test = (root / "tests" / "test_x.py").read_text()
    assert f"import {PKG}._agent.loop\n" in test
    assert f"from {PKG}.workflows import validate\n" in test  # the published function
    assert f"from {PKG} import _ports as ports\n" in test
    assert f'"{PKG}._agent.loop.run"' in test
    assert f'"{PKG}.agent:r1:1"' in test and f'"{PKG}.agent.notes"' in test  # keys, not paths
    assert f"{PKG}.workflows.validate() == []" in test

    assert (root / "docs" / "x.md").read_text() == (
        f"See `core/{PKG}/_agent/loop.py` and `{PKG}._ports`; the `{PKG}.agent` logger.\n")
    assert f'"{PKG}._agent.loop:run"' in (root / "pyproject.toml").read_text()
    moved = (core / "_moved.py").read_text()
    assert f'"{PKG}.agent": "{PKG}._agent"' in moved and f'"{PKG}.workflows.validate"' in moved


def test_a_second_run_changes_nothing(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    _run(root)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    before = _snapshot(root)
    _run(root)
    assert _snapshot(root) == before


def test_a_file_added_under_an_old_package_joins_the_moved_one(tmp_path: Path) -> None:
    """What a branch merged after the move adds under ``agent/`` moves into ``_agent/``."""
    root = _tree(tmp_path)
    _run(root)
    (root / "core" / PKG / "agent").mkdir()
    (root / "core" / PKG / "agent" / "extra.py").write_text("from ..ports import LLMPort\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    _run(root)
    assert not (root / "core" / PKG / "agent").exists()
    assert (root / "core" / PKG / "_agent" / "extra.py").read_text() == "from .._ports import LLMPort\n"
