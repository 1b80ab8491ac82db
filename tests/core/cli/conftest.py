"""Fixtures of the CLI tests (helpers live in ``cli_testlib``)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_testlib import BROKEN_HOOK, BROKEN_IMPORT, CLI, MISSPELLED_HOOK, TOOLS_IMPL, TOOLS_PLUGIN, make_dist


@pytest.fixture
def tools_dist(tmp_path: Path) -> Path:
    """A fake distribution ``cli-test-tools`` registering tools ``add``, ``boom``, ``unbuildable`` and
    the command ``hello``."""
    return make_dist(tmp_path / "site-tools", "cli-test-tools", "cli_test_tools", TOOLS_PLUGIN,
                     extra={"cli_test_tools_impl": TOOLS_IMPL})


@pytest.fixture
def broken_dists(tmp_path: Path) -> Path:
    """Three broken plugin distributions in one directory: import fails, hook raises, misspelled hook."""
    root = tmp_path / "site-broken"
    make_dist(root, "broken-import", "broken_import_plugin", BROKEN_IMPORT)
    make_dist(root, "broken-hook", "broken_hook_plugin", BROKEN_HOOK)
    make_dist(root, "misspelled-hook", "misspelled_hook_plugin", MISSPELLED_HOOK)
    return root


@pytest.fixture
def cli(tmp_path: Path, tools_dist: Path) -> CLI:
    return CLI([tools_dist], tmp_path)


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write
